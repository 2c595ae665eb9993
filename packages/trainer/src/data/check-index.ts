import { FlodlError } from '@flodl/tensor-native';

/**
 * @internal Throws ERR_INVALID_ARGUMENT unless every index is an integer in [0, length).
 * `what` names the list in the message (for example `indices` or `sampler.indices(3)`).
 */
export function checkIndices(op: string, what: string, indices: ArrayLike<number>, length: number): void {
  for (let position = 0; position < indices.length; position++) {
    const index = indices[position]!;
    if (!Number.isInteger(index) || index < 0 || index >= length) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `${what}[${position}] is out of range`, {
        op,
        expected: `an integer index in [0, ${length})`,
        got: String(index),
      });
    }
  }
}
