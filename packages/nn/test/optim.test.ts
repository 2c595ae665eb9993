import { keep, liveTensorCount, Tensor, tidy, zeros } from '@flodl/tensor-native';
import { expectFlodlError } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { clipGradNorm_ } from '../src/clip.js';
import {
  Adagrad,
  Adam,
  AdamW,
  NAdam,
  type Optimizer,
  type OptimizerStateDict,
  RAdam,
  RMSprop,
  SGD,
} from '../src/optim/index.js';
import { readFixture } from './golden.js';

interface Encoded {
  shape: number[];
  data: number[];
}
interface GroupCase {
  params: number[];
  options: Record<string, unknown>;
}
interface OptimCase {
  name: string;
  optimizer: OptimizerName;
  options: Record<string, unknown>;
  groups?: GroupCase[];
  negateLoss?: boolean;
  setLr?: { step: number; lr: number };
  clipGradNorm?: { maxNorm: number; normType: number | 'inf' };
  checkpoints: Record<string, number[][]>;
  losses: number[];
}
interface OptimFixture {
  steps: number;
  inputs: Encoded;
  targets: Encoded;
  initial: (Encoded & { name: string })[];
  cases: OptimCase[];
}

const fixture = readFixture('optim.json') as OptimFixture;

// Each optimizer takes its own options type.
type AnyOptimizer = Optimizer<any, any>;
type OptimizerName = 'SGD' | 'Adam' | 'AdamW' | 'RMSprop' | 'Adagrad' | 'RAdam' | 'NAdam';
const OPTIMIZERS: Record<OptimizerName, (params: unknown, options: object) => AnyOptimizer> = {
  SGD: (params: unknown, options: object) => new SGD(params as Tensor[], options),
  Adam: (params: unknown, options: object) => new Adam(params as Tensor[], options),
  AdamW: (params: unknown, options: object) => new AdamW(params as Tensor[], options),
  RMSprop: (params: unknown, options: object) => new RMSprop(params as Tensor[], options),
  Adagrad: (params: unknown, options: object) => new Adagrad(params as Tensor[], options),
  RAdam: (params: unknown, options: object) => new RAdam(params as Tensor[], options),
  NAdam: (params: unknown, options: object) => new NAdam(params as Tensor[], options),
};

const float64 = (encoded: Encoded) => Tensor.from(Float64Array.from(encoded.data), encoded.shape);
const inputs = keep(float64(fixture.inputs));
const targets = keep(float64(fixture.targets));

/** Fresh float64 leaves holding the fixture's initial values: w1, b1, w2 and `unused`. */
function makeParams(): Tensor[] {
  return fixture.initial.map((encoded) => keep(float64(encoded).requiresGrad_()));
}

/** The fixture's loss, op for op as make-goldens-optim.py writes it. */
function lossOf(params: Tensor[]): Tensor {
  const [w1, b1, w2] = params as [Tensor, Tensor, Tensor];
  const hidden = inputs.matmul(w1).add(b1).tanh();
  const fit = hidden.matmul(w2).sub(targets).square().mean();
  return fit.add(w1.square().sum().mul(0.05)).add(w2.sin().sum().mul(0.1));
}

function build(testCase: OptimCase, params: Tensor[]): AnyOptimizer {
  const make = OPTIMIZERS[testCase.optimizer];
  if (testCase.groups === undefined) return make(params, testCase.options);
  const groups = testCase.groups.map((group) => ({
    ...group.options,
    params: group.params.map((index) => params[index]!),
  }));
  return make(groups, testCase.options);
}

/** One training step as the golden script takes it. */
function trainStep(optimizer: AnyOptimizer, params: Tensor[], testCase?: OptimCase): number {
  optimizer.zeroGrad();
  return tidy(() => {
    const loss = lossOf(params);
    const value = loss.item();
    (testCase?.negateLoss ? loss.neg() : loss).backward();
    const clip = testCase?.clipGradNorm;
    if (clip !== undefined)
      clipGradNorm_(params, clip.maxNorm, clip.normType === 'inf' ? Infinity : clip.normType);
    optimizer.step();
    return value;
  });
}

