// What a sampler is, and the epoch plan that distributed training hands each rank.

import type { EpochPlan } from '@flodl/distributed';
import { FlodlError } from '@flodl/tensor-native';
import { epochPermutation, type Seed } from '../random.js';
import { checkNonNegativeInteger, checkPositiveInteger } from '../validate.js';

/**
 * Chooses which dataset indices an epoch visits, and in what order. `indices(epoch)` must be a
 * pure function of `epoch`: distributed ranks and staging caches rebuild the order from it.
 *
 * PyTorch: `torch.utils.data.Sampler` (with `set_epoch` folded into the argument).
 */
export interface Sampler {
  /** How many indices each epoch yields. */
  readonly length: number;
  /** The epoch's indices, each in [0, dataset length). */
  indices(epoch: number): Int32Array;
}

/**
 * A slice of one epoch's sample permutation (what the coordinator hands a rank): defined once,
 * by `@flodl/distributed`'s wire protocol, and re-exported here for the data pipeline.
 */
export type { EpochPlan } from '@flodl/distributed';

/**
 * The dataset indices of an {@link EpochPlan}: the plan's slice of
 * `epochPermutation(datasetLength, seed, plan.epoch)`.
 *
 * @example partitionIndices({ epoch: 0, partitionOffset: 0, partitionSize: 5 }, 10, 42) // [7, 4, 1, 9, 8]
 * @throws FlodlError ERR_INVALID_ARGUMENT when the slice does not fit in the dataset
 */
export function partitionIndices(plan: EpochPlan, datasetLength: number, seed: Seed = 42): Int32Array {
  checkPlanFits('partitionIndices', plan.partitionOffset, plan.partitionSize, datasetLength);
  checkNonNegativeInteger('partitionIndices', 'plan.epoch', plan.epoch);
  return epochPermutation(datasetLength, seed, plan.epoch).slice(
    plan.partitionOffset,
    plan.partitionOffset + plan.partitionSize,
  );
}

/** @internal Checks that `[offset, offset + size)` lies inside `[0, datasetLength)`. */
export function checkPlanFits(op: string, offset: number, size: number, datasetLength: number): void {
  checkPositiveInteger(op, 'datasetLength', datasetLength);
  checkNonNegativeInteger(op, 'offset', offset);
  checkNonNegativeInteger(op, 'size', size);
  if (offset + size > datasetLength) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the partition runs past the end of the dataset', {
      op,
      expected: `offset + size <= ${datasetLength}`,
      got: `offset ${offset} + size ${size} = ${offset + size}`,
    });
  }
}

/** @internal Validates the epoch argument every sampler takes. */
export function checkEpoch(op: string, epoch: unknown): number {
  return checkNonNegativeInteger(op, 'epoch', epoch);
}
