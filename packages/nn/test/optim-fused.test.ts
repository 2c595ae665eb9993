import { aten, cuda, randn, type Tensor, tidy } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { Adam, AdamW, type Optimizer } from '../src/index.js';

const fusedAdam = cuda.isAvailable() && aten.has('fusedAdam');
const fusedAdamW = cuda.isAvailable() && aten.has('fusedAdamW');

/** `steps` updates of `weight` by `optimizer` on a loss with a non-trivial gradient. */
function train(weight: Tensor, optimizer: Optimizer, steps: number): void {
  for (let step = 0; step < steps; step++) {
    tidy(() => {
      optimizer.zeroGrad();
      weight.sin().mul(weight).sum().backward();
      optimizer.step();
    });
  }
}

/** The bytes of `tensor`'s values (bit-for-bit comparisons). */
function bits(tensor: Tensor): Uint8Array {
  return tidy(() => {
    const values = tensor.detach().toTypedArray() as Float32Array | Float64Array;
    return new Uint8Array(values.buffer.slice(values.byteOffset, values.byteOffset + values.byteLength));
  });
}

/** How many native calls of each optimizer op one `step()` makes. */
function callsOf(optimizer: Optimizer, weight: Tensor): Record<string, number> {
  const counts: Record<string, number> = {};
  const original = aten.call;
  aten.call = ((name: string, ...args: unknown[]) => {
    counts[name] = (counts[name] ?? 0) + 1;
    return (original as (name: string, ...args: unknown[]) => unknown)(name, ...args);
  }) as typeof aten.call;
  try {
    train(weight, optimizer, 1);
  } finally {
    aten.call = original;
  }
  return counts;
}

