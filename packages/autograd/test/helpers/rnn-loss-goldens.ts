// Replays the cases of test/fixtures/rnn-loss.json (written by scripts/make-goldens-rnn-loss.py)
// against our functional API: builds the leaves, calls the op, and compares its outputs and the
// gradients of sum((output * R).sum()) with PyTorch's.
import { readFileSync } from 'node:fs';
import { autogradGrad, type DType, manualSeed, Tensor, tidy } from '@flodl/tensor-native';
import { expect } from 'vitest';
import { F } from '../../src/index.js';
import { forDevice, withoutCudnn } from './device.js';

export type EncodedValue = number | boolean | 'nan' | 'inf' | '-inf';

export interface TensorFixture {
  data: EncodedValue[];
  shape: number[];
  dtype: DType;
}

export interface GoldenCase {
  group: string;
  name: string;
  op: keyof typeof F;
  tensors: Record<string, TensorFixture>;
  args: unknown[];
  seed?: number;
  grad: string[];
  outputs: Record<string, TensorFixture>;
  probes: Record<string, TensorFixture>;
  grads: Record<string, TensorFixture>;
  atol: number;
  rtol: number;
}

export interface Tolerance {
  atol: number;
  rtol: number;
}

export function decode(value: EncodedValue): number | boolean {
  if (value === 'nan') return Number.NaN;
  if (value === 'inf') return Number.POSITIVE_INFINITY;
  if (value === '-inf') return Number.NEGATIVE_INFINITY;
  return value;
}

export function makeTensor(fixture: TensorFixture): Tensor {
  return Tensor.from(fixture.data.map(decode) as number[] | boolean[], fixture.shape, {
    dtype: fixture.dtype,
  });
}

// An argument as our API takes it: {$ref} names a leaf, null stands for undefined.
export function decodeArgument(value: unknown, leaves: Record<string, Tensor>): unknown {
  if (value === null) return undefined;
  if (Array.isArray(value)) return value.map((item) => decodeArgument(item, leaves));
  if (typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  if (typeof record.$ref === 'string') return leaves[record.$ref];
  return Object.fromEntries(Object.entries(record).map(([key, item]) => [key, decodeArgument(item, leaves)]));
}

/** Shape, dtype, then every value within `atol + rtol * |expected|` (NaN and ±Infinity exactly). */
export function expectTensor(
  actual: Tensor | null | undefined,
  expected: TensorFixture,
  tolerance: Tolerance,
  label: string,
): void {
  expect(actual, `${label} is missing`).toBeInstanceOf(Tensor);
  const tensor = actual as Tensor;
  const { atol, rtol } = forDevice(tolerance);
  expect(tensor.shape, `${label} shape`).toEqual(expected.shape);
  expect(tensor.dtype, `${label} dtype`).toBe(expected.dtype);
  const values = Array.from(tensor.toTypedArray(), Number);
  const mismatches: string[] = [];
  expected.data.forEach((encoded, k) => {
    const want = Number(decode(encoded));
    const got = values[k]!;
    const close = Number.isFinite(want)
      ? Math.abs(got - want) <= atol + rtol * Math.abs(want)
      : Object.is(got, want);
    if (!close && mismatches.length < 8) mismatches.push(`[${k}] got ${got}, expected ${want}`);
  });
  expect(mismatches, `${label} values (atol ${atol}, rtol ${rtol})`).toEqual([]);
}

export function runGolden(golden: GoldenCase): void {
  // A recurrent op in eval mode runs without cuDNN on the device tier: its backward is training-only.
  if (hasTrainingOff(golden.args)) withoutCudnn(() => replay(golden));
  else replay(golden);
}

function replay(golden: GoldenCase): void {
  tidy(() => {
    const leaves: Record<string, Tensor> = {};
    for (const [name, tensor] of Object.entries(golden.tensors)) leaves[name] = makeTensor(tensor);
    for (const name of golden.grad) leaves[name]!.requiresGrad_(true);
    if (golden.seed !== undefined) manualSeed(golden.seed);
    const run = F[golden.op] as (...args: unknown[]) => Tensor | Record<string, Tensor>;
    const result = run(...golden.args.map((argument) => decodeArgument(argument, leaves)));
    const outputs: Record<string, Tensor> = result instanceof Tensor ? { result } : result;
    expect(Object.keys(outputs).sort()).toEqual(Object.keys(golden.outputs).sort());
    for (const [name, expected] of Object.entries(golden.outputs)) {
      expectTensor(outputs[name], expected, golden, `output ${name}`);
    }
    const terms = Object.entries(golden.probes).map(([name, probe]) =>
      outputs[name]!.mul(makeTensor(probe)).sum(),
    );
    const scalar = terms.reduce((total, term) => total.add(term));
    const grads = autogradGrad(
      [scalar],
      golden.grad.map((name) => leaves[name]!),
    );
    golden.grad.forEach((name, k) => {
      expectTensor(grads[k], golden.grads[name]!, golden, `gradient of ${name}`);
    });
  });
}

/** True when the op's options say `training: false` (a recurrent op in eval mode). */
function hasTrainingOff(args: unknown[]): boolean {
  return args.some(
    (arg) => typeof arg === 'object' && arg !== null && (arg as { training?: boolean }).training === false,
  );
}

export function loadGoldens(): { meta: { torch: string }; cases: GoldenCase[] } {
  return JSON.parse(readFileSync(new URL('../fixtures/rnn-loss.json', import.meta.url), 'utf8'));
}

/** The cases by group, in fixture order. */
export function groupsOf(cases: readonly GoldenCase[]): Map<string, GoldenCase[]> {
  const groups = new Map<string, GoldenCase[]>();
  for (const golden of cases) groups.set(golden.group, [...(groups.get(golden.group) ?? []), golden]);
  return groups;
}
