// Type-level tests (checked by tsc --noEmit in the package's `typecheck` task): the overloads and the
// members that ops files and creation.ts attach by declaration merging.
import { describe, expectTypeOf, it } from 'vitest';
import {
  arange,
  type Tensor,
  Tensor as TensorClass,
  type TensorData,
  type TensorOptions,
  type ValuesIndices,
} from '../src/index.js';

declare const x: Tensor;

describe('Tensor members attached by declaration merging', () => {
  it('Tensor.from is a static factory (creation.ts)', () => {
    expectTypeOf(TensorClass.from).parameters.toEqualTypeOf<
      [data: TensorData, shape?: readonly number[], options?: TensorOptions]
    >();
    expectTypeOf(TensorClass.from([1, 2])).toEqualTypeOf<Tensor>();
  });

  it('toString prints (ops-print.ts), sort and topk give values and indices (ops-sorting.ts)', () => {
    expectTypeOf(x.toString()).toEqualTypeOf<string>();
    expectTypeOf(x.sort()).toEqualTypeOf<ValuesIndices>();
    expectTypeOf(x.topk(2)).toEqualTypeOf<ValuesIndices>();
    expectTypeOf(x.reshape(2, 3)).toEqualTypeOf<Tensor>();
    expectTypeOf(x.chunk(2)).toEqualTypeOf<Tensor[]>();
  });
});

describe('overloads', () => {
  it('arange takes an end, or a start, an end and a step, each with options', () => {
    expectTypeOf(arange(5)).toEqualTypeOf<Tensor>();
    expectTypeOf(arange(5, { dtype: 'int64' })).toEqualTypeOf<Tensor>();
    expectTypeOf(arange(1, 5, 2, { dtype: 'float64' })).toEqualTypeOf<Tensor>();
    // @ts-expect-error: options come after the step
    arange(1, { dtype: 'int64' }, 2);
  });
});
