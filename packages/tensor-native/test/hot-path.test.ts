// The per-op fast paths: integer lists read in place by the addon, scopes that skip the
// survivor lookup when there are none, and tensors owned by the caller waiting in a nursery
// before the garbage-collection safety net watches them. Each must give the same results and
// errors as the plain paths.
import { caught } from '@flodl/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  arange,
  beginScope,
  type Device,
  endScope,
  getDefaultDevice,
  keep,
  liveTensorCount,
  ones,
  rand,
  runWithAutocast,
  setDefaultDevice,
  Tensor,
  tidy,
} from '../src/index.js';
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
      // @ts-expect-error: a Float32Array is not a list the addon reads
      caught(() => native.reshape(x._h, new Float32Array([2, 3])), 'ERR_INVALID_ARGUMENT');
    });
  });

  it('the addon reads sizes passed as numbers, and refuses one that is not an integer', () => {
    const native = nativeOps('reshape', 'view', 'permute', 'expand');
    tidy(() => {
      const x = arange(0, 24);
      expect(new Tensor(native.reshape(x._h, 2, 3, 4)).shape).toEqual([2, 3, 4]);
      expect(new Tensor(native.view(x._h, -1, 6)).shape).toEqual([4, 6]);
      expect(new Tensor(native.permute(native.reshape(x._h, 2, 3, 4), 2, 0, 1)).shape).toEqual([4, 2, 3]);
      expect(new Tensor(native.expand(ones([1, 3])._h, 5, -1)).shape).toEqual([5, 3]);
      const error = caught(() => native.reshape(x._h, 4, 6.5), 'ERR_INVALID_ARGUMENT');
      expect(error.message).toMatch(/argument 2: expected an integer/);
      // @ts-expect-error: a string is not a size
      caught(() => native.reshape(x._h, 4, '6'), 'ERR_INVALID_ARGUMENT');
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

// Whole-tensor sum and mean and indexSelect on plain CPU tensors call libtorch's CPU kernel
// directly; a tensor that requires grad takes the dispatcher. Both must agree in values,
// dtypes and errors, and the direct results must be ordinary tensors.
// The CUDA tier runs this file with CUDA as the default device: these cases are the CPU's.
describe('direct CPU kernels', () => {
  let device: Device;
  beforeAll(() => {
    device = getDefaultDevice();
    setDefaultDevice('cpu');
  });
  afterAll(() => setDefaultDevice(device));

  it('sum and mean of every dtype match the dispatched path and promote as PyTorch does', () => {
    tidy(() => {
      const values = rand([5, 7]).mul(10).sub(5);
      for (const dtype of ['float32', 'float64'] as const) {
        const x = values.to({ dtype });
        const tracked = x.clone().requiresGrad_();
        const layouts = [(t: Tensor) => t, (t: Tensor) => t.t(), (t: Tensor) => t.narrow(1, 2, 3)];
        for (const layout of layouts) {
          expect(layout(x).sum().item()).toBe(layout(tracked).sum().item());
          expect(layout(x).mean().item()).toBe(layout(tracked).mean().item());
          expect(layout(x).sum().dtype).toBe(dtype);
          for (const [dim, keepdim] of [
            [0, false],
            [1, true],
            [[0, 1], false],
            [-1, true],
          ] as const) {
            const direct = layout(x).sum(dim as number | number[], keepdim);
            expect(direct.shape).toEqual(layout(tracked).sum(dim as number | number[], keepdim).shape);
            expect(direct.toArray()).toEqual(
              layout(tracked)
                .sum(dim as number | number[], keepdim)
                .detach()
                .toArray(),
            );
            expect(
              layout(x)
                .mean(dim as number | number[], keepdim)
                .toArray(),
            ).toEqual(
              layout(tracked)
                .mean(dim as number | number[], keepdim)
                .detach()
                .toArray(),
            );
          }
        }
        expect(x.sum(undefined, false, { dtype: 'float64' }).dtype).toBe('float64');
        expect(x.sum(undefined, false, { dtype: 'float64' }).item()).toBe(
          tracked.sum(undefined, false, { dtype: 'float64' }).item(),
        );
        expect(x.mean(undefined, false, { dtype: 'float64' }).item()).toBe(
          tracked.mean(undefined, false, { dtype: 'float64' }).item(),
        );
      }
      const ints = Tensor.from(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        undefined,
        { dtype: 'int32' },
      );
      expect(ints.sum().dtype).toBe('int64');
      expect(ints.sum().item()).toBe(21);
      const flags = Tensor.from([true, false, true, true]);
      expect(flags.sum().dtype).toBe('int64');
      expect(flags.sum().item()).toBe(3);
      expect(Tensor.from([200, 100], undefined, { dtype: 'uint8' }).sum().item()).toBe(300);
      expect(ones([0]).sum().item()).toBe(0);
      expect(Number.isNaN(ones([0]).mean().item() as number)).toBe(true);
      expect(caught(() => ints.mean(), 'ERR_DTYPE').message).toMatch(/mean/);
      expect(ints.sum(1).toArray()).toEqual([6, 15]);
      caught(() => ints.mean(0), 'ERR_DTYPE');
    });
  });

  it('a direct result is a fresh tensor: no view of its input, differentiable later', () => {
    tidy(() => {
      const x = rand([4, 4]);
      const total = x.sum();
      expect(total.shape).toEqual([]);
      expect(total.requiresGrad).toBe(false);
      total.requiresGrad_();
      total.mul(3).backward();
      expect(total.grad?.item()).toBe(3);
      x.mul_(2);
      expect(total.item()).not.toBe(x.sum().item());
      const picked = x.indexSelect(0, Tensor.from([3, 0], undefined, { dtype: 'int64' }));
      picked.fill_(7);
      expect(x.select(0, 3).sum().item()).not.toBe(28);
    });
  });

  it('indexSelect matches the dispatched path on every layout and refuses a bad index alike', () => {
    tidy(() => {
      const x = rand([6, 5]);
      const index = Tensor.from([4, 0, 2, 2], undefined, { dtype: 'int64' });
      const tracked = x.clone().requiresGrad_();
      for (const dim of [0, 1, -1]) {
        expect(x.indexSelect(dim, index).toArray()).toEqual(
          tracked.indexSelect(dim, index).detach().toArray(),
        );
        expect(x.t().indexSelect(dim, index).toArray()).toEqual(
          tracked.t().indexSelect(dim, index).detach().toArray(),
        );
      }
      const outside = Tensor.from([0, 9], undefined, { dtype: 'int64' });
      const direct = caught(() => x.indexSelect(0, outside));
      const dispatched = caught(() => tracked.indexSelect(0, outside));
      expect(direct.code).toBe(dispatched.code);
    });
  });

  it('under CPU autocast the dispatcher still decides', () => {
    tidy(() => {
      const x = rand([3, 3]);
      const plain = x.sum().item();
      const cast = runWithAutocast('cpu', 'bfloat16', true, () => x.sum());
      expect(cast.item()).toBe(plain);
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
