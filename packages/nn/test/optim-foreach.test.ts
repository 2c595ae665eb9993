// The multi-tensor (foreach) steps against the per-parameter ones, bit for bit in float64 on the
// CPU (Adam and AdamW in float32 too, where the one-pass CPU kernel takes them): SGD, Adam,
// AdamW, RMSprop and Adagrad in every variant, zeroGrad in one call, and clipGradNorm_ against the per-gradient
// computation it replaced.
import {
  aten,
  buildInfo,
  type DType,
  keep,
  liveTensorCount,
  manualSeed,
  randn,
  stack,
  type Tensor,
  tidy,
  zeros,
} from '@flodl/tensor-native';
import { expectFlodlError } from '@flodl/testing';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { clipGradNorm_ } from '../src/clip.js';
import { Linear } from '../src/layers/linear.js';
import {
  Adagrad,
  Adam,
  AdamW,
  NAdam,
  type Optimizer,
  RAdam,
  RMSprop,
  type RMSpropState,
  SGD,
} from '../src/optim/index.js';

const SHAPES = [[5, 3], [3], [], [2, 4, 2]];

/** Leaves (float64 unless asked) with the same random start for every call with the same seed. */
function leaves(seed: number, dtype: DType = 'float64', shapes: number[][] = SHAPES): Tensor[] {
  manualSeed(seed);
  return shapes.map((shape) => keep(tidy(() => randn(shape, { dtype, device: 'cpu' }).requiresGrad_())));
}

/** The bytes of a floating tensor, for bit-for-bit comparisons. */
function bytes(tensor: Tensor): Uint8Array {
  return tidy(() => {
    const values = tensor.detach().toTypedArray() as Float32Array | Float64Array;
    return new Uint8Array(values.buffer.slice(values.byteOffset, values.byteOffset + values.byteLength));
  });
}

function disposeAll(tensors: readonly Tensor[]): void {
  for (const tensor of tensors) tensor.dispose();
}

type AnyOptimizer = Optimizer<any, any>;
type Make = (params: Tensor[], options: object) => AnyOptimizer;

/**
 * Steps a foreach and a per-parameter optimizer with the same gradients for `steps` steps (the
 * third parameter has none on the first steps and every third, so it is skipped and its state
 * starts late) and expects every parameter and state tensor equal bit for bit.
 */
function expectSameSteps(
  make: Make,
  options: object,
  steps = 12,
  dtype: DType = 'float64',
  shapes: number[][] = SHAPES,
): void {
  const foreach = leaves(1, dtype, shapes);
  const single = leaves(1, dtype, shapes);
  const multi = make(foreach, { ...options, foreach: true });
  const plain = make(single, { ...options, foreach: false });
  manualSeed(7);
  for (let step = 0; step < steps; step++) {
    tidy(() => {
      shapes.forEach((shape, k) => {
        const skip = k === 2 && (step < 2 || step % 3 === 0);
        const gradient = skip ? null : randn(shape, { dtype, device: 'cpu' });
        foreach[k]!.setGrad(gradient === null ? null : gradient.clone());
        single[k]!.setGrad(gradient === null ? null : gradient.clone());
      });
    });
    multi.step();
    plain.step();
  }
  foreach.forEach((param, k) => {
    expect(bytes(param), `parameter ${k}`).toEqual(bytes(single[k]!));
    const state = multi.getState(param) as Record<string, unknown>;
    const other = plain.getState(single[k]!) as Record<string, unknown>;
    expect(Object.keys(state).sort()).toEqual(Object.keys(other).sort());
    for (const [key, value] of Object.entries(state)) {
      if (value === null || typeof value === 'number') expect(value, key).toBe(other[key]);
      else expect(bytes(value as Tensor), `${key} of parameter ${k}`).toEqual(bytes(other[key] as Tensor));
    }
  });
  multi.dispose();
  plain.dispose();
  disposeAll([...foreach, ...single]);
}

