// Reads the golden fixtures written by scripts/make-goldens.py and replays them against
// our Tensor API: builds the inputs, calls the op, and compares with PyTorch's result.
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import * as flodl from '../../src/index.js';
import { type DType, isFloatingPoint, Tensor } from '../../src/index.js';

/** A number as the fixtures store it: JSON has no NaN or Infinity. */
export type EncodedNumber = number | 'nan' | 'inf' | '-inf';
export type EncodedValue = EncodedNumber | boolean;

/** A step that turns a freshly made tensor into a (usually non-contiguous) view. */
export type ViewStep =
  | ['transpose', number, number]
  | ['slice', number, number | null, number | null, number]
  | ['permute', number[]]
  | ['expand', number[]]
  | ['select', number, number];

export interface TensorFixture {
  data: EncodedValue[];
  shape: number[];
  dtype: DType;
  view?: ViewStep[];
}

export type ExpectedResult =
  | { tensor: TensorFixture }
  | { fields: Record<string, TensorFixture> }
  | { list: TensorFixture[] }
  | { scalar: EncodedValue };

export interface Tolerance {
  atol: number;
  rtol: number;
}

export interface GoldenCase extends Tolerance {
  group: string;
  name: string;
  kind: 'method' | 'function' | 'inplace';
  op: string;
  self?: { $tensor: TensorFixture };
  args: unknown[];
  expected: ExpectedResult;
}

export interface StringCase {
  group: string;
  name: string;
  input: TensorFixture;
  expected: string;
}

export interface RandomCase {
  name: string;
  seed: number;
  op: string;
  args: unknown[];
  expected: TensorFixture;
}

export interface Goldens {
  meta: { torch: string; seed: number; generator: string; regenerate: string };
  cases: GoldenCase[];
  strings: StringCase[];
  random: RandomCase[];
}

type AnyFunction = (...args: unknown[]) => unknown;

const EXACT: Tolerance = { atol: 0, rtol: 0 };
const MAX_REPORTED = 8;

export function loadGoldens(): Goldens {
  const url = new URL('../fixtures/goldens.json', import.meta.url);
  return JSON.parse(readFileSync(url, 'utf8')) as Goldens;
}

export function decodeNumber(value: EncodedValue): number {
  if (value === 'nan') return Number.NaN;
  if (value === 'inf') return Number.POSITIVE_INFINITY;
  if (value === '-inf') return Number.NEGATIVE_INFINITY;
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

/** Builds a fixture tensor, then applies its view steps. */
export function makeTensor(fixture: TensorFixture): Tensor {
  const data =
    fixture.dtype === 'bool' ? fixture.data.map((value) => value === true) : fixture.data.map(decodeNumber);
  let tensor = Tensor.from(data, fixture.shape, { dtype: fixture.dtype });
  for (const step of fixture.view ?? []) tensor = applyView(tensor, step);
  return tensor;
}

function applyView(tensor: Tensor, step: ViewStep): Tensor {
  switch (step[0]) {
    case 'transpose':
      return tensor.transpose(step[1], step[2]);
    case 'slice':
      return tensor.slice(step[1], step[2] ?? undefined, step[3] ?? undefined, step[4]);
    case 'permute':
      return tensor.permute(step[1]);
    case 'expand':
      return tensor.expand(step[1]);
    case 'select':
      return tensor.select(step[1], step[2]);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** An argument as our API takes it: null → undefined, {$tensor} → Tensor, {$number} → number. */
export function decodeArgument(value: unknown): unknown {
  if (value === null) return undefined;
  if (Array.isArray(value)) return value.map(decodeArgument);
  if (!isRecord(value)) return value;
  if ('$tensor' in value) return makeTensor(value.$tensor as TensorFixture);
  if ('$number' in value) return decodeNumber(value.$number as EncodedNumber);
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, decodeArgument(item)]));
}

