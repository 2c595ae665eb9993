/** Smallest chunk in batches (floDl `min_chunk_batches`), save for the pool's last crumbs. */
export const MIN_CHUNK_BATCHES = 4;
/** An uncalibrated probe chunk is about 1/`PROBE_DIVISOR` of a rank's equal share of the epoch. */
export const PROBE_DIVISOR = 10;

/** Uncalibrated probe size: `max(minChunk, floor(N / (W · 10 · batch)))` batches. */
export function probeChunkBatches(
  totalSamples: number,
  worldSize: number,
  batchSize: number,
  minChunkBatches = MIN_CHUNK_BATCHES,
): number {
  return Math.max(minChunkBatches, Math.floor(totalSamples / (worldSize * PROBE_DIVISOR * batchSize)));
}

/** Inputs of {@link chunkBatches}. */
export interface ChunkSizingInputs {
  readonly rank: number;
  /** Unassigned batches left in the pool. */
  readonly remainingBatches: number;
  /** ElChe is calibrated or hinted (counts carry speed). */
  readonly calibrated: boolean;
  /** ElChe's per-rank batch counts (one window of each rank's schedule). */
  readonly counts: readonly number[];
  /** Smoothed ms/batch per rank (0 = unknown). */
  readonly msPerBatch: readonly number[];
  readonly live: readonly boolean[];
  /** Batches still to run in each rank's in-flight chunk. */
  readonly inFlightBatches: readonly number[];
  /** Dataset size N (for the probe size). */
  readonly totalSamples: number;
  readonly batchSize: number;
  readonly minChunkBatches: number;
  /**
   * `live`'s ranks and Σ over them of `max(minChunk, counts[r])`, when the caller already has
   * them (they depend on `live` and `counts` only; the dispatcher keeps them per decision, so
   * a chunk costs O(1) outside the tail).
   */
  readonly cohort?: { readonly liveRanks: readonly number[]; readonly roundBatches: number };
}

/** `inputs.cohort` as {@link chunkBatches} reads it, computed from `live` and `counts`. */
export function chunkCohort(
  live: readonly boolean[],
  counts: readonly number[],
  minChunkBatches: number,
): { liveRanks: number[]; roundBatches: number } {
  const liveRanks = live.flatMap((alive, index) => (alive ? [index] : []));
  const roundBatches = liveRanks.reduce(
    (sum, index) => sum + Math.max(minChunkBatches, counts[index] ?? 0),
    0,
  );
  return { liveRanks, roundBatches };
}

/**
 * Batches of `rank`'s next chunk:
 *
 * - uncalibrated: the probe size ({@link probeChunkBatches}), so ElChe gets early windows;
 * - calibrated: one window of the rank's schedule, `max(minChunk, counts[rank])`;
 * - tail balance: once that window would leave the pool less than one more round, the rank's
 *   share is what ends with the cohort, `ceil(T · rate_r)` with
 *   `T = (pool + others' in-flight) / Σ live rates`, and the chunk is half of it (all of it
 *   under two minimum chunks, or alone): the rank returns for the rest, so the shares follow
 *   the speeds the ranks show in the tail itself. Judged before the window is taken, not
 *   after: a window that leaves a few batches behind hands them to whichever rank asks next,
 *   and the others wait for it at the epoch's end;
 * - outside the tail, never below `minChunk` (unless the pool holds less), and a remainder
 *   smaller than `minChunk` is folded into this chunk rather than left as a crumb.
 */
export function chunkBatches(inputs: ChunkSizingInputs): number {
  const { rank, remainingBatches: remaining, minChunkBatches: minimum } = inputs;
  if (remaining <= 0) return 0;
  const { liveRanks, roundBatches: round } =
    inputs.cohort ?? chunkCohort(inputs.live, inputs.counts, minimum);
  let size: number;
  if (!inputs.calibrated) {
    size = probeChunkBatches(inputs.totalSamples, Math.max(1, liveRanks.length), inputs.batchSize, minimum);
  } else {
    size = Math.max(minimum, inputs.counts[rank] ?? 0);
    if (remaining - size < round) {
      // The tail share may exceed a window: a chunk's end is not a round's (rounds follow the
      // steps a rank reports), and capping it would leave the remainder to one rank again. Half
      // of it goes out now: the rank comes back for the rest, sized on how far the others got,
      // so a misjudged speed costs a few batches at the epoch's end, not half a share. No
      // minimum and no crumb folding here: a rank far slower than the others (a CPU beside a
      // GPU) gets its one or two batches, not four that the others would wait for.
      const share = tailShare(inputs, liveRanks);
      size = liveRanks.length > 1 && share >= 2 * minimum ? Math.ceil(share / 2) : share;
      return Math.min(size, remaining);
    }
  }
  size = Math.max(minimum, size);
  if (remaining - size < minimum) size = remaining;
  return Math.min(size, remaining);
}

/** The chunk that ends when the rest of the cohort is projected to end. */
function tailShare(inputs: ChunkSizingInputs, liveRanks: readonly number[]): number {
  // Measured speeds when every live rank has one, else the counts as relative rates.
  const measured = liveRanks.every((index) => (inputs.msPerBatch[index] ?? 0) > 0);
  const rateOf = (index: number) =>
    measured ? 1 / (inputs.msPerBatch[index] ?? 1) : Math.max(1, inputs.counts[index] ?? 0);
  const totalRate = liveRanks.reduce((sum, index) => sum + rateOf(index), 0);
  if (!liveRanks.includes(inputs.rank) || totalRate <= 0) return inputs.remainingBatches;
  let work = inputs.remainingBatches;
  for (const index of liveRanks) if (index !== inputs.rank) work += inputs.inFlightBatches[index] ?? 0;
  return Math.max(1, Math.ceil((work * rateOf(inputs.rank)) / totalRate));
}
