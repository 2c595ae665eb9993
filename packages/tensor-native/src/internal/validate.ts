// Argument checks that name the argument; used before native calls on the non-hot paths.
import { invalidArgument } from '../errors.js';

export function checkInt(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value))
    throw invalidArgument(op, name, 'an integer', value);
  return value;
}

export function checkNonNegativeInt(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalidArgument(op, name, 'a non-negative integer', value);
  }
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

export function checkBool(op: string, name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
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
