// Reads the golden fixtures written by scripts/make-goldens.py and replays them against
// our Tensor API: builds the inputs, calls the op, and compares with PyTorch's result.

import {
  compareValues,
  decodeNumber,
  type EncodedNumber,
  expectClose,
  fixtureData,
  readFixture,
  type Tolerance,
} from '@flodl/testing';
import { expect } from 'vitest';
import * as flodl from '../../src/index.js';
import { type DType, Tensor } from '../../src/index.js';

/** A number as the fixtures store it (@flodl/testing's one encoding: 'nan', 'inf', '-inf'). */
export type { EncodedNumber } from '@flodl/testing';
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

export { readValues, type Tolerance } from '@flodl/testing';

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

export function loadGoldens(): Goldens {
  const url = new URL('../fixtures/goldens.json', import.meta.url);
  return readFixture<Goldens>(url);
}

/** Builds a fixture tensor, then applies its view steps. */
export function makeTensor(fixture: TensorFixture): Tensor {
  let tensor = Tensor.from(fixtureData(fixture), fixture.shape, { dtype: fixture.dtype });
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

/** Compares shape, then dtype, then values; integer and bool values must match exactly. */
export function expectTensor(
  actual: unknown,
  expected: TensorFixture,
  tolerance: Tolerance,
  label: string,
): void {
  expect(actual instanceof Tensor, `${label} is a Tensor`).toBe(true);
  expectClose(actual, expected, tolerance, label);
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