const sgd: Make = (params, options) => new SGD(params, { lr: 0.1, ...options });
const adam: Make = (params, options) => new Adam(params, options);
const adamW: Make = (params, options) => new AdamW(params, options);
const rmsprop: Make = (params, options) => new RMSprop(params, options);
const adagrad: Make = (params, options) => new Adagrad(params, options);
const nadam: Make = (params, options) => new NAdam(params, options);
const radam: Make = (params, options) => new RAdam(params, options);

afterEach(() => {
  vi.restoreAllMocks();
});

describe('foreach SGD', () => {
  it.each([
    ['plain', {}],
    ['weight decay, maximize', { weightDecay: 0.1, maximize: true }],
    ['momentum', { momentum: 0.9 }],
    ['momentum, dampening, weight decay', { momentum: 0.5, dampening: 0.3, weightDecay: 0.01 }],
    [
      'nesterov, weight decay, maximize',
      { momentum: 0.9, nesterov: true, weightDecay: 0.05, maximize: true },
    ],
  ])('equals the per-parameter update bit for bit in float64 (%s)', (_name, options) => {
    expectSameSteps(sgd, options);
  });
});

describe('foreach Adam and AdamW', () => {
  it.each([
    ['Adam', adam, {}],
    ['Adam', adam, { weightDecay: 0.1, amsgrad: true }],
    ['Adam', adam, { maximize: true, betas: [0.8, 0.99], eps: 1e-6, lr: 0.01 }],
    ['AdamW', adamW, {}],
    ['AdamW', adamW, { weightDecay: 0.3, amsgrad: true, maximize: true }],
    ['AdamW', adamW, { weightDecay: 0, lr: 0.05 }],
  ] as const)(
    '%s equals the per-parameter update bit for bit in float64 (case %#)',
    (_name, make, options) => {
      expectSameSteps(make, options);
    },
  );
});