/** The largest |actual − expected| / max(|expected|, 1e-12) over all elements. */
function maxRelativeError(actual: Tensor, expected: readonly number[]): number {
  const values = actual.toTypedArray();
  expect(values.length).toBe(expected.length);
  let worst = 0;
  expected.forEach((target, k) => {
    const error = Math.abs(Number(values[k]) - target) / Math.max(Math.abs(target), 1e-12);
    worst = Math.max(worst, error);
  });
  return worst;
}

function disposeAll(tensors: Tensor[]): void {
  for (const tensor of tensors) tensor.dispose();
}

describe('optimizers against PyTorch 1.13 (float64, 50 steps)', () => {
  it.each(fixture.cases.map((testCase) => [testCase.name, testCase] as const))('%s', (_name, testCase) => {
    const params = makeParams();
    const optimizer = build(testCase, params);
    let worst = 0;
    for (let step = 1; step <= fixture.steps; step++) {
      if (testCase.setLr?.step === step) optimizer.setLr(testCase.setLr.lr);
      const loss = trainStep(optimizer, params, testCase);
      worst = Math.max(
        worst,
        Math.abs(loss - testCase.losses[step - 1]!) / Math.abs(testCase.losses[step - 1]!),
      );
      const expected = testCase.checkpoints[String(step)];
      if (expected === undefined) continue;
      params.forEach((param, k) => {
        worst = Math.max(worst, maxRelativeError(param, expected[k]!));
      });
    }
    // The contract is 1e-6; PyTorch's ops in PyTorch's order leave only 1-ulp differences
    // between V8's and glibc's pow (Adam-family bias corrections), so hold a far tighter line.
    expect(worst, `worst relative error of ${testCase.name}`).toBeLessThanOrEqual(1e-10);
    expect(params[3]!.grad).toBeNull();
    expect(optimizer.getState(params[3]!) === undefined || testCase.optimizer === 'Adagrad').toBe(true);
    optimizer.dispose();
    disposeAll(params);
  });
});

/** Representative option sets, one per optimizer, for the state-dict and leak tests. */
const RICH_CASES: [OptimizerName, Record<string, unknown>][] = [
  ['SGD', { lr: 0.03, momentum: 0.8, nesterov: true, weightDecay: 0.05 }],
  ['Adam', { lr: 0.01, amsgrad: true, weightDecay: 0.01 }],
  ['AdamW', { lr: 0.01, amsgrad: true }],
  ['RMSprop', { lr: 0.003, centered: true, momentum: 0.5, weightDecay: 0.02 }],
  ['Adagrad', { lr: 0.1, lrDecay: 0.01, initialAccumulatorValue: 0.1 }],
  ['RAdam', { lr: 0.01, weightDecay: 0.01 }],
  ['NAdam', { lr: 0.01, momentumDecay: 0.01 }],
];

function values(tensor: Tensor): number[] {
  return Array.from(tensor.toTypedArray() as Float64Array);
}

function copyParams(params: Tensor[]): Tensor[] {
  return params.map((param) => keep(tidy(() => param.detach().clone().requiresGrad_())));
}

function expectSameValues(actual: Tensor[], expected: Tensor[]): void {
  actual.forEach((tensor, k) => {
    expect(values(tensor), `parameter ${k}`).toEqual(values(expected[k]!));
  });
}

function disposeStateDict(stateDict: OptimizerStateDict): void {
  for (const entry of Object.values(stateDict.state)) {
    for (const value of Object.values(entry)) if (value instanceof Tensor) value.dispose();
  }
}

