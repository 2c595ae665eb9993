import { liveTensorCount, Tensor, zeros } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { defaultCollate } from '../src/data/index.js';

describe('defaultCollate', () => {
  it('stacks samples position by position', () => {
    const before = liveTensorCount();
    const samples = [0, 1, 2].map((k) => [Tensor.from([k, k], [2], { dtype: 'float32' }), Tensor.from(k)]);
    const [x, y] = defaultCollate(samples, [10, 11, 12]);
    expect(x!.shape).toEqual([3, 2]);
    expect(x!.toArray()).toEqual([
      [0, 0],
      [1, 1],
      [2, 2],
    ]);
    expect(y!.toArray()).toEqual([0, 1, 2]);
    expect(y!.dtype).toBe('int64');
    for (const tensor of [...samples.flat(), x!, y!]) tensor.dispose();
    expect(liveTensorCount()).toBe(before);
  });

  it('names the dataset indices of inconsistent samples', () => {
    const a = [zeros([1, 28, 28]), zeros([])];
    const b = [zeros([1, 28, 27]), zeros([])];
    const c = [zeros([1, 28, 28])];
    const d = [zeros([1, 28, 28], { dtype: 'float64' }), zeros([])];
    expect(() => defaultCollate([a, b], [12, 1782])).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: defaultCollate: samples differ in shape at position 0
        expected: [1, 28, 28], as at index 12
        got: [1, 28, 27] at index 1782]
    `);
    expect(() => defaultCollate([a, c], [0, 5])).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: defaultCollate: samples differ in their number of tensors
        expected: 2 tensors, as the sample at index 0 has
        got: 1 tensors at index 5]
    `);
    expect(() => defaultCollate([a, d], [0, 9])).toThrow(
      expect.objectContaining({ code: 'ERR_DTYPE', got: 'float64 at index 9' }),
    );
    expect(() => defaultCollate([[]], [3])).toThrow(/the sample at index 3/);
    for (const tensor of [...a, ...b, ...c, ...d]) tensor.dispose();
  });
});