describe('foreach RMSprop, Adagrad, NAdam and RAdam', () => {
  it.each([
    ['RMSprop, float64', rmsprop, {}, 'float64'],
    ['RMSprop, float64', rmsprop, { weightDecay: 0.1, maximize: true, alpha: 0.9, eps: 1e-6 }, 'float64'],
    ['RMSprop, float64', rmsprop, { momentum: 0.9, lr: 0.001 }, 'float64'],
    ['RMSprop, float64', rmsprop, { centered: true, momentum: 0.5, weightDecay: 0.01 }, 'float64'],
    ['RMSprop, float32', rmsprop, { centered: true, maximize: true }, 'float32'],
    ['Adagrad, float64', adagrad, {}, 'float64'],
    [
      'Adagrad, float64',
      adagrad,
      { lrDecay: 0.1, weightDecay: 0.2, initialAccumulatorValue: 0.5 },
      'float64',
    ],
    ['Adagrad, float32', adagrad, { maximize: true, eps: 1e-3, lrDecay: 0.01 }, 'float32'],
    ['NAdam, float64', nadam, {}, 'float64'],
    ['NAdam, float64', nadam, { weightDecay: 0.1, momentumDecay: 0.01, betas: [0.8, 0.99] }, 'float64'],
    ['NAdam, float32', nadam, { lr: 0.01, eps: 1e-6 }, 'float32'],
    ['RAdam, float64', radam, {}, 'float64'],
    ['RAdam, float64', radam, { weightDecay: 0.1, betas: [0.5, 0.9] }, 'float64'],
    ['RAdam, float32', radam, { lr: 0.01, eps: 1e-6, betas: [0.9, 0.99] }, 'float32'],
  ] as const)('%s: equals the per-parameter update bit for bit (case %#)', (_name, make, options, dtype) => {
    expectSameSteps(make, options, 12, dtype);
  });

  it('creates the state a group switches on later (momentum, centered) as the per-parameter step does', () => {
    const foreach = leaves(1, 'float64', SHAPES);
    const single = leaves(1, 'float64', SHAPES);
    const multi = new RMSprop(foreach, { foreach: true });
    const plain = new RMSprop(single, { foreach: false });
    manualSeed(3);
    for (let step = 0; step < 6; step++) {
      if (step === 3)
        for (const optimizer of [multi, plain]) {
          optimizer.paramGroups[0]!.momentum = 0.9;
          optimizer.paramGroups[0]!.centered = true;
        }
      tidy(() => {
        for (const [k, shape] of SHAPES.entries()) {
          const gradient = randn(shape, { dtype: 'float64', device: 'cpu' });
          foreach[k]!.setGrad(gradient.clone());
          single[k]!.setGrad(gradient.clone());
        }
      });
      multi.step();
      plain.step();
    }
    for (const [k, param] of foreach.entries()) {
      expect(bytes(param), `parameter ${k}`).toEqual(bytes(single[k]!));
      const state = multi.getState(param) as RMSpropState;
      expect(bytes(state.momentumBuffer!)).toEqual(
        bytes((plain.getState(single[k]!) as RMSpropState).momentumBuffer!),
      );
      expect(bytes(state.gradAvg!)).toEqual(bytes((plain.getState(single[k]!) as RMSpropState).gradAvg!));
    }
    multi.dispose();
    plain.dispose();
    disposeAll([...foreach, ...single]);
  });

  it('takes one native call per group', () => {
    const params = leaves(1, 'float32', SHAPES);
    const spy = vi.spyOn(aten, 'call');
    const optimizers = [
      new RMSprop(params, { momentum: 0.9 }),
      new Adagrad(params),
      new NAdam(params),
      new RAdam(params),
    ];
    for (const param of params) param.setGrad(zeros(param.shape, { dtype: 'float32', device: 'cpu' }));
    for (const optimizer of optimizers) optimizer.step();
    const names = spy.mock.calls.map(([name]) => name);
    expect(names.filter((name) => name === 'foreachRmsprop')).toHaveLength(1);
    expect(names.filter((name) => name === 'foreachAdagrad')).toHaveLength(1);
    expect(names.filter((name) => name === 'foreachNadam')).toHaveLength(1);
    expect(names.filter((name) => name === 'foreachRadam')).toHaveLength(1);
    for (const optimizer of optimizers) optimizer.dispose();
    disposeAll(params);
  });

  it('refuses state lists that do not match the parameters, with a typed error', () => {
    const params = leaves(1, 'float32', SHAPES.slice(0, 2));
    for (const param of params) param.setGrad(zeros(param.shape, { dtype: 'float32', device: 'cpu' }));
    const one = [zeros(params[0]!.shape, { dtype: 'float32', device: 'cpu' })];
    const bad = [
      () =>
        aten.call(
          'foreachRmsprop',
          params,
          undefined,
          one,
          undefined,
          undefined,
          0.01,
          0.99,
          1e-8,
          0,
          0,
          false,
          false,
        ),
      () =>
        aten.call(
          'foreachRmsprop',
          params,
          undefined,
          [...one, ...one],
          one,
          undefined,
          0.01,
          0.99,
          1e-8,
          0,
          0.9,
          false,
          false,
        ),
      () => aten.call('foreachAdagrad', params, undefined, one, [0.01, 0.01], 0, 1e-10, false),
      () => aten.call('foreachAdagrad', params, undefined, [...one, ...one], [0.01], 0, 1e-10, false),
      () =>
        aten.call(
          'foreachNadam',
          params,
          undefined,
          [...one, ...one],
          one,
          [1, 1],
          [1, 1],
          [1, 1],
          0.9,
          0.999,
          0,
          1e-8,
        ),
      () =>
        aten.call(
          'foreachRadam',
          params,
          undefined,
          [...one, ...one],
          [...one, ...one],
          [1, 1],
          [1],
          [0, 0],
          1e-3,
          0.9,
          0.999,
          0,
          1e-8,
        ),
    ];
    for (const call of bad) expectFlodlError(call, 'ERR_INVALID_ARGUMENT');
    disposeAll([...params, ...one]);
  });
});

/** Shapes from one element to a few lanes' worth and one past libtorch's parallel grain. */
const KERNEL_SHAPES = [[64, 64], [10], [], [7, 5], [33000]];