describe('state dicts', () => {
  it.each(RICH_CASES)(
    '%s: save after 25 steps, load into a fresh optimizer, continue = uninterrupted',
    (name, options) => {
      const make = OPTIMIZERS[name];
      const straightParams = makeParams();
      const straight = make(straightParams, options);
      for (let step = 0; step < 50; step++) trainStep(straight, straightParams);

      const firstParams = makeParams();
      const first = make(firstParams, options);
      for (let step = 0; step < 25; step++) trainStep(first, firstParams);
      const saved = first.stateDict();
      const resumedParams = copyParams(firstParams);
      first.dispose();
      disposeAll(firstParams);

      const resumed = make(resumedParams, { ...options, lr: 1 });
      resumed.loadStateDict(saved);
      disposeStateDict(saved);
      expect(resumed.getLr()).toBe(options.lr);
      for (let step = 0; step < 25; step++) trainStep(resumed, resumedParams);
      expectSameValues(resumedParams, straightParams);

      for (const optimizer of [straight, resumed]) optimizer.dispose();
      disposeAll([...straightParams, ...resumedParams]);
    },
  );

  it('follows PyTorch’s structure: state by parameter index, groups with their options', () => {
    const params = makeParams();
    const optimizer = new Adam(
      [{ params: [params[0]!, params[1]!] }, { params: [params[2]!, params[3]!], lr: 0.5 }],
      {
        betas: [0.8, 0.9],
      },
    );
    trainStep(optimizer, params);
    const saved = optimizer.stateDict();
    expect(Object.keys(saved.state)).toEqual(['0', '1', '2']); // params[3] never had a gradient
    expect(saved.paramGroups).toEqual([
      {
        lr: 0.001,
        betas: [0.8, 0.9],
        eps: 1e-8,
        weightDecay: 0,
        amsgrad: false,
        maximize: false,
        fused: null,
        foreach: null,
        params: [0, 1],
      },
      {
        lr: 0.5,
        betas: [0.8, 0.9],
        eps: 1e-8,
        weightDecay: 0,
        amsgrad: false,
        maximize: false,
        fused: null,
        foreach: null,
        params: [2, 3],
      },
    ]);
    const entry = saved.state[2]!;
    expect(entry.step).toBe(1);
    expect((entry.expAvg as Tensor).shape).toEqual([4, 2]);
    expect((entry.expAvg as Tensor).sharesMemoryWith(optimizer.getState(params[2]!)!.expAvg)).toBe(false);
    disposeStateDict(saved);
    optimizer.dispose();
    disposeAll(params);
  });

  it('casts loaded tensors to the parameter’s dtype', () => {
    const doubles = makeParams();
    const source = new RMSprop(doubles, { momentum: 0.9 });
    trainStep(source, doubles);
    const saved = source.stateDict();
    const floats = doubles.map((param) => keep(tidy(() => param.detach().float().requiresGrad_())));
    const target = new RMSprop(floats, { momentum: 0.9 });
    target.loadStateDict(saved);
    expect(target.getState(floats[0]!)!.squareAvg.dtype).toBe('float32');
    expect(target.getState(floats[0]!)!.momentumBuffer!.dtype).toBe('float32');
    disposeStateDict(saved);
    for (const optimizer of [source, target]) optimizer.dispose();
    disposeAll([...doubles, ...floats]);
  });

  it('rejects a bad state dict with ERR_CHECKPOINT and stays untouched', () => {
    const params = makeParams();
    const optimizer = new Adam(params, { lr: 0.01 });
    trainStep(optimizer, params);
    const good = optimizer.stateDict();
    const before = values(optimizer.getState(params[0]!)!.expAvg);
    const wrongShape = tidy(() => keep(zeros([2, 2], { dtype: 'float64' })));
    const variants: [string, unknown][] = [
      ['not a state dict', 42],
      ['missing groups', { state: {} }],
      ['one group too many', { ...good, paramGroups: [...good.paramGroups, good.paramGroups[0]] }],
      ['group size', { ...good, paramGroups: [{ ...good.paramGroups[0]!, params: [0, 1] }] }],
      ['unknown option', { ...good, paramGroups: [{ ...good.paramGroups[0]!, learningRate: 1 }] }],
      ['invalid option', { ...good, paramGroups: [{ ...good.paramGroups[0]!, betas: [0.9, 2] }] }],
      ['state of no parameter', { ...good, state: { ...good.state, 9: good.state[0] } }],
      ['wrong shape', { ...good, state: { ...good.state, 0: { ...good.state[0], expAvg: wrongShape } } }],
      [
        'missing tensor',
        { ...good, state: { ...good.state, 0: { step: 1, expAvg: good.state[0]!.expAvg } } },
      ],
      ['unknown state key', { ...good, state: { ...good.state, 0: { ...good.state[0], momentum: 1 } } }],
      ['fractional step', { ...good, state: { ...good.state, 0: { ...good.state[0], step: 1.5 } } }],
    ];
    for (const [label, bad] of variants) {
      const error = expectFlodlError(() => optimizer.loadStateDict(bad as never), 'ERR_CHECKPOINT');
      expect(error.message, label).toContain('Adam.loadStateDict');
    }
    expect(values(optimizer.getState(params[0]!)!.expAvg)).toEqual(before);
    expect(optimizer.getLr()).toBe(0.01);
    expect(() => trainStep(optimizer, params)).not.toThrow();
    expect(
      expectFlodlError(
        () => optimizer.loadStateDict({ ...good, state: { 0: { ...good.state[0], expAvg: wrongShape } } }),
        'ERR_CHECKPOINT',
      ).message,
    ).toMatchInlineSnapshot(`
      "Adam.loadStateDict: state[0].expAvg does not have its parameter's shape
        expected: [3, 4]
        got: [2, 2]"
    `);
    wrongShape.dispose();
    disposeStateDict(good);
    optimizer.dispose();
    disposeAll(params);
  });

  it('lists Adagrad’s accumulators before the first step, as PyTorch does', () => {
    const params = makeParams();
    const optimizer = new Adagrad(params, { initialAccumulatorValue: 0.25 });
    const saved = optimizer.stateDict();
    expect(Object.keys(saved.state)).toEqual(['0', '1', '2', '3']);
    expect((saved.state[1]!.sum as Tensor).toArray()).toEqual([0.25, 0.25, 0.25, 0.25]);
    disposeStateDict(saved);
    optimizer.dispose();
    disposeAll(params);
  });
});

