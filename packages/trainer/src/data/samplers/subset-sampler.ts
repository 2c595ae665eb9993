import { epochPermutation, type Seed } from '../random.js';
import { checkBoolean, checkOptions } from '../validate.js';
import { checkEpoch, checkPlanFits, type EpochPlan, type Sampler } from './sampler.js';

/** Options of {@link SubsetSampler}. */
export interface SubsetSamplerOptions {
  /** The dataset's length: the permutation runs over all of it. */
  datasetLength: number;
  /** Where this subset starts in the epoch's order. */
  offset: number;
  /** How many indices it takes. */
  size: number;
  /** Seed of the global permutation. Default 42. */
  seed?: Seed;
  /** Slice the epoch's permutation (true) or `0..datasetLength-1` in order (false). Default true. */
  shuffle?: boolean;
}

/**
 * The slice `[offset, offset + size)` of each epoch's global permutation of the whole
 * dataset: the indices one distributed rank trains on (an {@link EpochPlan} with fixed offset
 * and size). Ranks with consecutive, non-overlapping slices together visit every sample once.
 *
 * @example
 * ```ts
 * const rank0 = new SubsetSampler({ datasetLength: 10, offset: 0, size: 5 });
 * const rank1 = new SubsetSampler({ datasetLength: 10, offset: 5, size: 5 });
 * rank0.indices(0); // [7, 4, 1, 9, 8]; rank1.indices(0): [0, 5, 6, 2, 3]
 * ```
 * @throws FlodlError ERR_INVALID_ARGUMENT when the slice does not fit in the dataset
 * PyTorch: close to `torch.utils.data.DistributedSampler` (which strides instead of slicing).
 */
export class SubsetSampler implements Sampler {
  readonly length: number;
  readonly datasetLength: number;
  readonly offset: number;
  readonly seed: Seed;
  readonly shuffle: boolean;

  constructor(options: SubsetSamplerOptions) {
    const op = 'SubsetSampler';
    checkOptions(op, options, ['datasetLength', 'offset', 'size', 'seed', 'shuffle']);
    checkPlanFits(op, options?.offset, options?.size, options?.datasetLength);
    this.datasetLength = options.datasetLength;
    this.offset = options.offset;
    this.length = options.size;
    this.seed = options.seed ?? 42;
    this.shuffle = checkBoolean(op, 'shuffle', options.shuffle, true);
    epochPermutation(1, this.seed, 0); // validates the seed now
  }

  /** A sampler for a plan's slice (fixed for every epoch; the plan's epoch is not kept). */
  static fromPlan(plan: EpochPlan, datasetLength: number, seed: Seed = 42): SubsetSampler {
    return new SubsetSampler({
      datasetLength,
      offset: plan.partitionOffset,
      size: plan.partitionSize,
      seed,
    });
  }

  indices(epoch: number): Int32Array {
    checkEpoch('SubsetSampler.indices', epoch);
    const end = this.offset + this.length;
    if (!this.shuffle) return Int32Array.from({ length: this.length }, (_, k) => this.offset + k);
    return epochPermutation(this.datasetLength, this.seed, epoch).slice(this.offset, end);
  }
}
