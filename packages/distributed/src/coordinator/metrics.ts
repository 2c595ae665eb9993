import type { EpochMetrics, Metrics } from '../wire/messages.js';

/**
 * One rank's report for one chunk (progressive) or one epoch partition: the wire's `Metrics`
 * with the rank of its connection. Durations are this chunk's own (0.7.0 sums them per rank;
 * earlier versions took the max).
 */
export type RankMetrics = { readonly rank: number } & Readonly<Omit<Metrics, 'type'>>;

/** Options of {@link aggregateEpochMetrics}. */
export interface AggregateOptions {
  readonly worldSize: number;
  /** ElChe's recent batch share (equal shares when absent or degenerate). */
  readonly batchShare?: readonly number[];
  readonly deviceIndices?: readonly number[];
  /** Overrides `epochMs` (progressive dispatch: the pool's elapsed wall time). */
  readonly epochMs?: number;
}

/**
 * Folds every report of one epoch into {@link EpochMetrics}: per rank first (batches, samples,
 * loss·batches, Σ durations, Σ scalar sums and counts), then across ranks (batch-weighted).
 */
export function aggregateEpochMetrics(
  epoch: number,
  reports: readonly RankMetrics[],
  options: AggregateOptions,
): EpochMetrics {
  const { worldSize } = options;
  const zeros = () => new Array<number>(worldSize).fill(0);
  const batches = zeros();
  const samples = zeros();
  const lossSum = zeros();
  const timeMs = zeros();
  const shareCompleteMs = zeros();
  const computeOnlyMs = zeros();
  const dataStarveMs = zeros();
  const rankScalars = Array.from(
    { length: worldSize },
    () => new Map<string, { sum: number; count: number }>(),
  );
  for (const report of reports) {
    const rank = report.rank;
    if (rank < 0 || rank >= worldSize) continue;
    batches[rank] = (batches[rank] ?? 0) + report.batchesProcessed;
    samples[rank] = (samples[rank] ?? 0) + report.samplesProcessed;
    if (Number.isFinite(report.avgLoss))
      lossSum[rank] = (lossSum[rank] ?? 0) + report.avgLoss * report.batchesProcessed;
    timeMs[rank] = (timeMs[rank] ?? 0) + report.epochMs;
    shareCompleteMs[rank] = (shareCompleteMs[rank] ?? 0) + report.shareCompleteMs;
    computeOnlyMs[rank] = (computeOnlyMs[rank] ?? 0) + report.computeOnlyMs;
    dataStarveMs[rank] = (dataStarveMs[rank] ?? 0) + report.dataStarveMs;
    for (const [name, accumulator] of Object.entries(report.scalars)) {
      const entry = rankScalars[rank]!.get(name) ?? { sum: 0, count: 0 };
      entry.sum += accumulator.sum;
      entry.count += accumulator.count;
      rankScalars[rank]!.set(name, entry);
    }
  }
  const totalBatches = batches.reduce((sum, count) => sum + count, 0);
  const avgLoss = totalBatches > 0 ? lossSum.reduce((sum, value) => sum + value, 0) / totalBatches : 0;
  const perRank = rankScalars.map((scalars) => {
    const means: Record<string, number> = {};
    for (const [name, { sum, count }] of scalars) means[name] = count > 0 ? sum / count : 0;
    return means;
  });
  const weighted = new Map<string, { value: number; weight: number }>();
  rankScalars.forEach((scalars, rank) => {
    const weight = batches[rank] ?? 0;
    for (const [name, { sum, count }] of scalars) {
      if (count === 0) continue;
      const entry = weighted.get(name) ?? { value: 0, weight: 0 };
      entry.value += (sum / count) * weight;
      entry.weight += weight;
      weighted.set(name, entry);
    }
  });
  const scalars: Record<string, number> = {};
  for (const [name, { value, weight }] of weighted) scalars[name] = weight > 0 ? value / weight : 0;
  const perRankThroughput = samples.map((count, rank) => {
    const denominator = (shareCompleteMs[rank] ?? 0) > 0 ? (shareCompleteMs[rank] ?? 0) : (timeMs[rank] ?? 0);
    return denominator > 0 ? count / denominator : 0;
  });
  const share = options.batchShare;
  const shareSum = share?.reduce((sum, value) => sum + value, 0) ?? 0;
  const perRankBatchShare =
    share && share.length === worldSize && shareSum > 0
      ? [...share]
      : new Array<number>(worldSize).fill(1 / worldSize);
  return {
    epoch,
    avgLoss,
    epochMs: options.epochMs ?? Math.max(0, ...timeMs),
    scalars,
    perRank,
    perRankThroughput,
    perRankBatchShare,
    perRankShareCompleteMs: shareCompleteMs,
    perRankComputeOnlyMs: computeOnlyMs,
    perRankDataStarveMs: dataStarveMs,
    deviceIndices: options.deviceIndices
      ? [...options.deviceIndices]
      : Array.from({ length: worldSize }, (_, rank) => rank),
    perRankLoss: batches.map((count, rank) => (count > 0 ? (lossSum[rank] ?? 0) / count : null)),
    perRankSamples: samples,
  };
}

/** Holds reports per epoch until the epoch is aggregated. */
export class EpochMetricsCollector {
  #reports = new Map<number, RankMetrics[]>();

  add(report: RankMetrics): void {
    const list = this.#reports.get(report.epoch) ?? [];
    list.push(report);
    this.#reports.set(report.epoch, list);
  }

  /** Removes and returns `epoch`'s reports. */
  take(epoch: number): RankMetrics[] {
    const list = this.#reports.get(epoch) ?? [];
    this.#reports.delete(epoch);
    return list;
  }
}

/**
 * The report a dead rank never sent for the part of its partition the coordinator credits it
 * with (it ran those batches; its rounds carried them): their samples, no batch, so the epoch
 * counts every sample once and its mean loss stays the reported batches'.
 */
export function creditedReport(rank: number, epoch: number, samples: number): RankMetrics {
  return {
    rank,
    epoch,
    avgLoss: Number.NaN,
    batchesProcessed: 0,
    epochMs: 0,
    samplesProcessed: samples,
    shareCompleteMs: 0,
    computeOnlyMs: 0,
    dataStarveMs: 0,
    scalars: {},
  };
}