describe('groups, learning rates and gradients', () => {
  it('setLr sets every group; setGroupLr and paramGroups[i].lr set one; getLr reads one', () => {
    const params = makeParams();
    const optimizer = new SGD([{ params: params.slice(0, 2) }, { params: params.slice(2), lr: 0.5 }], {
      lr: 0.1,
    });
    expect([optimizer.getLr(0), optimizer.getLr(1)]).toEqual([0.1, 0.5]);
    optimizer.setLr(0.2);
    expect(optimizer.paramGroups.map((group) => group.lr)).toEqual([0.2, 0.2]);
    optimizer.setGroupLr(1, 0.3);
    optimizer.paramGroups[0]!.lr = 0.4;
    expect([optimizer.getLr(0), optimizer.getLr(1)]).toEqual([0.4, 0.3]);
    expectFlodlError(() => optimizer.getLr(2), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => optimizer.setLr(-1), 'ERR_INVALID_ARGUMENT');
    optimizer.dispose();
    disposeAll(params);
  });

  it('addParamGroup takes new parameters with their own options', () => {
    const params = makeParams();
    const optimizer = new Adam(params.slice(0, 2), { lr: 0.01 });
    optimizer.addParamGroup({ params: params.slice(2), lr: 0.1, amsgrad: true });
    expect(optimizer.paramGroups[1]).toMatchObject({ lr: 0.1, amsgrad: true, betas: [0.9, 0.999] });
    trainStep(optimizer, params);
    expect(optimizer.getState(params[2]!)!.maxExpAvgSq).toBeDefined();
    expect(optimizer.getState(params[0]!)!.maxExpAvgSq).toBeUndefined();
    expectFlodlError(() => optimizer.addParamGroup({ params: [params[0]!] }), 'ERR_INVALID_ARGUMENT');
    expect(optimizer.paramGroups).toHaveLength(2);
    expect(String(optimizer)).toMatchInlineSnapshot(`
      "Adam (
      Parameter Group 0
          amsgrad: false
          betas: [0.9, 0.999]
          eps: 1e-8
          foreach: null
          fused: null
          lr: 0.01
          maximize: false
          weightDecay: 0
      Parameter Group 1
          amsgrad: true
          betas: [0.9, 0.999]
          eps: 1e-8
          foreach: null
          fused: null
          lr: 0.1
          maximize: false
          weightDecay: 0
      )"
    `);
    optimizer.dispose();
    const sgd = new SGD([params[0]!], { lr: 0.1 });
    expectFlodlError(
      () => sgd.addParamGroup({ params: [params[1]!], nesterov: true }),
      'ERR_INVALID_ARGUMENT',
    );
    expect(sgd.paramGroups).toHaveLength(1);
    sgd.dispose();
    disposeAll(params);
  });

  it('zeroGrad() sets gradients to none; zeroGrad(false) fills them with zeros', () => {
    const params = makeParams();
    const optimizer = new SGD(params, { lr: 0.1, weightDecay: 0.5 });
    tidy(() => lossOf(params).backward());
    optimizer.zeroGrad(false);
    expect(params.slice(0, 3).map((param) => tidy(() => param.grad!.abs().sum().item()))).toEqual([0, 0, 0]);
    expect(params[3]!.grad).toBeNull();
    // A zero gradient still steps (weight decay moves the parameter); none skips it.
    const before = params[0]!.toTypedArray();
    optimizer.step();
    const after = params[0]!.toTypedArray();
    before.forEach((value, k) => {
      expect(after[k]).toBeCloseTo(Number(value) * (1 - 0.1 * 0.5), 15);
    });
    optimizer.zeroGrad();
    expect(params.map((param) => param.grad)).toEqual([null, null, null, null]);
    const unchanged = params[0]!.toTypedArray();
    optimizer.step();
    expect(params[0]!.toTypedArray()).toEqual(unchanged);
    optimizer.dispose();
    disposeAll(params);
  });

  it('step(closure) re-evaluates the loss with grad enabled and returns it', () => {
    const params = makeParams();
    const optimizer = new SGD(params, { lr: 0.1 });
    const loss = tidy(() =>
      optimizer.step(() => {
        optimizer.zeroGrad();
        const value = lossOf(params);
        value.backward();
        return value.item();
      }),
    );
    expect(loss).toBe(fixture.cases[0]!.losses[0]);
    optimizer.dispose();
    disposeAll(params);
  });

  it('keeps state in the parameter’s dtype (float32 parameters, float32 state)', () => {
    const params = makeParams().map((param) => {
      const single = keep(tidy(() => param.detach().float().requiresGrad_()));
      param.dispose();
      return single;
    });
    const optimizer = new NAdam(params);
    tidy(() => {
      const [w1, b1, w2] = params as [Tensor, Tensor, Tensor];
      w1.sum().add(b1.sum()).add(w2.square().sum()).backward();
      optimizer.step();
    });
    expect(optimizer.getState(params[0]!)!.expAvg.dtype).toBe('float32');
    expect(optimizer.getState(params[0]!)!.expAvgSq.requiresGrad).toBe(false);
    optimizer.dispose();
    disposeAll(params);
  });
});