describe('fused Adam / AdamW', () => {
  it('refuses CPU parameters or a libtorch without the kernel, with ERR_DEVICE', () =>
    tidy(() => {
      for (const Kind of [Adam, AdamW]) {
        const weight = randn([3], { device: 'cpu' }).requiresGrad_();
        const optimizer = new Kind([weight], { fused: true });
        weight.square().sum().backward();
        expect(() => optimizer.step()).toThrowError(expect.objectContaining({ code: 'ERR_DEVICE' }));
        optimizer.dispose();
      }
    }));

  it('checks the option: a boolean or null, never true beside foreach: true', () => {
    const weight = randn([3], { device: 'cpu' }).requiresGrad_();
    for (const fused of ['yes', 1, {}]) {
      expect(() => new Adam([weight], { fused } as never)).toThrowError(
        expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
      );
    }
    expect(() => new AdamW([weight], { fused: true, foreach: true })).toThrowError(
      expect.objectContaining({
        code: 'ERR_INVALID_ARGUMENT',
        message: expect.stringMatching(/fused and foreach/),
      }),
    );
    const optimizer = new Adam([weight], { fused: false, foreach: true });
    expect(() =>
      optimizer.addParamGroup({ params: [randn([2], { device: 'cpu' }).requiresGrad_()], fused: true }),
    ).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }));
    optimizer.dispose();
    weight.dispose();
  });

  it('defaults to the foreach step off CUDA: bit for bit the fused: false update', () =>
    tidy(() => {
      for (const Kind of [Adam, AdamW]) {
        const start = randn([16, 8], { dtype: 'float64', device: 'cpu' });
        const byDefault = start.clone().requiresGrad_();
        const unfused = start.clone().requiresGrad_();
        const first = new Kind([byDefault], { lr: 1e-2, weightDecay: 0.1 });
        const second = new Kind([unfused], { lr: 1e-2, weightDecay: 0.1, fused: false });
        expect(first.paramGroups[0]!.fused).toBeNull();
        train(byDefault, first, 5);
        train(unfused, second, 5);
        expect(bits(byDefault)).toEqual(bits(unfused));
        const calls = callsOf(first, byDefault);
        expect(calls).toMatchObject({ foreachAdamExact: 1 });
        expect(calls).not.toHaveProperty('fusedAdam');
        first.dispose();
        second.dispose();
      }
    }));

  it.skipIf(!fusedAdam)('matches the per-parameter path on CUDA', () =>
    tidy(() => {
      for (const Kind of fusedAdamW ? [Adam, AdamW] : [Adam]) {
        for (const amsgrad of [false, true]) {
          const start = randn([64, 32], { device: 'cuda' });
          const fusedWeight = start.clone().requiresGrad_();
          const plainWeight = start.clone().requiresGrad_();
          const options = { lr: 1e-2, weightDecay: 0.1, amsgrad };
          const fused = new Kind([fusedWeight], { ...options, fused: true });
          const plain = new Kind([plainWeight], { ...options, fused: false, foreach: false });
          train(fusedWeight, fused, 20);
          train(plainWeight, plain, 20);
          expect(
            fusedWeight.allclose(plainWeight, { rtol: 1e-5, atol: 1e-6 }),
            `${Kind.name} amsgrad=${amsgrad}`,
          ).toBe(true);
          expect(fused.getState(fusedWeight)?.step).toBe(20);
          fused.dispose();
          plain.dispose();
        }
      }
    }),
  );

  it.skipIf(!fusedAdam)('is the default on CUDA: bit for bit fused: true, one kernel call per group', () =>
    tidy(() => {
      for (const Kind of fusedAdamW ? [Adam, AdamW] : [Adam]) {
        const starts = [randn([32, 16], { device: 'cuda' }), randn([16], { device: 'cuda' })];
        const byDefault = starts.map((start) => start.clone().requiresGrad_());
        const asked = starts.map((start) => start.clone().requiresGrad_());
        const first = new Kind(byDefault, { lr: 1e-2 });
        const second = new Kind(asked, { lr: 1e-2, fused: true });
        for (const [weights, optimizer] of [
          [byDefault, first],
          [asked, second],
        ] as const) {
          for (let step = 0; step < 7; step++) {
            tidy(() => {
              optimizer.zeroGrad();
              weights[0]!.sin().sum().add(weights[1]!.square().sum()).backward();
              optimizer.step();
            });
          }
        }
        byDefault.forEach((weight, k) => {
          expect(bits(weight), `${Kind.name} parameter ${k}`).toEqual(bits(asked[k]!));
        });
        const op = Kind === AdamW ? 'fusedAdamW' : 'fusedAdam';
        expect(callsOf(first, byDefault[0]!)).toMatchObject({ [op]: 1 });
        // An explicit foreach keeps the multi-tensor step.
        const foreach = new Kind(byDefault, { foreach: true });
        expect(callsOf(foreach, byDefault[0]!)).not.toHaveProperty(op);
        for (const optimizer of [first, second, foreach]) optimizer.dispose();
      }
    }),
  );

  it.skipIf(!fusedAdam)('resumes from a loaded state as the run that never stopped, bit for bit', () =>
    tidy(() => {
      const start = randn([24, 12], { device: 'cuda' });
      const straight = start.clone().requiresGrad_();
      const resumed = start.clone().requiresGrad_();
      const through = new Adam([straight], { lr: 1e-2 });
      train(straight, through, 12);
      const optimizer = new Adam([resumed], { lr: 1e-2 });
      train(resumed, optimizer, 5);
      const saved = optimizer.stateDict();
      const weights = resumed.detach().clone();
      // Three steps past the save move the device counts on; loading the save must set them back.
      train(resumed, optimizer, 3);
      tidy(() => resumed.detach().copy_(weights));
      optimizer.loadStateDict(saved);
      train(resumed, optimizer, 7);
      expect(bits(resumed)).toEqual(bits(straight));
      expect(optimizer.getState(resumed)?.step).toBe(12);
      through.dispose();
      optimizer.dispose();
    }),
  );
});
