// PyTorch's names on Tensor: `T`, `mT`, `tolist()` and the options forms of the reductions,
// against test/fixtures/pytorch-names.json (scripts/make-goldens-pytorch-names.py).
import { captureWarnings, caught, decodeNumber, type EncodedNumber, readFixture } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { arange, liveTensorCount, ones, Tensor, tidy, zeros } from '../src/index.js';
import {
  expectResult,
  expectTensor,
  type GoldenCase,
  makeTensor,
  runCase,
  type TensorFixture,
} from './helpers/goldens.js';

interface ViewCase {
  name: string;
  op: 'T' | 'mT';
  self: { $tensor: TensorFixture };
  expected: TensorFixture;
  gradOutput?: TensorFixture;
  grad?: TensorFixture;
}

interface ListCase {
  name: string;
  self: { $tensor: TensorFixture };
  expected: unknown;
}

interface Fixture {
  meta: { torch: string };
  cases: GoldenCase[];
  views: ViewCase[];
  lists: ListCase[];
}

const fixture = readFixture<Fixture>(new URL('./fixtures/pytorch-names.json', import.meta.url));
const startingCount = liveTensorCount();
const exact = { atol: 0, rtol: 0 };

function decodeList(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(decodeList);
  return typeof value === 'string' ? decodeNumber(value as EncodedNumber) : value;
}

// T on a tensor of neither 0 nor 2 dims warns once per process, as PyTorch's does.
const warnings = captureWarnings([/Tensor\.T on a \d+-d tensor reverses all its dims/]);

