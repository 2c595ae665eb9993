// Argument checks that name the argument; used before native calls on the non-hot paths.
import { invalidArgument } from '../errors.js';
import { unknownOptionError } from './did-you-mean.js';

export function checkInt(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value))
    throw invalidArgument(op, name, 'an integer', value);
  return value;
}

export function checkNumber(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || Number.isNaN(value)) throw invalidArgument(op, name, 'a number', value);
  return value;
}

export function checkScalar(op: string, name: string, value: unknown): number | boolean {
  if (typeof value === 'boolean' || (typeof value === 'number' && !Number.isNaN(value))) return value;
  if (typeof value === 'number') return value; // NaN is a legitimate fill value
  throw invalidArgument(op, name, 'a number or boolean', value);
}

/**
 * A boolean argument, or `fallback` when it is undefined and a fallback is given.
 * @throws FlodlError ERR_INVALID_ARGUMENT otherwise
 */
export function checkBoolean(op: string, name: string, value: unknown, fallback?: boolean): boolean {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'boolean') throw invalidArgument(op, name, 'a boolean', value);
  return value;
}

export function checkIntList(op: string, name: string, value: unknown): number[] {
  if (typeof value === 'number') return [checkInt(op, name, value)];
  if (
    !Array.isArray(value) ||
    !value.every((item) => typeof item === 'number' && Number.isSafeInteger(item))
  ) {
    throw invalidArgument(op, name, 'an integer or an array of integers', value);
  }
  return value as number[];
}

export function checkShape(op: string, value: unknown, name = 'shape'): number[] {
  if (
    !Array.isArray(value) ||
    !value.every((item) => typeof item === 'number' && Number.isSafeInteger(item) && item >= 0)
  ) {
    throw invalidArgument(op, name, 'an array of non-negative integers', value);
  }
  return value as number[];
}

/**
 * A string argument that must be one of `allowed`.
 * @throws FlodlError ERR_INVALID_ARGUMENT otherwise, listing the allowed values
 */
export function checkOneOf<T extends string>(
  op: string,
  name: string,
  value: unknown,
  allowed: readonly T[],
): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidArgument(op, name, `one of ${allowed.map((item) => `'${item}'`).join(', ')}`, value);
  }
  return value as T;
}

/**
 * Checks that `options` is absent or a plain options object whose keys the op knows (catching
 * misspellings such as `{ dtyp: 'float64' }`: the message suggests the closest known key, see
 * {@link unknownOptionError}), and returns it (`{}` when absent). For packages built on this
 * one: every option check of the framework goes through it.
 *
 * @example const { dim = 0 } = checkOptions('softmax', options, ['dim']);
 * @throws FlodlError ERR_INVALID_ARGUMENT for anything but a plain object (a Tensor, an array) or an unknown key
 */
export function checkOptions<T extends object>(
  op: string,
  options: T | undefined,
  allowed: readonly (keyof T & string)[] | readonly string[],
): T {
  if (options === undefined) return {} as T;
  if (!isPlainObject(options)) throw invalidArgument(op, 'options', 'an options object', options);
  for (const key of Object.keys(options)) {
    if (!(allowed as readonly string[]).includes(key)) throw unknownOptionError(op, key, allowed);
  }
  return options;
}

/** An object literal (or a null-prototype object): not an array, a Tensor or another class's instance. */
function isPlainObject(value: unknown): value is object {
  if (value === null || typeof value !== 'object') return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * A safe integer `>= minimum` (any safe integer when no minimum is given).
 * @throws FlodlError ERR_INVALID_ARGUMENT otherwise, e.g. "expected: an integer >= 1"
 */
export function checkInteger(
  op: string,
  name: string,
  value: unknown,
  minimum = Number.NEGATIVE_INFINITY,
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
    const expected = Number.isFinite(minimum) ? `an integer >= ${minimum}` : 'an integer';
    throw invalidArgument(op, name, expected, value);
  }
  return value;
}

/**
 * A safe integer `>= 0`.
 * @throws FlodlError ERR_INVALID_ARGUMENT otherwise
 */
export function checkNonNegativeInteger(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidArgument(op, name, 'a non-negative integer', value);
  }
  return value;
}

/**
 * A safe integer `>= 1`.
 * @throws FlodlError ERR_INVALID_ARGUMENT otherwise
 */
export function checkPositiveInteger(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw invalidArgument(op, name, 'a positive integer', value);
  }
  return value;
}

/**
 * A finite number.
 * @throws FlodlError ERR_INVALID_ARGUMENT otherwise
 */
export function checkFiniteNumber(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw invalidArgument(op, name, 'a finite number', value);
  }
  return value;
}

/** How {@link checkNumberInRange} treats its upper bound. */
export interface RangeOptions {
  /** The upper bound itself is refused: `[minimum, maximum)`. Default false. */
  maximumExclusive?: boolean;
}

/**
 * A finite number in `[minimum, maximum]` (or `[minimum, maximum)`); an infinite maximum means
 * no upper bound. Messages read "a number in [0, 1)" or "a finite number >= 0".
 * @throws FlodlError ERR_INVALID_ARGUMENT otherwise
 */
export function checkNumberInRange(
  op: string,
  name: string,
  value: unknown,
  minimum: number,
  maximum = Number.POSITIVE_INFINITY,
  options: RangeOptions = {},
): number {
  const exclusive = options.maximumExclusive === true;
  const inRange =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    value >= minimum &&
    (exclusive ? value < maximum : value <= maximum);
  if (!inRange) {
    const expected =
      maximum === Number.POSITIVE_INFINITY
        ? `a finite number >= ${minimum}`
        : `a number in [${minimum}, ${maximum}${exclusive ? ')' : ']'}`;
    throw invalidArgument(op, name, expected, value);
  }
  return value as number;
}

/**
 * A function, or undefined.
 * @throws FlodlError ERR_INVALID_ARGUMENT otherwise
 */
export function checkOptionalFunction<T>(op: string, name: string, value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw invalidArgument(op, name, 'a function', value);
  return value as T;
}

/**
 * Any object but null or an array (`{}` when undefined): for option records whose keys are
 * checked by the caller. {@link checkOptions} is the stricter check (plain objects, known keys).
 * @throws FlodlError ERR_INVALID_ARGUMENT otherwise
 */
export function checkOptionsObject(op: string, name: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw invalidArgument(op, name, 'an options object', value);
  }
  return value as Record<string, unknown>;
}
