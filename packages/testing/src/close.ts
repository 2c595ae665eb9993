// Comparing a tensor with a golden fixture: shape, dtype, then every value within a tolerance.
import { expect } from 'vitest';
import type { Tolerance } from './device.js';
import { decodeNumber, type EncodedNumber } from './encoding.js';

/** What the kit reads of a tensor (tensor-native's Tensor has these members and more). */
export interface TensorLike {
  readonly shape: readonly number[];
  readonly dtype: string;
  toTypedArray(): ArrayLike<number | bigint | boolean>;
}

/** A tensor as the fixtures hold it: row-major values, encoded non-finite numbers allowed. */
export interface TensorFixture {
  shape: readonly number[];
  dtype: string;
  data: readonly (EncodedNumber | boolean)[];
}

/** Bit-for-bit: the tolerance of integer, bool and init comparisons. */
export const EXACT: Tolerance = { atol: 0, rtol: 0 };

const FLOATING = new Set(['float16', 'bfloat16', 'float32', 'float64']);
const MAX_REPORTED = 8;

/**
 * A fixture's values as `Tensor.from` takes them with the fixture's shape and dtype: booleans
 * for a bool fixture (written as true/false or 1/0), numbers otherwise (non-finite decoded).
 *
 * @example Tensor.from(fixtureData(fixture), fixture.shape, { dtype: fixture.dtype })
 */
export function fixtureData(fixture: TensorFixture): number[] | boolean[] {
  if (fixture.dtype === 'bool') return fixture.data.map((value) => value === true || value === 1);
  return fixture.data.map(decodeNumber);
}

/** True for a value with a tensor's shape, dtype and typed-array read-out. */
export function isTensorLike(value: unknown): value is TensorLike {
  return (
    typeof value === 'object' &&
    value !== null &&
    Array.isArray((value as TensorLike).shape) &&
    typeof (value as TensorLike).dtype === 'string' &&
    typeof (value as TensorLike).toTypedArray === 'function'
  );
}

/** A tensor's values as numbers (int64 through Number, bool as 0/1). */
export function readValues(tensor: TensorLike): number[] {
  return Array.from(tensor.toTypedArray(), (value) => Number(value));
}

/** NaN only where NaN is expected, an infinity exactly, anything else within the tolerance. */
export function isClose(actual: number, expected: number, tolerance: Tolerance): boolean {
  if (Number.isNaN(expected)) return Number.isNaN(actual);
  if (!Number.isFinite(expected)) return actual === expected;
  return Math.abs(actual - expected) <= tolerance.atol + tolerance.rtol * Math.abs(expected);
}

/** Human-readable mismatches, the first few of them (empty when every value is close enough). */
export function compareValues(
  actual: readonly number[],
  expected: readonly number[],
  tolerance: Tolerance,
): string[] {
  if (actual.length !== expected.length) return [`expected ${expected.length} values, got ${actual.length}`];
  const problems: string[] = [];
  let count = 0;
  for (let k = 0; k < expected.length; k++) {
    if (isClose(actual[k]!, expected[k]!, tolerance)) continue;
    count++;
    if (problems.length < MAX_REPORTED) problems.push(`[${k}] expected ${expected[k]}, got ${actual[k]}`);
  }
  if (count > MAX_REPORTED) problems.push(`… ${count - MAX_REPORTED} more`);
  return problems;
}

/**
 * Expects `actual` to be a tensor with the fixture's shape and dtype whose values are within
 * `atol + rtol·|expected|` of the fixture's. Integer and bool values must match exactly; float32
 * targets (written in their shortest form) are rounded back to float32 first.
 *
 * @example expectClose(layer.forward(x), golden.output, { atol: 1e-6, rtol: 1e-5 }, 'output');
 */
export function expectClose(
  actual: unknown,
  expected: TensorFixture,
  tolerance: Tolerance,
  label = 'result',
): void {
  expect(isTensorLike(actual), `${label} is a Tensor`).toBe(true);
  const tensor = actual as TensorLike;
  expect([...tensor.shape], `${label} shape`).toEqual([...expected.shape]);
  expect(tensor.dtype, `${label} dtype`).toBe(expected.dtype);
  const floating = FLOATING.has(expected.dtype);
  const applied = floating ? tolerance : EXACT;
  const targets = expected.data.map((value) =>
    expected.dtype === 'float32' ? Math.fround(decodeNumber(value)) : decodeNumber(value),
  );
  const problems = compareValues(readValues(tensor), targets, applied);
  expect(problems, `${label} values (atol ${applied.atol}, rtol ${applied.rtol})`).toEqual([]);
}