describe(`PyTorch names (PyTorch ${fixture.meta.torch})`, () => {
  describe('reductions with an options object', () => {
    for (const golden of fixture.cases) {
      it(golden.name, () => {
        tidy(() => expectResult(runCase(golden), golden.expected, golden));
      });
    }
  });

  describe('T and mT', () => {
    for (const golden of fixture.views) {
      it(golden.name, () => {
        tidy(() => {
          const self = makeTensor(golden.self.$tensor);
          if (golden.gradOutput === undefined || golden.grad === undefined) {
            expectTensor(self[golden.op], golden.expected, exact, golden.op);
            return;
          }
          self.requiresGrad_(true);
          const result = self[golden.op];
          expectTensor(result, golden.expected, exact, golden.op);
          expect(result.gradFn).not.toBeNull();
          result.backward(makeTensor(golden.gradOutput));
          expectTensor(self.grad, golden.grad, exact, 'grad');
        });
      });
    }

    it('are views of the same data', () =>
      tidy(() => {
        const m = arange(6).reshape(2, 3);
        expect(m.T.sharesMemoryWith(m)).toBe(true);
        expect(m.mT.sharesMemoryWith(m)).toBe(true);
        expect(m.T.isContiguous).toBe(false);
      }));

    it('T warns once on a tensor of neither 0 nor 2 dims', () =>
      tidy(() => {
        void zeros([2, 3, 4]).T;
        void zeros([4]).T;
        void zeros([2, 3]).T;
        expect(warnings.lines.filter((line) => line.includes('Tensor.T'))).toHaveLength(1);
      }));

    it('mT refuses fewer than 2 dims', () =>
      tidy(() => {
        const error = caught(() => arange(3).mT);
        expect(error.code).toBe('ERR_SHAPE');
        expect(error.message).toMatchInlineSnapshot(`
          "mT: mT transposes matrices: the tensor needs at least 2 dims
            expected: a matrix or a batch of matrices (2 dims or more)
            got: a 1-d tensor of shape [3]"
        `);
        expect(caught(() => Tensor.from(1).mT).code).toBe('ERR_SHAPE');
      }));

    it('refuse a disposed tensor', () => {
      const disposed = ones([2, 2]);
      disposed.dispose();
      expect(caught(() => disposed.T).code).toBe('ERR_DISPOSED');
      expect(caught(() => disposed.mT).code).toBe('ERR_DISPOSED');
    });
  });

  describe('tolist', () => {
    for (const golden of fixture.lists) {
      it(golden.name, () => {
        tidy(() => {
          expect(makeTensor(golden.self.$tensor).tolist()).toEqual(decodeList(golden.expected));
        });
      });
    }

    it('gives a plain number or boolean for a 0-d tensor', () =>
      tidy(() => {
        expect(typeof Tensor.from(3).tolist()).toBe('number');
        expect(Tensor.from(true).tolist()).toBe(true);
      }));
  });

  describe('options objects: typed errors naming the key', () => {
    const x = () => arange(12, { dtype: 'float32' }).reshape(3, 4);

    it('refuses an unknown key', () =>
      tidy(() => {
        for (const run of [
          () => x().mean({ dims: 1 } as never),
          () => x().std({ ddof: 1 } as never),
          () => x().max({ dim: 0, keep: true } as never),
          () => x().softmax({ dim: 0, keepdim: true } as never),
        ]) {
          const error = caught(run);
          expect(error.code).toBe('ERR_INVALID_ARGUMENT');
          expect(error.message).toMatch(/unknown option '(dims|ddof|keep|keepdim)'/);
        }
      }));

    it('refuses a value of the wrong type, naming the key', () =>
      tidy(() => {
        const keepdim = caught(() => x().sum({ dim: 1, keepdim: 1 } as never));
        expect(keepdim.message).toMatchInlineSnapshot(`
          "sum: invalid keepdim
            expected: a boolean
            got: 1"
        `);
        expect(caught(() => x().mean({ dim: 2 })).message).toMatchInlineSnapshot(`
          "mean: dim out of range
            expected: an integer in [-2, 1] for a 2-d tensor
            got: 2"
        `);
        expect(caught(() => x().sum({ dtype: 'float8' as never })).message).toContain('invalid dtype');
        expect(caught(() => x().std({ correction: 0.5 })).message).toContain('invalid correction');
        expect(caught(() => x().norm({ p: '2' as never })).message).toContain('invalid p');
        expect(caught(() => x().cumsum({ dim: '0' as never })).message).toContain('invalid dim');
        for (const error of [
          caught(() => x().prod({ dim: [0, 1] as never })),
          caught(() => x().argmax({ dim: 1.5 })),
        ]) {
          expect(error.code).toBe('ERR_INVALID_ARGUMENT');
          expect(error.message).toContain('dim');
        }
      }));

    it('refuses keywords PyTorch would refuse', () =>
      tidy(() => {
        expect(caught(() => x().std({ correction: 1, unbiased: true })).message).toMatchInlineSnapshot(`
          "std: correction and unbiased say the same thing: give one
            expected: { correction } (any integer >= 0) or { unbiased } (correction 1 or 0)
            got: { correction: 1, unbiased: true }"
        `);
        expect(caught(() => x().max({} as never)).message).toContain('invalid dim');
        expect(caught(() => x().logsumexp({} as never)).message).toContain('invalid dim');
        expect(caught(() => x().prod({ keepdim: true })).message).toContain('keepdim needs a dim');
        expect(caught(() => x().all({ keepdim: true })).message).toContain('keepdim needs a dim');
      }));

    it('refuses positional arguments after the object, and objects that are not plain', () =>
      tidy(() => {
        const loose = (tensor: Tensor, op: 'sum' | 'mean') => tensor[op] as (...args: unknown[]) => Tensor;
        expect(caught(() => loose(x(), 'sum').call(x(), { dim: 1 }, true)).message).toMatchInlineSnapshot(`
          "sum: positional arguments after the options object
            expected: sum({ …every keyword… }) or sum(positional arguments)
            got: an options object followed by more arguments"
        `);
        const mean = () => loose(x(), 'mean').call(x(), { dim: 0 }, undefined, { dtype: 'float64' });
        expect(caught(mean).code).toBe('ERR_INVALID_ARGUMENT');
        const tensor = caught(() => x().sum(ones([1]) as never));
        expect(tensor.code).toBe('ERR_INVALID_ARGUMENT');
        expect(tensor.message).toContain('invalid dim');
      }));

    it('keeps the positional forms as they were', () =>
      tidy(() => {
        const m = x();
        expect(m.sum(1, true).shape).toEqual([3, 1]);
        expect(m.mean([0, 1]).item()).toBe(5.5);
        expect(m.max(1).values.tolist()).toEqual([3, 7, 11]);
        expect(m.std(0, false).shape).toEqual([4]);
        expect(m.norm(1, 1).tolist()).toEqual([6, 22, 38]);
      }));
  });

  it('frees every tensor the cases created', () => {
    expect(liveTensorCount()).toBe(startingCount);
  });
});
