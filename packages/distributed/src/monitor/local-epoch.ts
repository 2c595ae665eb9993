import { checkNumberInRange, checkOptions } from '@flodl/tensor-native';
import type { EpochMetrics } from '../wire/messages.js';

/** What a single-process run knows of one epoch (see {@link localEpochMetrics}). */
export interface LocalEpoch {
  /** 0-based epoch. */
  epoch: number;
  /** Mean training loss. */
  avgLoss: number;
  /** Wall time of the epoch, ms. */
  epochMs: number;
  /** Samples trained. */
  samples: number;
  /** Means of recorded scalars (e.g. `accuracy`). Default none. */
  scalars?: Record<string, number>;
  /** Time spent waiting on data, ms. Default 0. */
  dataStarveMs?: number;
  /** The device index trained on. Default 0. */
  deviceIndex?: number;
}

const FIELDS = ['epoch', 'avgLoss', 'epochMs', 'samples', 'scalars', 'dataStarveMs', 'deviceIndex'] as const;

/**
 * A single-process run's epoch as the cluster's `EpochMetrics` (one rank with all of the work),
 * so that a trainer on one device records `{ kind: 'epoch', metrics }` and the dashboard, the
 * report and the CSV read it as they read a cluster's.
 *
 * @throws `ERR_INVALID_ARGUMENT` for an unknown field, a negative time or sample count.
 * @example
 * ```ts
 * recorder.record({ kind: 'epoch', metrics: localEpochMetrics({ epoch: 0, avgLoss: 0.52, epochMs: 13_000, samples: 60_000 }) });
 * ```
 */
export function localEpochMetrics(epoch: LocalEpoch): EpochMetrics {
  const {
    scalars = {},
    dataStarveMs = 0,
    deviceIndex = 0,
  } = checkOptions('localEpochMetrics', epoch, FIELDS);
  checkNumberInRange('localEpochMetrics', 'epochMs', epoch.epochMs, 0);
  checkNumberInRange('localEpochMetrics', 'samples', epoch.samples, 0);
  return {
    epoch: epoch.epoch,
    avgLoss: epoch.avgLoss,
    epochMs: epoch.epochMs,
    scalars: { ...scalars },
    perRank: [{ ...scalars }],
    perRankThroughput: [epoch.epochMs > 0 ? epoch.samples / epoch.epochMs : 0],
    perRankBatchShare: [1],
    perRankShareCompleteMs: [epoch.epochMs],
    perRankComputeOnlyMs: [Math.max(0, epoch.epochMs - dataStarveMs)],
    perRankDataStarveMs: [dataStarveMs],
    deviceIndices: [deviceIndex],
    perRankLoss: [epoch.avgLoss],
    perRankSamples: [epoch.samples],
  };
}
