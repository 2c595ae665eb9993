// Type-level tests (checked by tsc --noEmit in the package's `typecheck` task): the overloads and the
// members that ops files and creation.ts attach by declaration merging.
import { describe, expectTypeOf, it } from 'vitest';
import {
  arange,
  type NestedArray,
  type ProdOptions,
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

describe('PyTorch names', () => {
  it('T and mT are read-only Tensor properties, tolist gives nested arrays', () => {
    expectTypeOf(x.T).toEqualTypeOf<Tensor>();
    expectTypeOf(x.mT).toEqualTypeOf<Tensor>();
    expectTypeOf(x.tolist()).toEqualTypeOf<NestedArray>();
    expectTypeOf(x.isInference).toEqualTypeOf<boolean>();
    // @ts-expect-error: T is read-only
    x.T = x;
  });

  it('reductions take their positional forms or one options object', () => {
    expectTypeOf(x.mean({ dim: 1, keepdim: true })).toEqualTypeOf<Tensor>();
    expectTypeOf(x.sum({ dim: [0, 2], dtype: 'float64' })).toEqualTypeOf<Tensor>();
    expectTypeOf(x.sum(1, true)).toEqualTypeOf<Tensor>();
    expectTypeOf(x.max({ dim: 1 })).toEqualTypeOf<ValuesIndices>();
    expectTypeOf(x.min({ dim: 0, keepdim: true })).toEqualTypeOf<ValuesIndices>();
    expectTypeOf(x.max()).toEqualTypeOf<Tensor>();
    expectTypeOf(x.std({ dim: 0, correction: 0 })).toEqualTypeOf<Tensor>();
    expectTypeOf(x.var({ unbiased: false })).toEqualTypeOf<Tensor>();
    expectTypeOf(x.norm({ p: 1, dim: 1, dtype: 'float64' })).toEqualTypeOf<Tensor>();
    expectTypeOf(x.amax({})).toEqualTypeOf<Tensor>();
    expectTypeOf(x.argmax({ keepdim: true })).toEqualTypeOf<Tensor>();
    expectTypeOf(x.logsumexp({ dim: [0, 1] })).toEqualTypeOf<Tensor>();
    expectTypeOf(x.softmax({ dim: -1, dtype: 'float32' })).toEqualTypeOf<Tensor>();
    expectTypeOf(x.all({ dim: 0 })).toEqualTypeOf<Tensor>();
    expectTypeOf(x.countNonzero({ dim: 1 })).toEqualTypeOf<Tensor>();
    expectTypeOf(x.prod({ dim: 0 } satisfies ProdOptions)).toEqualTypeOf<Tensor>();
    // @ts-expect-error: max along a dim needs the dim
    x.max({ keepdim: true });
    // @ts-expect-error: a misspelled keyword
    x.mean({ dims: 1 });
    // @ts-expect-error: prod reduces one dim
    x.prod({ dim: [0, 1] });
    // @ts-expect-error: nothing follows the options object
    x.sum({ dim: 1 }, true);
  });
});
