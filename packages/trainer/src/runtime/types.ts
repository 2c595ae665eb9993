// The shapes the rank runtime and both training tiers share.
import type { Module } from '@flodl/nn';
import type { Device, Tensor } from '@flodl/tensor-native';
import type { Batch } from '../data/batch.js';
import type { BatchDataset, Dataset } from '../data/dataset.js';

/** Any model (whatever its forward's inputs and output). */
export type AnyModule = Module<any[], any>;

/** Any training dataset: per-sample (`get`) or batched (`getBatch`). */
export type TrainingDataset = Dataset | BatchDataset;

/**
 * Builds the model on `device`; called once per rank, after the run's seed was set. A model
 * built elsewhere (a factory that ignores `device`) is moved to `device` before the optimizer
 * is built.
 */
export type ModelFactory<M extends AnyModule = AnyModule> = (device: Device) => M;

/** Forward and loss of one batch (the framework owns backward, clipping and the optimizer step). */
export type TrainStep<M extends AnyModule = AnyModule> = (model: M, batch: Batch) => Tensor;

/**
 * A trained model's state: CPU tensors in `parameters()` / `buffers()` order (load it with
 * `loadTrainedState(model, state)`).
 */
export interface TrainedState {
  params: Tensor[];
  buffers: Tensor[];
}

/**
 * The cursor of one plan (an epoch, or one chunk of it under progressive dispatch): plain
 * values owned by the caller; the batches it hands out reference nothing of the runtime.
 */
export interface EpochState {
  /** The plan's epoch. */
  readonly epoch: number;
  /** Dataset indices of this rank's share, in training order (an `ExtendPartition` appends). */
  picks: number[];
  /** Batches handed out so far. */
  batchDone: number;
  /** Batches whose step was booked (`afterStep`): what a checkpoint counts as trained. */
  booked: number;
  /** Σ of the per-batch loss values. */
  totalLoss: number;
  computeMsTotal: number;
  dataStarveMsTotal: number;
  lastDataMs: number;
  /** `performance.now()` when the plan began. */
  readonly epochStart: number;
  /** A shutdown arrived while this plan ran (its report is skipped). */
  shutdown: boolean;
}