describe('errors', () => {
  it('rejects bad parameters with clear codes', () => {
    const params = makeParams();
    const integers = keep(zeros([2], { dtype: 'int64' }));
    const frozen = keep(zeros([2], { dtype: 'float64', device: 'cpu' })); // named in the message below
    const derived = keep(tidy(() => params[0]!.mul(2)));
    expectFlodlError(() => new SGD([], { lr: 0.1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new SGD(params[0] as unknown as Tensor[], { lr: 0.1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new SGD([integers], { lr: 0.1 }), 'ERR_DTYPE');
    expectFlodlError(() => new SGD([frozen], { lr: 0.1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new SGD([derived], { lr: 0.1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new SGD([params[0]!, params[0]!], { lr: 0.1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(
      () => new SGD([{ params: [params[0]!] }, { params: [params[0]!, params[1]!] }], { lr: 0.1 }),
      'ERR_INVALID_ARGUMENT',
    );
    expectFlodlError(() => new SGD([{ params: [] }], { lr: 0.1 }), 'ERR_INVALID_ARGUMENT');
    const dead = makeParams()[0]!;
    dead.dispose();
    expectFlodlError(() => new Adam([dead]), 'ERR_DISPOSED');
    expect(
      expectFlodlError(() => new Adam([params[0]!, frozen]), 'ERR_INVALID_ARGUMENT').message,
    ).toMatchInlineSnapshot(`
        "Adam: params[1] does not require grad
          expected: a parameter with requiresGrad (call requiresGrad_(), or wrap it: new Parameter(tensor))
          got: Tensor(shape=[2], dtype=float64, device=cpu)"
      `);
    disposeAll([...params, integers, frozen, derived]);
  });

  it('rejects misspelled and invalid options, naming them', () => {
    const params = makeParams();
    expect(
      expectFlodlError(() => new Adam(params, { learningRate: 0.1 } as object), 'ERR_INVALID_ARGUMENT')
        .message,
    ).toMatchInlineSnapshot(`
      "Adam: unknown option 'learningRate' in options
        expected: one of lr, betas, eps, weightDecay, amsgrad, maximize, fused, foreach
        got: learningRate"
    `);
    expect(
      expectFlodlError(() => new Adam([{ params, weight_decay: 0.1 } as never]), 'ERR_INVALID_ARGUMENT')
        .message,
    ).toMatchInlineSnapshot(`
      "Adam: unknown option 'weight_decay' in paramGroups[0]; did you mean \`weightDecay\`?
        expected: one of lr, betas, eps, weightDecay, amsgrad, maximize, fused, foreach
        got: weight_decay"
    `);
    expect(
      expectFlodlError(() => new AdamW(params, { weightdecay: 0.1 } as object), 'ERR_INVALID_ARGUMENT')
        .message,
    ).toMatchInlineSnapshot(`
      "AdamW: unknown option 'weightdecay' in options; did you mean \`weightDecay\`?
        expected: one of lr, betas, eps, weightDecay, amsgrad, maximize, fused, foreach
        got: weightdecay"
    `);
    expectFlodlError(() => new SGD(params), 'ERR_INVALID_ARGUMENT'); // SGD has no default lr
    expectFlodlError(() => new SGD(params, { lr: -0.1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new SGD(params, { lr: 0.1, nesterov: true }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(
      () => new SGD(params, { lr: 0.1, momentum: 0.9, dampening: 0.1, nesterov: true }),
      'ERR_INVALID_ARGUMENT',
    );
    expect(
      expectFlodlError(() => new Adam(params, { betas: [0.9, 1] }), 'ERR_INVALID_ARGUMENT').message,
    ).toMatchInlineSnapshot(`
        "Adam: invalid options.betas[1]
          expected: a number in [0, 1)
          got: 1"
      `);
    expectFlodlError(() => new RMSprop(params, { alpha: -1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new Adagrad(params, { lrDecay: Number.NaN }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new NAdam(params, { momentumDecay: -1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new RAdam(params, { amsgrad: true } as object), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new AdamW(params, { maximize: 'yes' } as never), 'ERR_INVALID_ARGUMENT');
    disposeAll(params);
  });

  it('refuses a step with an invalid group lr before moving any parameter, and any use after dispose', () => {
    const params = makeParams();
    const optimizer = new SGD([{ params: params.slice(0, 2) }, { params: params.slice(2) }], { lr: 0.1 });
    tidy(() => lossOf(params).backward());
    const before = params[0]!.toTypedArray();
    optimizer.paramGroups[1]!.lr = Number.NaN;
    expectFlodlError(() => optimizer.step(), 'ERR_INVALID_ARGUMENT');
    expect(params[0]!.toTypedArray()).toEqual(before);
    optimizer.dispose();
    optimizer.dispose();
    expectFlodlError(() => optimizer.step(), 'ERR_DISPOSED');
    expectFlodlError(() => optimizer.stateDict(), 'ERR_DISPOSED');
    disposeAll(params);
  });
});

describe('memory', () => {
  it.each(RICH_CASES)(
    '%s: live tensors stay flat over 1000 steps and return to the start on dispose',
    (name, options) => {
      const start = liveTensorCount();
      const params = makeParams();
      const withParams = liveTensorCount();
      const optimizer = OPTIMIZERS[name](params, options);
      trainStep(optimizer, params);
      const afterFirstStep = liveTensorCount();
      expect(afterFirstStep).toBeGreaterThan(withParams);
      for (let step = 1; step < 1000; step++) trainStep(optimizer, params);
      expect(liveTensorCount()).toBe(afterFirstStep);
      tidy(() => {
        optimizer.stateDict();
      });
      expect(liveTensorCount()).toBe(afterFirstStep);
      optimizer.dispose();
      expect(liveTensorCount()).toBe(withParams);
      disposeAll(params);
      expect(liveTensorCount()).toBe(start);
    },
  );
});
