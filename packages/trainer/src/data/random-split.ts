// Splitting a dataset into random, non-overlapping subsets.
import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import type { AnyDataset } from './dataset-reads.js';
import { Random, type Seed } from './random.js';
import { checkSourceDataset, Subset } from './subset.js';
import { checkOptions } from './validate.js';

/** Options of {@link randomSplit}. */
export interface RandomSplitOptions {
  /** Seed of the permutation (the data pipeline's own generator, see {@link Random}). Default 42. */
  seed?: Seed;
}

/** Python's `math.isclose(a, b)` with its default relative tolerance. */
function isClose(a: number, b: number): boolean {
  return Math.abs(a - b) <= 1e-9 * Math.max(Math.abs(a), Math.abs(b));
}

/**
 * @internal The length of each split, as PyTorch computes them: fractions that sum to 1 (within
 * 1e-9, and not above it) become `floor(length · fraction)` each, the remainder then handed out
 * one by one from the first split on (round-robin); otherwise `lengths` are counts that must
 * sum to the dataset's length.
 */
export function splitLengths(op: string, total: number, lengths: unknown): number[] {
  if (!Array.isArray(lengths) || lengths.length === 0 || !lengths.every((item) => typeof item === 'number')) {
    throw invalidArgument(
      op,
      'lengths',
      'a non-empty array of lengths or of fractions summing to 1',
      lengths,
    );
  }
  const values = lengths as number[];
  const sum = values.reduce((running, value) => running + value, 0);
  if (isClose(sum, 1) && sum <= 1) {
    values.forEach((fraction, k) => {
      if (!(fraction >= 0 && fraction <= 1)) {
        throw invalidArgument(op, `lengths[${k}]`, 'a fraction in [0, 1] (the fractions sum to 1)', fraction);
      }
    });
    const counts = values.map((fraction) => Math.floor(total * fraction));
    const remainder = total - counts.reduce((running, count) => running + count, 0);
    for (let k = 0; k < remainder; k++) counts[k % counts.length]! += 1;
    return counts;
  }
  values.forEach((length, k) => {
    if (!Number.isSafeInteger(length) || length < 0) {
      throw invalidArgument(
        op,
        `lengths[${k}]`,
        'an integer >= 0 (or every length a fraction, the fractions summing to 1)',
        length,
      );
    }
  });
  if (sum !== total) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the lengths do not sum to the length of the dataset', {
      op,
      expected: `lengths summing to ${total} (or fractions summing to 1)`,
      got: `[${values.join(', ')}], summing to ${sum}`,
    });
  }
  return values;
}

/**
 * Splits a dataset into non-overlapping random subsets of the given lengths, or of the given
 * fractions of its length: `floor(length · fraction)` each, the remainder handed out one by one
 * from the first split on, as PyTorch >= 1.13 does (`[0.3, 0.3, 0.4]` of 11 samples gives 4, 3
 * and 4). A split of length 0 is an empty Subset.
 *
 * The permutation is `Random.fromSeed(seed).shuffle([0, 1, …, length − 1])`, the data
 * pipeline's own generator, so it is the same in every process, machine and Node version; it is
 * not PyTorch's `randperm`, so the same seed picks other samples than `torch.Generator` would.
 * Split k takes the next `lengths[k]` positions of the permutation.
 *
 * @param dataset the dataset to split (a Dataset or a BatchDataset)
 * @param lengths each split's length, summing to `dataset.length`; or fractions in [0, 1]
 *   summing to 1
 * @param options {@link RandomSplitOptions}
 * @returns one {@link Subset} per length, in order
 * @throws FlodlError ERR_INVALID_ARGUMENT for something that is not a dataset, lengths that are
 *   not integers >= 0 summing to the dataset's length, a fraction outside [0, 1], a bad seed or an
 *   unknown option
 * @example
 * ```ts
 * const [train, validation] = randomSplit(data, [0.9, 0.1], { seed: 7 });
 * ```
 * PyTorch: `torch.utils.data.random_split(dataset, lengths, generator=torch.Generator().manual_seed(seed))`
 * (the same lengths; another permutation).
 */
export function randomSplit(
  dataset: AnyDataset,
  lengths: readonly number[],
  options: RandomSplitOptions = {},
): Subset[] {
  const op = 'randomSplit';
  checkOptions(op, options, ['seed']);
  checkSourceDataset(op, 'dataset', dataset);
  const counts = splitLengths(op, dataset.length, lengths);
  const random = Random.fromSeed(options.seed ?? 42);
  const order = random.shuffle(Array.from({ length: dataset.length }, (_, k) => k));
  let offset = 0;
  return counts.map((count) => {
    const subset = new Subset(dataset, order.slice(offset, offset + count));
    offset += count;
    return subset;
  });
}
