import type { RankView } from './format.js';

/** The per-rank fields of an epoch's aggregated metrics (`EpochMetrics` of `@flodl/distributed`). */
export interface PerRankEpochMetrics {
  /** Fraction of the epoch's batches each rank ran. */
  perRankBatchShare: readonly number[];
  /** Samples per ms, per rank. */
  perRankThroughput: readonly number[];
  /** Samples each rank processed. */
  perRankSamples: readonly number[];
}

/**
 * The cluster line's ranks from an epoch's aggregated metrics: share, samples/s, and `down` for
 * a rank that processed nothing (dead, or not started).
 *
 * @example
 * ```ts
 * progress.cluster(rankViews(notice.metrics)); // ranks 0: 63.8% 1649/s · 1: 36.2% 896/s
 * ```
 */
export function rankViews(metrics: PerRankEpochMetrics): RankView[] {
  return metrics.perRankBatchShare.map((share, rank) => ({
    rank,
    share,
    samplesPerSec: (metrics.perRankThroughput[rank] ?? 0) * 1000,
    ...((metrics.perRankSamples[rank] ?? 0) === 0 ? { down: true } : {}),
  }));
}
