// Argument checks for the data pipeline: each names the argument and says what it expected.
import { FlodlError, invalidArgument } from '@flodl/tensor-native';

export {
  checkBoolean,
  checkNonNegativeInteger,
  checkOptionalFunction,
  checkOptions,
  checkPositiveInteger,
} from '@flodl/tensor-native';

/** Batch names: distinct non-empty strings, `count` of them when a count is known. */
export function checkNames(op: string, value: unknown, count?: number): readonly string[] {
  if (
    !Array.isArray(value) ||
    !value.every((name) => typeof name === 'string' && name.length > 0) ||
    new Set(value).size !== value.length
  ) {
    throw invalidArgument(op, 'names', 'an array of distinct non-empty strings', value);
  }
  if (count !== undefined && value.length !== count) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'names must give one name per tensor', {
      op,
      expected: `${count} names`,
      got: `${value.length} (${value.join(', ')})`,
    });
  }
  return Object.freeze([...value]);
}
