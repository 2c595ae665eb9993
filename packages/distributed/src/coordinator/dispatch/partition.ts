import type { ApplyPolicy } from '../config.js';

/**
 * Splits `total` units over live ranks by `weights` (floored), handing the remainder one by one
 * to the heaviest live ranks (ties to the lower index). Dead ranks get 0.
 */
export function weightedShares(
  total: number,
  weights: readonly number[],
  live: readonly boolean[],
): number[] {
  const shares = new Array<number>(live.length).fill(0);
  const ranks = live.flatMap((alive, rank) => (alive ? [rank] : []));
  if (ranks.length === 0 || total <= 0) return shares;
  const positive = ranks.map((rank) => Math.max(0, weights[rank] ?? 0));
  const sum = positive.reduce((accumulated, weight) => accumulated + weight, 0);
  const normalised = sum > 0 ? positive.map((weight) => weight / sum) : positive.map(() => 1 / ranks.length);
  let assigned = 0;
  ranks.forEach((rank, index) => {
    const share = Math.floor((normalised[index] ?? 0) * total);
    shares[rank] = share;
    assigned += share;
  });
  const order = ranks
    .map((rank, index) => ({ rank, weight: normalised[index] ?? 0 }))
    .sort((left, right) => right.weight - left.weight || left.rank - right.rank);
  for (let index = 0; assigned < total; index++, assigned++) {
    const target = order[index % order.length]!.rank;
    shares[target] = (shares[target] ?? 0) + 1;
  }
  return shares;
}

/** Equal split over live ranks; the remainder goes to the lowest live ranks. */
export function equalShares(total: number, live: readonly boolean[]): number[] {
  return weightedShares(
    total,
    live.map(() => 1),
    live,
  );
}

/**
 * Throughput-proportional split: weights `1 / ms` (a rank without a reading weighs the mean
 * throughput of those with one), remainder to the fastest (floDl `throughput_sizes`).
 */
export function throughputShares(
  total: number,
  msPerBatch: readonly number[],
  live: readonly boolean[],
): number[] {
  const rates = msPerBatch.map((ms) => (ms > 0 ? 1 / ms : 0));
  const known = rates.filter((rate, rank) => rate > 0 && live[rank]);
  const fallback = known.length > 0 ? known.reduce((sum, rate) => sum + rate, 0) / known.length : 1;
  return weightedShares(
    total,
    live.map((_, rank) => ((rates[rank] ?? 0) > 0 ? (rates[rank] ?? 0) : fallback)),
    live,
  );
}

/** Inputs of {@link partitionBatches}. */
export interface PartitionInputs {
  readonly policy: ApplyPolicy;
  /** Batches to split: `floor(N / batch)`. */
  readonly totalBatches: number;
  readonly live: readonly boolean[];
  /** ElChe is calibrated (speeds measured). */
  readonly calibrated: boolean;
  /** ElChe's current counts (a speed hint shows up here before calibration). */
  readonly counts: readonly number[];
  /** ElChe's smoothed ms/batch per rank (0 = unknown). */
  readonly msPerBatch: readonly number[];
  /** Explicit ratios from the config, if any. */
  readonly partitionRatios: readonly number[] | undefined;
}

/**
 * Per-rank partition of an epoch, in batches (floDl `compute_partition_sizes`): explicit
 * `partitionRatios` first (normalised); equal under Sync or before calibration;
 * throughput-proportional once calibrated (remainder to the fastest), or proportional to the
 * hinted counts before the first measurement.
 */
export function partitionBatches(inputs: PartitionInputs): number[] {
  const { totalBatches, live } = inputs;
  if (inputs.partitionRatios) return weightedShares(totalBatches, inputs.partitionRatios, live);
  if (inputs.policy === 'Sync') return equalShares(totalBatches, live);
  if (inputs.calibrated) return throughputShares(totalBatches, inputs.msPerBatch, live);
  const hinted = inputs.counts.some(
    (count, rank) => live[rank] && count !== inputs.counts[live.indexOf(true)],
  );
  return hinted ? weightedShares(totalBatches, inputs.counts, live) : equalShares(totalBatches, live);
}
