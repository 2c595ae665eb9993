// The data side of a rank's plans: the plan's slice of the epoch permutation, batched and
// prefetched by the DataLoader, one pass per run of batches known at the time.

import type { EpochPlan } from '@flodl/distributed';
import { type Device, FlodlError } from '@flodl/tensor-native';
import type { Batch } from '../data/batch.js';
import { DataLoader } from '../data/loader/data-loader.js';
import { epochPermutation } from '../data/random.js';
import { PlanSampler } from './plan-sampler.js';
import type { EpochState, TrainingDataset } from './types.js';

/** Epoch permutations a reader keeps: the epoch in flight and the one streamed ahead. */
const PERMUTATIONS_KEPT = 2;

/** Options of {@link PlanReader}. */
export interface PlanReaderOptions {
  batchSize: number;
  seed: number;
  device: Device;
  prefetch: number;
  resident: boolean | 'auto';
  /** The name errors carry (`RankRuntime.beginEpoch`). */
  op: string;
}

/** @internal Hands out the batches of the open plan; an `ExtendPartition` appends to it. */
export class PlanReader {
  readonly #options: PlanReaderOptions;
  readonly #total: number;
  readonly #sampler: PlanSampler;
  readonly #loader: DataLoader;
  #open: EpochState | undefined;
  #iterator: Iterator<Batch> | undefined;
  #runEnd = 0;
  /**
   * The permutations of the last epochs planned, newest last: a cluster's plans come in chunks
   * (several an epoch, up to one epoch ahead), and each would shuffle the whole dataset again.
   */
  #permutations: { epoch: number; order: Int32Array }[] = [];

  constructor(dataset: TrainingDataset, options: PlanReaderOptions) {
    this.#options = options;
    this.#total = dataset.length;
    this.#sampler = new PlanSampler(dataset.length);
    this.#loader = new DataLoader(dataset, {
      batchSize: options.batchSize,
      sampler: this.#sampler,
      device: options.device,
      prefetch: options.prefetch,
      resident: options.resident,
    });
  }

  /** A fresh state for `plan` (not open yet: see `open`). */
  stateOf(plan: EpochPlan): EpochState {
    this.close();
    return {
      epoch: plan.epoch,
      picks: this.#picks(plan.epoch, plan.partitionOffset, plan.partitionSize),
      batchDone: 0,
      booked: 0,
      totalLoss: 0,
      computeMsTotal: 0,
      dataStarveMsTotal: 0,
      lastDataMs: 0,
      epochStart: performance.now(),
      shutdown: false,
    };
  }

  /** Makes `state` the open plan. */
  open(state: EpochState): void {
    this.#open = state;
  }

  /** Whether `state` is the open plan. */
  isOpen(state: EpochState): boolean {
    return this.#open === state;
  }

  /** The next batch of `state` (owned by the caller), or `undefined` at its end. */
  next(state: EpochState): Batch | undefined {
    const { batchSize } = this.#options;
    const total = Math.floor(state.picks.length / batchSize);
    if (state.batchDone >= total) return undefined;
    if (this.#iterator === undefined || this.#open !== state || state.batchDone >= this.#runEnd) {
      // A fresh pass over the batches known now (an ExtendPartition adds to them later).
      this.close();
      this.#open = state;
      const from = state.batchDone * batchSize;
      const indices = new Int32Array(total * batchSize - from);
      const { picks } = state;
      for (let index = 0; index < indices.length; index++) indices[index] = picks[from + index] as number;
      this.#sampler.set(indices);
      this.#iterator = this.#loader.epoch(state.epoch)[Symbol.iterator]();
      this.#runEnd = total;
    }
    const started = performance.now();
    const next = this.#iterator.next();
    if (next.done) {
      this.close();
      return undefined;
    }
    state.lastDataMs = performance.now() - started;
    state.dataStarveMsTotal += state.lastDataMs;
    state.batchDone += 1;
    return next.value;
  }

  /** Appends `ExtendPartition` picks to the open plan of `epoch`; false when none is open. */
  extend(epoch: number, offset: number, size: number): boolean {
    const open = this.#open;
    if (!open || open.epoch !== epoch || open.shutdown) return false;
    open.picks.push(...this.#picks(epoch, offset, size));
    return true;
  }

  /** Ends the pass in flight (what the loader prepared ahead is freed). */
  close(): void {
    const iterator = this.#iterator;
    this.#iterator = undefined;
    iterator?.return?.();
  }

  /** Frees the loader. */
  dispose(): void {
    this.close();
    this.#permutations = [];
    this.#loader.dispose();
  }

  #picks(epoch: number, offset: number, size: number): number[] {
    const total = this.#total;
    if (
      !Number.isInteger(offset) ||
      !Number.isInteger(size) ||
      offset < 0 ||
      size < 0 ||
      offset + size > total
    ) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'the plan runs past the end of the dataset', {
        op: this.#options.op,
        expected: `0 <= offset, offset + size <= ${total}`,
        got: `offset ${offset}, size ${size}`,
      });
    }
    return Array.from(this.#permutation(epoch).subarray(offset, offset + size));
  }

  /** The epoch's permutation of the dataset, shuffled once for the two newest epochs asked for. */
  #permutation(epoch: number): Int32Array {
    const cached = this.#permutations.find((entry) => entry.epoch === epoch);
    if (cached) return cached.order;
    const order = epochPermutation(this.#total, this.#options.seed, epoch);
    this.#permutations.push({ epoch, order });
    if (this.#permutations.length > PERMUTATIONS_KEPT) this.#permutations.shift();
    return order;
  }
}
