// The per-op fast paths: integer lists read in place by the addon, scopes that skip the
// survivor lookup when there are none, and tensors owned by the caller waiting in a nursery
// before the garbage-collection safety net watches them. Each must give the same results and
// errors as the plain paths.
import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { arange, beginScope, endScope, keep, liveTensorCount, ones, Tensor, tidy } from '../src/index.js';
import { nativeOps } from '../src/internal/native-ops.js';

describe('integer lists', () => {
  it('reshape, view, permute and expand take every list length, across the shared-list limit', () => {
    tidy(() => {
      const x = arange(0, 512);
      for (let rank = 1; rank <= 9; rank++) {
        const sizes = [...Array.from({ length: rank - 1 }, () => 2), 512 / 2 ** (rank - 1)];
        const reshaped = x.reshape(sizes);
        expect(reshaped.shape).toEqual(sizes);
        expect(x.view(...sizes).shape).toEqual(sizes);
        const order = Array.from({ length: rank }, (_, k) => rank - 1 - k);
        expect(reshaped.permute(order).shape).toEqual([...sizes].reverse());
      }
      expect(ones([1, 3]).expand(4, 3).shape).toEqual([4, 3]);
      expect(arange(0, 1).reshape([]).shape).toEqual([]);
      // The values follow the shape, not a list left over from an earlier call.
      expect(x.reshape(8, 64).reshape(64, 8).select(0, 1).toArray()).toEqual([8, 9, 10, 11, 12, 13, 14, 15]);
    });
  });

  it('the addon reads a Float64Array list and refuses one that holds non-integers', () => {
    const native = nativeOps('reshape', 'free');
    tidy(() => {
      const x = arange(0, 6);
      const handle = native.reshape(x._h, new Float64Array([2, 3]));
      expect(new Tensor(handle).shape).toEqual([2, 3]);
      const error = caught(() => native.reshape(x._h, new Float64Array([2.5, 2])), 'ERR_INVALID_ARGUMENT');
      expect(error.message).toMatch(/an array of integers/);
      caught(() => native.reshape(x._h, new Float32Array([2, 3])), 'ERR_INVALID_ARGUMENT');
    });
  });

  it('bad shapes are still refused in TS terms', () => {
    tidy(() => {
      const x = arange(0, 6);
      expect(caught(() => x.reshape(4, 2), 'ERR_SHAPE').message).toMatch(/same number of elements/);
      caught(() => x.reshape(2, 1.5), 'ERR_INVALID_ARGUMENT');
    });
  });
});

describe('scopes', () => {
  it('many scopes in a row free exactly their own tensors and hand survivors to the enclosing one', () => {
    const before = liveTensorCount();
    const outer = beginScope('outer');
    const kept: Tensor[] = [];
    for (let round = 0; round < 200; round++) {
      const survivor = tidy(() => {
        for (let k = 0; k < round % 37; k++) ones([2]);
        return ones([1]);
      });
      kept.push(survivor);
    }
    expect(liveTensorCount()).toBe(before + 200);
    expect(kept.every((tensor) => tensor.isLive)).toBe(true);
    endScope(outer);
    expect(liveTensorCount()).toBe(before);
    expect(kept.some((tensor) => tensor.isLive)).toBe(false);
  });

  it('a kept tensor survives its scope between scopes that free everything', () => {
    const before = liveTensorCount();
    const scratch = () => {
      ones([3]);
      ones([3]);
    };
    for (let round = 0; round < 50; round++) tidy(scratch);
    let survivor: Tensor | undefined;
    tidy(() => {
      ones([3]);
      survivor = keep(ones([3]));
    });
    for (let round = 0; round < 50; round++) tidy(scratch);
    expect(survivor?.isLive).toBe(true);
    expect(liveTensorCount()).toBe(before + 1);
    survivor?.dispose();
    expect(liveTensorCount()).toBe(before);
  });
});

describe('tensors owned by the caller', () => {
  it('dispose frees the slot at once, whether or not the safety net watches the tensor yet', async () => {
    const before = liveTensorCount();
    for (let k = 0; k < 1000; k++) ones([4]).dispose();
    expect(liveTensorCount()).toBe(before);
    const watched = ones([4]);
    await new Promise((resolve) => setImmediate(resolve)); // the safety net watches it now
    watched.dispose();
    expect(watched.isLive).toBe(false);
    expect(liveTensorCount()).toBe(before);
  });
});
