// Turning per-sample tensors into batch tensors.
import { FlodlError, invalidArgument, stack, Tensor } from '@flodl/tensor-native';
import type { Sample } from './dataset.js';

/**
 * Builds a batch's tensors from samples. `indices[k]` is the dataset index of `samples[k]`
 * (for messages and index-keyed logic). The loader disposes the samples afterwards, except
 * tensors the collate returns as they are.
 */
export type Collate<T extends Sample = Sample> = (
  samples: readonly T[],
  indices: readonly number[],
) => Tensor[];

/**
 * Stacks samples position by position: output `p` is `stack([s0[p], s1[p], …])`, so a sample
 * of shapes `(*)` becomes a batch of `(B, *)`.
 *
 * @example defaultCollate([[a0, y0], [a1, y1]], [4, 9]) // [stack([a0, a1]), stack([y0, y1])]
 * @throws FlodlError ERR_SHAPE when samples have different numbers of tensors or a position
 *   differs in shape; ERR_DTYPE when it differs in dtype (messages name both dataset indices)
 * PyTorch: `torch.utils.data.default_collate`.
 */
export function defaultCollate(samples: readonly Sample[], indices: readonly number[]): Tensor[] {
  checkSamples('defaultCollate', samples, indices);
  const width = samples[0]!.length;
  return Array.from({ length: width }, (_, position) => stack(samples.map((sample) => sample[position]!)));
}

/**
 * @internal Checks that every sample is an array of tensors with the first sample's arity,
 * shapes and dtypes, naming the dataset indices of the first mismatch.
 */
export function checkSamples(op: string, samples: readonly Sample[], indices: readonly number[]): void {
  const first = samples[0];
  if (!Array.isArray(first) || first.length === 0) {
    throw invalidArgument(op, `the sample at index ${indices[0]}`, 'a non-empty array of Tensors', first);
  }
  for (let k = 0; k < samples.length; k++) {
    const sample = samples[k]!;
    if (!Array.isArray(sample)) {
      throw invalidArgument(op, `the sample at index ${indices[k]}`, 'an array of Tensors', sample);
    }
    if (sample.length !== first.length) {
      throw new FlodlError('ERR_SHAPE', 'samples differ in their number of tensors', {
        op,
        expected: `${first.length} tensors, as the sample at index ${indices[0]} has`,
        got: `${sample.length} tensors at index ${indices[k]}`,
      });
    }
    for (let position = 0; position < sample.length; position++) {
      const tensor = sample[position];
      if (!(tensor instanceof Tensor)) {
        throw invalidArgument(op, `sample ${indices[k]} position ${position}`, 'a Tensor', tensor);
      }
      const reference = first[position]!;
      if (k > 0 && !sameShape(tensor.shape, reference.shape)) {
        throw new FlodlError('ERR_SHAPE', `samples differ in shape at position ${position}`, {
          op,
          expected: `[${reference.shape.join(', ')}], as at index ${indices[0]}`,
          got: `[${tensor.shape.join(', ')}] at index ${indices[k]}`,
        });
      }
      if (k > 0 && tensor.dtype !== reference.dtype) {
        throw new FlodlError('ERR_DTYPE', `samples differ in dtype at position ${position}`, {
          op,
          expected: `${reference.dtype}, as at index ${indices[0]}`,
          got: `${tensor.dtype} at index ${indices[k]}`,
        });
      }
    }
  }
}

function sameShape(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((size, k) => size === b[k]);
}