describe('the one-pass CPU Adam kernel', () => {
  const kernels = {
    float32: aten.call('adamOnePassKernel', zeros([1], { dtype: 'float32', device: 'cpu' })) as string | null,
    float64: aten.call('adamOnePassKernel', zeros([1], { dtype: 'float64', device: 'cpu' })) as string | null,
  };

  it('is one that libtorch 1.13 on x86-64 rounds like: both a + alpha*b and addcmul fused', () => {
    expect(aten.call('adamOnePassKernel', zeros([1], { dtype: 'float16', device: 'cpu' }))).toBeNull();
    for (const kernel of Object.values(kernels))
      expect([null, 'both', 'addOnly', 'neither']).toContain(kernel);
    if (buildInfo().torchVersion.startsWith('1.13') && process.arch === 'x64') {
      expect(kernels).toEqual({ float32: 'both', float64: 'both' });
    }
  });

  it.each([
    ['Adam', adam, {}, 'float32'],
    ['Adam', adam, { weightDecay: 0.1, amsgrad: true, maximize: true }, 'float32'],
    ['AdamW', adamW, { weightDecay: 0.3, amsgrad: true, lr: 0.01 }, 'float32'],
    ['Adam', adam, { betas: [0.5, 0.9], eps: 1e-3 }, 'float64'],
    ['AdamW', adamW, { maximize: true }, 'float64'],
  ] as const)(
    '%s equals the per-parameter update bit for bit (case %#, %s)',
    (_name, make, options, dtype) => {
      expectSameSteps(make, options, 6, dtype, KERNEL_SHAPES);
    },
  );
});

describe('the foreach option', () => {
  it('takes one native call per group by default and per-parameter ops with foreach: false', () => {
    const params = leaves(2);
    const spy = vi.spyOn(aten, 'call');
    const optimizer = new Adam([{ params: params.slice(0, 2) }, { params: params.slice(2), foreach: false }]);
    tidy(() => {
      for (const param of params) param.setGrad(param.detach().mul(2));
    });
    optimizer.step();
    const calls = spy.mock.calls.map(([name]) => name);
    expect(calls.filter((name) => name === 'foreachAdamExact')).toHaveLength(1);
    expect(spy.mock.calls.find(([name]) => name === 'foreachAdamExact')![1]).toEqual(params.slice(0, 2));
    // The per-parameter group still moved.
    expect(optimizer.getState(params[3]!)!.step).toBe(1);
    expect(optimizer.paramGroups.map((group) => group.foreach)).toEqual([null, false]);
    optimizer.dispose();
    disposeAll(params);
  });

  it('keeps the live tensor count flat over foreach steps with momentum', () => {
    const layer = new Linear(8, 4, { dtype: 'float64', device: 'cpu' });
    const optimizer = new SGD(layer.parameters(), { lr: 0.01, momentum: 0.9 });
    const input = keep(randn([16, 8], { dtype: 'float64', device: 'cpu' }));
    const step = () =>
      tidy(() => {
        optimizer.zeroGrad();
        layer.forward(input).square().mean().backward();
        optimizer.step();
      });
    step();
    const live = liveTensorCount();
    for (let k = 0; k < 50; k++) step();
    expect(liveTensorCount()).toBe(live);
    optimizer.dispose();
    layer.dispose();
    input.dispose();
  });

  it('the native steps refuse lists that do not match, naming the argument', () => {
    const params = leaves(6);
    tidy(() => params[0]!.setGrad(params[0]!.detach().clone()));
    // params[1] has no gradient: the step reads every parameter's own.
    expectFlodlError(
      () => aten.call('foreachSgd', params.slice(0, 2), undefined, undefined, 0.1, 0, 0, 0, false, false),
      'ERR_INVALID_ARGUMENT',
    );
    expectFlodlError(
      () => aten.call('foreachSgd', params.slice(0, 1), undefined, [], 0.1, 0.9, 0, 0, false, false),
      'ERR_INVALID_ARGUMENT',
    );
    expectFlodlError(
      () =>
        aten.call(
          'foreachAdamExact',
          params.slice(0, 1),
          undefined,
          [],
          [],
          undefined,
          [1],
          [1],
          1e-3,
          0.9,
          0.999,
          0,
          1e-8,
          false,
          false,
          false,
        ),
      'ERR_INVALID_ARGUMENT',
    );
    disposeAll(params);
  });

  it('rejects a foreach option that is not a boolean or null', () => {
    const params = leaves(3);
    expect(() => new SGD(params, { lr: 0.1, foreach: 'yes' as never })).toThrow(/foreach/);
    expect(() => new AdamW(params, { foreach: 1 as never })).toThrow(/foreach/);
    disposeAll(params);
  });
});

