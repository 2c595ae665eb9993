import { epochPermutation, type Seed } from '../random.js';
import { checkOptions, checkPositiveInteger } from '../validate.js';
import { checkEpoch, type Sampler } from './sampler.js';

/** Options of {@link RandomSampler}. */
export interface RandomSamplerOptions {
  /** Seed of every epoch's permutation. Default 42 (floDl's default). */
  seed?: Seed;
}

/**
 * A fresh permutation of `[0, length)` each epoch, a pure function of `(seed, epoch)`:
 * `epochPermutation(length, seed, epoch)` (xoshiro128** seeded through SplitMix64, then
 * Fisher-Yates; see `random.ts`).
 *
 * @example new RandomSampler(10, { seed: 42 }).indices(0) // Int32Array [7, 4, 1, 9, 8, 0, 5, 6, 2, 3]
 * PyTorch: `torch.utils.data.RandomSampler(data_source, generator=g)` with `g` reseeded per epoch.
 */
export class RandomSampler implements Sampler {
  readonly length: number;
  readonly seed: Seed;

  constructor(length: number, options: RandomSamplerOptions = {}) {
    checkOptions('RandomSampler', options, ['seed']);
    this.length = checkPositiveInteger('RandomSampler', 'length', length);
    this.seed = options.seed ?? 42;
    epochPermutation(1, this.seed, 0); // validates the seed now rather than at the first epoch
  }

  indices(epoch: number): Int32Array {
    return epochPermutation(this.length, this.seed, checkEpoch('RandomSampler.indices', epoch));
  }
}
