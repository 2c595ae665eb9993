// Replays the cases of test/fixtures/nn.json (written by scripts/make-goldens-nn.py) against
// our functional API: builds the leaves, calls the op, and compares outputs, gradients and
// in-place changes with PyTorch's.

import { autogradGrad, type DType, manualSeed, Tensor, tidy } from '@flodl/tensor-native';
import {
  type EncodedNumber,
  expectClose,
  fixtureData,
  forDevice,
  readFixture,
  type Tolerance,
} from '@flodl/testing';
import { expect } from 'vitest';
import { F } from '../../src/index.js';

export type EncodedValue = EncodedNumber | boolean;

export interface TensorFixture {
  data: EncodedValue[];
  shape: number[];
  dtype: DType;
}

export type { Tolerance } from '@flodl/testing';

export interface GoldenCase extends Tolerance {
  group: string;
  name: string;
  op: keyof typeof F;
  tensors: Record<string, TensorFixture>;
  args: unknown[];
  grad: string[];
  outputs: Record<string, TensorFixture>;
  probes: Record<string, TensorFixture>;
  grads: Record<string, TensorFixture>;
  mutated: Record<string, TensorFixture>;
}

export interface SeededCase {
  name: string;
  op: 'dropout' | 'dropout1d' | 'dropout2d' | 'dropout3d' | 'alphaDropout';
  seed: number;
  input: TensorFixture;
  options: { p?: number; training?: boolean };
  expected: TensorFixture;
}

export interface NnGoldens {
  meta: { torch: string; seed: number; regenerate: string };
  cases: GoldenCase[];
  random: SeededCase[];
}

export function loadGoldens(): NnGoldens {
  return readFixture(new URL('../fixtures/nn.json', import.meta.url)) as NnGoldens;
}

export function makeTensor(fixture: TensorFixture): Tensor {
  return Tensor.from(fixtureData(fixture), fixture.shape, { dtype: fixture.dtype });
}

/**
 * An argument as our API takes it: {$ref} names a leaf; a null argument stands for an omitted
 * one (undefined), a null inside an array stays null (adaptive pools' "keep this size").
 */
function decodeArgument(value: unknown, leaves: Record<string, Tensor>, nested = false): unknown {
  if (value === null) return nested ? null : undefined;
  if (Array.isArray(value)) return value.map((item) => decodeArgument(item, leaves, true));
  if (typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  if (typeof record.$ref === 'string') return leaves[record.$ref];
  return Object.fromEntries(
    Object.entries(record).map(([key, item]) => [key, decodeArgument(item, leaves, true)]),
  );
}

/** Shape, dtype, then every value within `atol + rtol * |expected|` (NaN and ±Infinity exactly). */
export function expectTensor(
  actual: unknown,
  expected: TensorFixture,
  tolerance: Tolerance,
  label: string,
): void {
  expect(actual, `${label} is missing`).toBeInstanceOf(Tensor);
  expectClose(actual, expected, forDevice(tolerance), label);
}

/** What {@link runGolden} replays: nn.json's cases, and rnn-loss.json's (seeded, no in-place changes). */
export type ReplayedCase = Omit<GoldenCase, 'mutated'> & {
  mutated?: Record<string, TensorFixture>;
  /** Seeds the generator right before the op (dropout inside it). */
  seed?: number;
};

/** Runs one case in a tidy scope and checks outputs, gradients and in-place changes. */
export function runGolden(golden: ReplayedCase): void {
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
    for (const [name, expected] of Object.entries(golden.mutated ?? {})) {
      expectTensor(leaves[name], expected, golden, `${name} after the call`);
    }
    if (golden.grad.length === 0) return;
    const terms = Object.entries(golden.probes).map(([name, probe]) =>
      outputs[name]!.mul(makeTensor(probe)).sum(),
    );
    const scalar = terms.reduce((total, term) => total.add(term));
    const inputs = golden.grad.map((name) => leaves[name]!);
    const grads = autogradGrad([scalar], inputs, { allowUnused: true });
    golden.grad.forEach((name, k) => {
      // An unused leaf gets no gradient; the fixture records zeros for it.
      const grad = grads[k] ?? inputs[k]!.detach().mul(0);
      expectTensor(grad, golden.grads[name]!, golden, `gradient of ${name}`);
    });
  });
}

export function groupsOf<C extends { group: string }>(cases: readonly C[]): Map<string, C[]> {
  const groups = new Map<string, C[]>();
  for (const golden of cases) groups.set(golden.group, [...(groups.get(golden.group) ?? []), golden]);
  return groups;
}
