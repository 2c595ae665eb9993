// Type-level tests (checked by tsc --noEmit in the package's `typecheck` task): the overloads of the
// functional API give the types users expect.
import type { NestedArray, Tensor, ValuesIndices } from '@flodl/tensor-native';
import { describe, expectTypeOf, it } from 'vitest';
import { F, inferenceMode, isInferenceModeEnabled, Variable } from '../src/index.js';

declare const x: Tensor;
declare const flag: boolean;

describe('returnIndices overloads', () => {
  it('max pools return a Tensor, or values and indices with returnIndices: true', () => {
    expectTypeOf(F.maxPool1d(x, 2)).toEqualTypeOf<Tensor>();
    expectTypeOf(F.maxPool2d(x, 2, { stride: 1 })).toEqualTypeOf<Tensor>();
    expectTypeOf(F.maxPool2d(x, 2, { returnIndices: false })).toEqualTypeOf<Tensor>();
    expectTypeOf(F.maxPool1d(x, 2, { returnIndices: true })).toEqualTypeOf<ValuesIndices>();
    expectTypeOf(F.maxPool2d(x, [2, 2], { returnIndices: true })).toEqualTypeOf<ValuesIndices>();
    expectTypeOf(F.maxPool3d(x, 2, { returnIndices: true })).toEqualTypeOf<ValuesIndices>();
  });

  it('a returnIndices known only at run time gives the union', () => {
    expectTypeOf(F.maxPool2d(x, 2, { returnIndices: flag })).toEqualTypeOf<Tensor | ValuesIndices>();
  });

  it('adaptive max pools have the same two forms', () => {
    expectTypeOf(F.adaptiveMaxPool1d(x, 4)).toEqualTypeOf<Tensor>();
    expectTypeOf(F.adaptiveMaxPool2d(x, [2, 2], { returnIndices: true })).toEqualTypeOf<ValuesIndices>();
    expectTypeOf(F.adaptiveMaxPool3d(x, 2)).toEqualTypeOf<Tensor>();
  });

  it('values and indices are tensors', () => {
    const { values, indices } = F.maxPool2d(x, 2, { returnIndices: true });
    expectTypeOf(values).toEqualTypeOf<Tensor>();
    expectTypeOf(indices).toEqualTypeOf<Tensor>();
  });
});

describe('Variable', () => {
  it('is a Tensor', () => {
    expectTypeOf<Variable>().toExtend<Tensor>();
    expectTypeOf(Variable).toBeConstructibleWith(x);
  });
});

describe('PyTorch names', () => {
  it('inferenceMode returns what fn returns; its option is mode', () => {
    expectTypeOf(inferenceMode(() => x)).toEqualTypeOf<Tensor>();
    expectTypeOf(inferenceMode(() => 1, { mode: false })).toEqualTypeOf<number>();
    expectTypeOf(isInferenceModeEnabled()).toEqualTypeOf<boolean>();
    // @ts-expect-error: the option is PyTorch's `mode`
    inferenceMode(() => 1, { enabled: false });
  });

  it('a Variable has T, mT, tolist and the options forms of the reductions', () => {
    const v = new Variable(x, true);
    expectTypeOf(v.T).toEqualTypeOf<Tensor>();
    expectTypeOf(v.mT).toEqualTypeOf<Tensor>();
    expectTypeOf(v.mean({ dim: 1, keepdim: true })).toEqualTypeOf<Tensor>();
    expectTypeOf(v.max({ dim: 0 })).toEqualTypeOf<ValuesIndices>();
    expectTypeOf(v.tolist()).toEqualTypeOf<NestedArray>();
  });
});
