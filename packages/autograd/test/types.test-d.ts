// Type-level tests (checked by tsc --noEmit in the package's `typecheck` task): the overloads of the
// functional API give the types users expect.
import type { Tensor, ValuesIndices } from '@flodl/tensor-native';
import { describe, expectTypeOf, it } from 'vitest';
import { F, Variable } from '../src/index.js';

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
