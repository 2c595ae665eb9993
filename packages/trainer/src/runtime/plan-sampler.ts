// The DataLoader sampler that hands out the range of a plan the runtime asks for.
import { FlodlError } from '@flodl/tensor-native';
import type { Sampler } from '../data/samplers/sampler.js';

/**
 * @internal A sampler whose indices are set before each pass: the rank runtime points it at
 * the batches of its current plan (the loader checks them against the dataset).
 */
export class PlanSampler implements Sampler {
  #indices: Int32Array | undefined;

  constructor(readonly length: number) {}

  /** Points the next `indices()` call at `indices`. */
  set(indices: Int32Array): void {
    this.#indices = indices;
  }

  indices(_epoch: number): Int32Array {
    const indices = this.#indices;
    if (indices === undefined) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'no plan range was set', { op: 'PlanSampler.indices' });
    }
    this.#indices = undefined;
    return indices;
  }
}
