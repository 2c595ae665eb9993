// The options and callbacks of the rank runtime, and what it reports.

import type { DistributedSession } from '@flodl/distributed';
import type { Metrics } from '@flodl/distributed/wire';
import type { LRScheduler, Optimizer } from '@flodl/nn';
import type { Device } from '@flodl/tensor-native';
import type { AnyModule, TrainingDataset } from './types.js';

/** What the elected rank's epoch callback can reach. */
export interface EpochContext<M extends AnyModule = AnyModule> {
  readonly model: M;
  readonly optimizer: Optimizer;
  readonly rank: number;
  readonly worldSize: number;
  /** Sets every parameter group's learning rate. */
  setLr(lr: number): void;
}

/** The user callbacks a rank services (the elected rank only, in a cluster). */
export interface RuntimeCallbacks<M extends AnyModule = AnyModule> {
  /** Evaluates the model (run in eval mode, without grad); returns the metric. */
  evalFn?: (model: M, dataset: TrainingDataset | undefined) => number | Promise<number>;
  evalDataset?: TrainingDataset;
  /** Saves a checkpoint of averaging round (or epoch) `version`. */
  checkpointFn?: (version: number, model: M) => void | Promise<void>;
  /** Runs before each epoch (0-based). */
  epochFn?: (epoch: number, context: EpochContext<M>) => void | Promise<void>;
}

/** Options of {@link RankRuntime}. */
export interface RankRuntimeOptions<M extends AnyModule = AnyModule> {
  model: M;
  optimizer: Optimizer;
  dataset: TrainingDataset;
  batchSize: number;
  /** Shuffle seed: plan `(epoch, offset, size)` trains `epochPermutation(N, seed, epoch)[offset, offset + size)`. */
  seed: number;
  device: Device;
  /** Default 0 of 1. */
  rank?: number;
  worldSize?: number;
  /** Clip the global gradient norm to this before each step. Default none. */
  maxGradNorm?: number;
  /** Sets the learning rate of each step from `lrAt(globalStep + stepsSinceAvg)`. Default none. */
  scheduler?: LRScheduler;
  /** Multiplies the learning rate (Goyal scaling). Default 1. */
  lrScale?: number;
  /** Loader prefetch depth. Default 2. */
  prefetch?: number;
  /** Loader resident mode. Default `'auto'`. */
  resident?: boolean | 'auto';
  /** Capture the step (forward to update) into a CUDA graph and replay it per batch. Default off. */
  cudaGraph?: boolean;
  callbacks?: RuntimeCallbacks<M>;
  /** Hears every step after it is booked (a progress display, a metrics log). Default none. */
  onStep?: (step: RuntimeStep) => void;
  /**
   * The run's `lookaheadBatches` (cluster ranks): the coordinator hands this rank its next chunk
   * once its chunk has this many batches left, so the step reports the report hold keeps back
   * go out at that step, for the coordinator to hear of it in time. Default 0 (none held back
   * for it).
   */
  lookaheadBatches?: number;
  /** The rank's link to the coordinator; absent on a single device. */
  session?: DistributedSession;
  /** Stem of the run's checkpoint bundles (`saveBundle`). Default none. */
  savePath?: string;
  /** Periodic bundles kept under `savePath` (older ones are removed). Default 3. */
  keepLast?: number;
}

/** A booked step, as {@link RankRuntimeOptions.onStep} hears it. */
export interface RuntimeStep {
  epoch: number;
  /** Batches done in this plan, this one included. */
  batch: number;
  /** Batches in this plan. */
  batches: number;
  loss: number;
  /** The step's compute time, ms. */
  ms: number;
  /** Samples per batch. */
  batchSize: number;
  /** The rank's optimizer steps so far. */
  localStep: number;
}

/** One chunk report of a single-device run, as the coordinator would have received it. */
export type ChunkReport = { rank: number } & Omit<Metrics, 'type'>;
