import { Variable } from '@flodl/autograd';
import { cuda, randn, Tensor, tidy } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { autocast, GradScaler } from '../src/index.js';

describe('autocast', () => {
  it('runs matmul in bfloat16 on the CPU, keeps its float32 ops in float32, and restores the state', () =>
    tidy(() => {
      const a = randn([8, 8], { device: 'cpu' });
      const b = randn([8, 8], { device: 'cpu' });
      const [inside, reduced, nested] = autocast('bfloat16', () => [
        a.matmul(b).dtype,
        a.softmax(1).dtype, // softmax is on the CPU autocast list of float32 ops, as in PyTorch
        autocast('bfloat16', () => a.matmul(b).dtype, { enabled: false }),
      ]);
      expect(inside).toBe('bfloat16');
      expect(reduced).toBe('float32');
      expect(nested).toBe('float32');
      expect(a.matmul(b).dtype).toBe('float32');
      expect(() =>
        autocast('bfloat16', () => {
          throw new Error('boom');
        }),
      ).toThrow('boom');
      expect(a.matmul(b).dtype).toBe('float32');
    }));

  it('gradients flow back through autocast regions in the parameters’ dtype', () =>
    tidy(() => {
      const w = new Variable(randn([4, 4]), true);
      const loss = autocast('bfloat16', () => randn([2, 4]).matmul(w).float().square().mean());
      loss.backward();
      expect(w.grad!.dtype).toBe('float32');
    }));

  it('rejects dtypes the device cannot autocast to', () => {
    expect(() => autocast('float16', () => 0)).toThrowError(expect.objectContaining({ code: 'ERR_DTYPE' }));
    expect(() => autocast('bfloat16', () => 0, { device: 'tpu' as never })).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
    );
  });

  it.skipIf(!cuda.isAvailable())('runs matmul in float16 on CUDA', () =>
    tidy(() => {
      const a = randn([8, 8], { device: 'cuda' });
      expect(autocast('float16', () => a.matmul(a).dtype, { device: 'cuda' })).toBe('float16');
    }),
  );
});

class CountingOptimizer {
  steps = 0;
  constructor(readonly paramGroups: { params: Tensor[] }[]) {}
  step(): void {
    this.steps++;
  }
}

describe('GradScaler', () => {
  it('scales, unscales, skips steps with non-finite gradients and adapts the scale', () =>
    tidy(() => {
      const w = new Variable(Tensor.from([1, 2], undefined, { dtype: 'float32' }), true);
      const optimizer = new CountingOptimizer([{ params: [w] }]);
      const scaler = new GradScaler({ initScale: 1024, growthInterval: 2 });
      expect(scaler.getScale()).toBe(1024);
      scaler.scale(w.square().sum()).backward();
      expect(w.grad!.toArray()).toEqual([2048, 4096]);
      expect(scaler.step(optimizer)).toBe(true);
      expect(w.grad!.toArray()).toEqual([2, 4]);
      scaler.update();
      expect(scaler.getGrowthTracker()).toBe(1);
      w.zeroGrad();
      // An overflowing step: skipped, scale halved, growth count restarted.
      scaler.scale(w.mul(Number.POSITIVE_INFINITY).sum()).backward();
      expect(scaler.step(optimizer)).toBe(false);
      scaler.update();
      expect(optimizer.steps).toBe(1);
      expect(scaler.getScale()).toBe(512);
      expect(scaler.getGrowthTracker()).toBe(0);
      for (let k = 0; k < 2; k++) {
        w.zeroGrad();
        scaler.scale(w.sum()).backward();
        scaler.unscale_(optimizer);
        expect(() => scaler.unscale_(optimizer)).toThrowError(
          expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
        );
        scaler.step(optimizer);
        scaler.update();
      }
      expect(scaler.getScale()).toBe(1024);
      const restored = new GradScaler();
      restored.loadStateDict(scaler.stateDict());
      expect(restored.getScale()).toBe(1024);
    }));

  it('has PyTorch’s defaults and passes through when disabled', () =>
    tidy(() => {
      const scaler = new GradScaler();
      expect(scaler.stateDict()).toEqual({
        scale: 65536,
        growthFactor: 2,
        backoffFactor: 0.5,
        growthInterval: 2000,
        growthTracker: 0,
      });
      const off = new GradScaler({ enabled: false });
      const w = new Variable(Tensor.from([3], undefined, { dtype: 'float32' }), true);
      expect(off.scale(w).item()).toBe(3);
      const optimizer = new CountingOptimizer([{ params: [w] }]);
      expect(off.step(optimizer)).toBe(true);
      expect(() => new GradScaler({ growthFactor: 0.5 })).toThrowError(
        expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
      );
      expect(() => new GradScaler({ initscale: 2 } as never)).toThrowError(
        expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
      );
    }));
});
