import { aten, cuda, randn, tidy } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { Adam, AdamW } from '../src/index.js';

describe('fused Adam / AdamW', () => {
  it('refuses CPU parameters or a libtorch without the kernel, with ERR_DEVICE', () =>
    tidy(() => {
      const weight = randn([3], { device: 'cpu' }).requiresGrad_();
      const optimizer = new Adam([weight], { fused: true });
      weight.square().sum().backward();
      expect(() => optimizer.step()).toThrowError(expect.objectContaining({ code: 'ERR_DEVICE' }));
      optimizer.dispose();
    }));

  it.skipIf(!cuda.isAvailable() || !aten.has('fusedAdam'))('matches the per-parameter path on CUDA', () =>
    tidy(() => {
      for (const Kind of [Adam, AdamW]) {
        for (const amsgrad of [false, true]) {
          const start = randn([64, 32], { device: 'cuda' });
          const fusedWeight = start.clone().requiresGrad_();
          const plainWeight = start.clone().requiresGrad_();
          const options = { lr: 1e-2, weightDecay: 0.1, amsgrad };
          const fused = new Kind([fusedWeight], { ...options, fused: true });
          const plain = new Kind([plainWeight], options);
          for (let step = 0; step < 20; step++) {
            for (const [weight, optimizer] of [
              [fusedWeight, fused],
              [plainWeight, plain],
            ] as const) {
              tidy(() => {
                optimizer.zeroGrad();
                weight.sin().mul(weight).sum().backward();
                optimizer.step();
              });
            }
          }
          expect(
            fusedWeight.allclose(plainWeight, { rtol: 1e-5, atol: 1e-6 }),
            `${Kind.name} amsgrad=${amsgrad}`,
          ).toBe(true);
          fused.dispose();
          plain.dispose();
        }
      }
    }),
  );
});
