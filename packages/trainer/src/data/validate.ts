// Argument checks for the data pipeline: each names the argument and says what it expected.
import { FlodlError, invalidArgument } from '@flodl/tensor-native';

export { checkBoolean, checkOptions } from '@flodl/tensor-native';

/** An integer >= 0 that is exactly representable (`Number.isSafeInteger`). */
export function checkNonNegativeInteger(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidArgument(op, name, 'a non-negative integer', value);
  }
  return value;
}

/** An integer >= 1. */
export function checkPositiveInteger(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalidArgument(op, name, 'a positive integer', value);
  }
  return value;
}

/** A function, or undefined. */
export function checkOptionalFunction<T>(op: string, name: string, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw invalidArgument(op, name, 'a function', value);
  return value as T;
}

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
