import { describe, expect, it } from 'vitest';
import { arange, cat, liveTensorCount, Tensor, tidy, zeros } from '../src/index.js';

describe('smoke', () => {
  it('does arithmetic', () => {
    const a = Tensor.from(
      [
        [1, 2],
        [3, 4],
      ],
      undefined,
      { dtype: 'float32' },
    );
    const b = a.add(1).mul(a);
    expect(b.toArray()).toEqual([
      [2, 6],
      [12, 20],
    ]);
    expect(String(b)).toBe('tensor([[ 2.,  6.],\n        [12., 20.]])');
    expect(String(arange(5))).toBe('tensor([0, 1, 2, 3, 4])');
    expect(String(Tensor.from([1.5, 2.25], undefined, { dtype: 'float64' }))).toBe(
      'tensor([1.5000, 2.2500], dtype=torch.float64)',
    );
    const c = cat([a, a], 1);
    expect(c.shape).toEqual([2, 4]);
    const before = liveTensorCount();
    const kept = tidy(() => zeros([3]).add(1).sum());
    expect(liveTensorCount()).toBe(before + 1);
    kept.dispose();
    expect(liveTensorCount()).toBe(before);
  });
});
