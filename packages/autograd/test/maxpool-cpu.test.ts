// 2-d max pooling of contiguous CPU tensors runs the addon's own kernel; everything else runs
// libtorch's. The same values through a non-contiguous view take libtorch's kernel, so each case
// compares the two: values bit for bit (NaN where NaN), indices, the gradient, and the second
// derivative through the gradient.
import { liveTensorCount, manualSeed, randint, randn, type Tensor, tidy } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { F, grad, Variable } from '../src/index.js';

type Window = {
  kernel: number[];
  stride: number[];
  padding: number[];
  dilation: number[];
  ceilMode: boolean;
};

/** The same values, laid out with H and W swapped in memory: libtorch's kernel pools it. */
const strided = (input: Tensor): Tensor => {
  const dims = input.ndim;
  return input
    .transpose(dims - 2, dims - 1)
    .contiguous()
    .transpose(dims - 2, dims - 1);
};

/** Inputs with ties, NaNs and infinities among small integers, so every rule of the window shows. */
function awkward(shape: number[], dtype: 'float32' | 'float64'): Tensor {
  return tidy(() => {
    const values = randint(-3, 4, shape).to(dtype);
    const pick = randint(0, 40, shape);
    return values
      .where(pick.ne(0), Number.NaN)
      .where(pick.ne(1), Number.NEGATIVE_INFINITY)
      .where(pick.ne(2), Number.POSITIVE_INFINITY);
  });
}

const bits = (tensor: Tensor): string[] =>
  Array.from(tensor.toTypedArray() as ArrayLike<number | bigint>, (value) => String(value));

function pool(input: Tensor, window: Window) {
  const { kernel, ...options } = window;
  return F.maxPool2d(input, kernel, { ...options, returnIndices: true });
}

const WINDOWS: Window[] = [
  { kernel: [2, 2], stride: [2, 2], padding: [0, 0], dilation: [1, 1], ceilMode: false },
  { kernel: [2, 2], stride: [2, 2], padding: [0, 0], dilation: [1, 1], ceilMode: true },
  { kernel: [3, 3], stride: [2, 2], padding: [1, 1], dilation: [1, 1], ceilMode: false },
  { kernel: [3, 2], stride: [1, 2], padding: [1, 0], dilation: [1, 1], ceilMode: true },
  { kernel: [2, 3], stride: [3, 1], padding: [0, 1], dilation: [2, 1], ceilMode: false },
  { kernel: [3, 3], stride: [2, 3], padding: [1, 1], dilation: [2, 2], ceilMode: true },
  { kernel: [1, 1], stride: [1, 1], padding: [0, 0], dilation: [1, 1], ceilMode: false },
];
const SHAPES = [
  [2, 3, 7, 9],
  [1, 2, 8, 8],
  [3, 5, 6],
];

describe('maxPool2d on contiguous CPU tensors (our kernel) against libtorch’s', () => {
  for (const dtype of ['float32', 'float64'] as const) {
    for (const window of WINDOWS) {
      for (const shape of SHAPES) {
        it(`${dtype} ${JSON.stringify(shape)} kernel ${window.kernel} stride ${window.stride} padding ${window.padding} dilation ${window.dilation}${window.ceilMode ? ' ceil' : ''}`, () => {
          const before = liveTensorCount();
          tidy(() => {
            manualSeed(shape.length * 7 + window.kernel[0]!);
            const input = awkward(shape, dtype);
            expect(input.isContiguous).toBe(true);
            const reference = strided(input);
            expect(reference.isContiguous).toBe(false);
            const ours = pool(input, window);
            const theirs = pool(reference, window);
            expect(ours.values.shape).toEqual(theirs.values.shape);
            expect(bits(ours.values)).toEqual(bits(theirs.values));
            expect(ours.indices.dtype).toBe('int64');
            expect(bits(ours.indices)).toEqual(bits(theirs.indices));
          });
          expect(liveTensorCount()).toBe(before);
        });
      }
    }
  }

  it('gives libtorch’s gradient and second derivative', () => {
    const before = liveTensorCount();
    tidy(() => {
      manualSeed(3);
      for (const window of WINDOWS) {
        const { kernel, ...options } = window;
        // Small integers: ties decide which input gets the gradient.
        const base = randint(-3, 4, [2, 3, 9, 8]).to('float64');
        let weight: Tensor | undefined;
        const [ours, theirs] = [base, strided(base)].map((values) => {
          const input = new Variable(values, true);
          const out = F.maxPool2d(input, kernel, options) as Tensor;
          weight ??= randn(out.shape, { dtype: 'float64' });
          const [gradient] = grad(out.mul(out).mul(weight).sum(), input, { createGraph: true });
          const [second] = grad(gradient!.mul(gradient!).sum(), input);
          return { gradient: gradient!, second: second! };
        });
        expect(ours!.gradient.abs().sum().item()).toBeGreaterThan(0);
        expect(bits(ours!.gradient)).toEqual(bits(theirs!.gradient));
        expect(bits(ours!.second)).toEqual(bits(theirs!.second));
      }
    });
    expect(liveTensorCount()).toBe(before);
  });

  it('leaves a tensor without grad, and other layouts, dtypes and devices to libtorch with the same values', () => {
    const before = liveTensorCount();
    tidy(() => {
      manualSeed(4);
      const input = awkward([2, 4, 6, 6], 'float32');
      const plain = F.maxPool2d(input, 2) as Tensor;
      expect(bits(plain)).toEqual(bits(F.maxPool2d(strided(input), 2) as Tensor));
      const half = F.maxPool2d(input.to('float64'), 3, { stride: 1, padding: 1 }) as Tensor;
      expect(bits(half)).toEqual(
        bits(F.maxPool2d(strided(input.to('float64')), 3, { stride: 1, padding: 1 }) as Tensor),
      );
    });
    expect(liveTensorCount()).toBe(before);
  });
});