/** A package export by dotted path ('where', 'linalg.solve', 'Tensor.from') and its owner. */
export function resolveFunction(path: string): { owner: unknown; run: AnyFunction } {
  let owner: unknown;
  let target: unknown = flodl;
  for (const part of path.split('.')) {
    owner = target;
    target = (target as Record<string, unknown> | undefined)?.[part];
  }
  if (typeof target !== 'function') throw new Error(`the package exports no function '${path}'`);
  return { owner, run: target as AnyFunction };
}

/** Runs one case and returns what our API gave (for in-place ops: the mutated self). */
export function runCase(golden: GoldenCase): unknown {
  const args = golden.args.map(decodeArgument);
  if (golden.kind === 'function') {
    const { owner, run } = resolveFunction(golden.op);
    return run.apply(owner, args);
  }
  if (golden.self === undefined) throw new Error(`case '${golden.name}' has no self tensor`);
  const self = makeTensor(golden.self.$tensor);
  const method = (self as unknown as Record<string, unknown>)[golden.op];
  if (typeof method !== 'function') throw new Error(`Tensor has no method '${golden.op}'`);
  const result = (method as AnyFunction).apply(self, args);
  if (golden.kind === 'inplace') {
    expect(result === self, `${golden.op} returns self`).toBe(true);
    return self;
  }
  return result;
}

/** Reads a tensor's values as numbers (int64 through Number, bool as 0/1). */
export function readValues(tensor: Tensor): number[] {
  const typed = tensor.toTypedArray() as ArrayLike<number | bigint>;
  return Array.from(typed, (value) => Number(value));
}

function isClose(actual: number, expected: number, tolerance: Tolerance): boolean {
  if (Number.isNaN(expected)) return Number.isNaN(actual);
  if (!Number.isFinite(expected)) return actual === expected;
  return Math.abs(actual - expected) <= tolerance.atol + tolerance.rtol * Math.abs(expected);
}

/** Human-readable mismatches (empty when every value is close enough). */
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

/** Compares shape, then dtype, then values; integer and bool values must match exactly. */
export function expectTensor(
  actual: unknown,
  expected: TensorFixture,
  tolerance: Tolerance,
  label: string,
): void {
  expect(actual instanceof Tensor, `${label} is a Tensor`).toBe(true);
  const tensor = actual as Tensor;
  expect([...tensor.shape], `${label} shape`).toEqual(expected.shape);
  expect(tensor.dtype, `${label} dtype`).toBe(expected.dtype);
  const applied = isFloatingPoint(expected.dtype) ? tolerance : EXACT;
  const problems = compareValues(readValues(tensor), expected.data.map(decodeNumber), applied);
  expect(problems, `${label} values (atol ${applied.atol}, rtol ${applied.rtol})`).toEqual([]);
}

export function expectResult(actual: unknown, expected: ExpectedResult, tolerance: Tolerance): void {
  if ('tensor' in expected) {
    expectTensor(actual, expected.tensor, tolerance, 'result');
  } else if ('fields' in expected) {
    expect(isRecord(actual), 'result is an object').toBe(true);
    const record = actual as Record<string, unknown>;
    expect(Object.keys(record).sort(), 'result fields').toEqual(Object.keys(expected.fields).sort());
    for (const [key, fixture] of Object.entries(expected.fields))
      expectTensor(record[key], fixture, tolerance, key);
  } else if ('list' in expected) {
    expect(Array.isArray(actual), 'result is an array').toBe(true);
    const list = actual as unknown[];
    expect(list.length, 'result length').toBe(expected.list.length);
    expected.list.forEach((fixture, k) => {
      expectTensor(list[k], fixture, tolerance, `result[${k}]`);
    });
  } else if (typeof expected.scalar === 'boolean') {
    expect(actual, 'result').toBe(expected.scalar);
  } else {
    expect(typeof actual, 'result type').toBe('number');
    expect(
      compareValues([actual as number], [decodeNumber(expected.scalar)], tolerance),
      'result value',
    ).toEqual([]);
  }
}