describe('zeroGrad in one call', () => {
  it('zeroes in place, cuts a createGraph gradient from its graph, leaves none as none', () => {
    const params = leaves(4);
    const optimizer = new SGD(params, { lr: 0.1 });
    tidy(() =>
      params
        .slice(0, 3)
        .map((param) => param.pow(3).sum())
        .reduce((a, b) => a.add(b))
        .backward(undefined, { createGraph: true }),
    );
    const before = params.slice(0, 3).map((param) => keep(param.grad!));
    expect(before.every((grad) => grad.gradFn !== null)).toBe(true);
    optimizer.zeroGrad(false);
    params.slice(0, 3).forEach((param, k) => {
      tidy(() => {
        const grad = param.grad!;
        expect(grad.sharesMemoryWith(before[k]!)).toBe(true);
        expect(grad.gradFn).toBeNull();
        expect(grad.abs().sum().item()).toBe(0);
      });
    });
    expect(params[3]!.grad).toBeNull();
    optimizer.zeroGrad();
    expect(params.map((param) => param.grad)).toEqual([null, null, null, null]);
    disposeAll(before);
    optimizer.dispose();
    disposeAll(params);
  });

  it('Module.zeroGrad clears every parameter the same way', () => {
    const layer = new Linear(3, 2, { device: 'cpu' });
    tidy(() =>
      layer
        .forward(randn([4, 3], { device: 'cpu' }))
        .sum()
        .backward(),
    );
    layer.zeroGrad(false);
    expect(layer.parameters().map((param) => tidy(() => param.grad!.abs().sum().item()))).toEqual([0, 0]);
    layer.zeroGrad();
    expect(layer.parameters().map((param) => param.grad)).toEqual([null, null]);
    expect(() => layer.zeroGrad('no' as never)).toThrow(/setToNone/);
    layer.dispose();
  });
});

/** clipGradNorm_ as it was computed before, one op per gradient (PyTorch's own formulation). */
function clipOneByOne(grads: Tensor[], maxNorm: number, p: number): number {
  return tidy(() => {
    const total =
      p === Number.POSITIVE_INFINITY
        ? stack(grads.map((grad) => grad.abs().max())).max()
        : stack(grads.map((grad) => grad.norm(p))).norm(p);
    const coefficient = total.add(1e-6).reciprocal().mul(maxNorm).clamp(undefined, 1.0);
    for (const grad of grads) grad.mul_(coefficient);
    return total.item();
  });
}

describe('clipGradNorm_ in two calls', () => {
  it.each([
    [2, 0.5],
    [2, 100],
    [1, 0.3],
    [3.5, 1],
    [0.5, 2],
    [Number.POSITIVE_INFINITY, 0.25],
    [Number.NEGATIVE_INFINITY, 0.01],
  ])('equals the per-gradient computation bit for bit in float64 (p %s, maxNorm %s)', (p, maxNorm) => {
    const params = leaves(5);
    const copies = leaves(5);
    manualSeed(11);
    tidy(() => {
      SHAPES.forEach((shape, k) => {
        if (k === 1) return; // one parameter without a gradient
        const gradient = randn(shape, { dtype: 'float64', device: 'cpu' });
        params[k]!.setGrad(gradient.clone());
        copies[k]!.setGrad(gradient.clone());
      });
    });
    const total = clipGradNorm_(params, maxNorm, p);
    const grads = copies.flatMap((param) => (param.grad === null ? [] : [keep(param.grad)]));
    expect(total).toBe(clipOneByOne(grads, maxNorm, p));
    params.forEach((param, k) => {
      if (k === 1) expect(param.grad).toBeNull();
      else expect(bytes(param.grad!), `gradient ${k}`).toEqual(bytes(copies[k]!.grad!));
    });
    disposeAll([...grads, ...params, ...copies]);
  });
});
