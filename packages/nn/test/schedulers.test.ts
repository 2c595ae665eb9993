import { fromData, keep, type Tensor, zeros } from '@flodl/tensor-native';
import { expectFlodlError } from '@flodl/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { Adam, type Optimizer, SGD } from '../src/optim/index.js';
import {
  CosineAnnealingLR,
  CosineAnnealingWarmRestarts,
  CyclicLR,
  cosineAnnealingLr,
  cosineAnnealingWarmRestartsLr,
  cyclicLr,
  cyclicMomentum,
  ExponentialLR,
  exponentialLr,
  LambdaLR,
  LinearLR,
  LinearWarmup,
  type LRScheduler,
  type LrLambda,
  linearLr,
  linearWarmupLr,
  MultiStepLR,
  multiStepLr,
  OneCycleLR,
  oneCycleLr,
  oneCycleMomentum,
  ReduceLROnPlateau,
  SequentialLR,
  StepLR,
  stepLr,
} from '../src/schedulers/index.js';
import { readFixture } from './golden.js';

type Options = Record<string, unknown>;
interface SchedulerCase {
  name: string;
  scheduler: string;
  options: Options;
  lrs: number[];
  optimizer?: 'SGD' | 'Adam';
  after?: { scheduler: string; options: Options };
  /** SequentialLR's schedulers. */
  sequence?: { scheduler: string; options: Options }[];
  /** The epoch of each `step(epoch)` (null: a plain `step()`). */
  epochs?: (number | null)[];
  negateMetric?: boolean;
  expectedLrs: number[][];
  expectedMomenta?: number[][];
}
interface SchedulerFixture {
  steps: number;
  metrics: number[];
  cases: SchedulerCase[];
}

const fixture = readFixture('schedulers.json') as SchedulerFixture;

const parameters: Tensor[] = [];
afterAll(() => {
  for (const parameter of parameters) parameter.dispose();
});

/** SGD with momentum 0.9 (or Adam) over one parameter group per learning rate. */
function makeOptimizer(kind: 'SGD' | 'Adam', lrs: readonly number[]): Optimizer {
  const groups = lrs.map((lr) => {
    const parameter = keep(zeros([2]).requiresGrad_());
    parameters.push(parameter);
    return { params: [parameter], lr };
  });
  return (kind === 'Adam' ? new Adam(groups) : new SGD(groups, { momentum: 0.9 })) as unknown as Optimizer;
}

// The fixture's options are checked by the schedulers themselves.
type AnyOptions = any;

/** LambdaLR's functions by the names the golden script gives them (its LAMBDAS). */
const LAMBDAS: Record<string, LrLambda> = {
  exponential: (epoch) => 0.95 ** epoch,
  inverseSqrt: (epoch) => 1 / Math.sqrt(1 + epoch),
  warmup100: (epoch) => Math.min(1, (epoch + 1) / 100),
  halveEvery250: (epoch) => 0.5 ** Math.floor(epoch / 250),
};

function withLambdas(options: Options): AnyOptions {
  const names = options.lrLambda as string | string[];
  return { lrLambda: Array.isArray(names) ? names.map((name) => LAMBDAS[name]!) : LAMBDAS[names]! };
}
const BOUND: Record<string, (optimizer: Optimizer, options: AnyOptions) => LRScheduler | ReduceLROnPlateau> =
  {
    StepLR: (optimizer, options) => new StepLR(optimizer, options),
    MultiStepLR: (optimizer, options) => new MultiStepLR(optimizer, options),
    ExponentialLR: (optimizer, options) => new ExponentialLR(optimizer, options),
    CosineAnnealingLR: (optimizer, options) => new CosineAnnealingLR(optimizer, options),
    OneCycleLR: (optimizer, options) => new OneCycleLR(optimizer, options),
    CyclicLR: (optimizer, options) => new CyclicLR(optimizer, options),
    ReduceLROnPlateau: (optimizer, options) => new ReduceLROnPlateau(optimizer, options),
    LambdaLR: (optimizer, options) => new LambdaLR(optimizer, withLambdas(options)),
    LinearLR: (optimizer, options) => new LinearLR(optimizer, options),
    CosineAnnealingWarmRestarts: (optimizer, options) => new CosineAnnealingWarmRestarts(optimizer, options),
  };

function buildScheduler(testCase: SchedulerCase, optimizer: Optimizer): LRScheduler | ReduceLROnPlateau {
  if (testCase.scheduler === 'SequentialLR') {
    const schedulers = testCase.sequence!.map(
      (item) => BOUND[item.scheduler]!(optimizer, item.options) as LRScheduler,
    );
    return new SequentialLR(optimizer, { schedulers, milestones: testCase.options.milestones as number[] });
  }
  if (testCase.scheduler !== 'LinearWarmup') return BOUND[testCase.scheduler]!(optimizer, testCase.options);
  const next = testCase.after;
  const after = next === undefined ? undefined : BOUND[next.scheduler]!(optimizer, next.options);
  return new LinearWarmup(optimizer, { ...(testCase.options as { warmupSteps: number }), after });
}

function withoutBaseLr(options: Options): AnyOptions {
  const { baseLr: _unused, ...rest } = options;
  return rest;
}

/** The step-based pure form of a case, for group `g` whose starting rate is `baseLr`. */
function pureSchedule(
  scheduler: string,
  options: Options,
  baseLr: number,
  g: number,
): (step: number) => number {
  const pick = (value: unknown) => (Array.isArray(value) ? value[g] : value);
  const perGroup = { ...options, maxLr: pick(options.maxLr), baseLr: pick(options.baseLr) } as AnyOptions;
  switch (scheduler) {
    case 'StepLR':
      return (step) => stepLr(baseLr, step, options as AnyOptions);
    case 'MultiStepLR':
      return (step) => multiStepLr(baseLr, step, options as AnyOptions);
    case 'ExponentialLR':
      return (step) => exponentialLr(baseLr, step, options as AnyOptions);
    case 'CosineAnnealingLR':
      return (step) => cosineAnnealingLr(baseLr, step, options as AnyOptions);
    case 'OneCycleLR':
      return (step) => oneCycleLr(step, withoutBaseLr(perGroup));
    case 'CyclicLR':
      return (step) => cyclicLr(step, perGroup);
    case 'LinearLR':
      return (step) => linearLr(baseLr, step, options as AnyOptions);
    case 'CosineAnnealingWarmRestarts':
      return (step) => cosineAnnealingWarmRestartsLr(baseLr, step, options as AnyOptions);
    default:
      throw new Error(`no pure form for ${scheduler}`);
  }
}

function pureLr(testCase: SchedulerCase, g: number): ((step: number) => number) | null {
  const baseLr = testCase.lrs[g]!;
  if (['ReduceLROnPlateau', 'LambdaLR', 'SequentialLR'].includes(testCase.scheduler)) return null;
  if (testCase.epochs !== undefined) return null;
  if (testCase.scheduler !== 'LinearWarmup')
    return pureSchedule(testCase.scheduler, testCase.options, baseLr, g);
  const next = testCase.after;
  const after = next === undefined ? undefined : pureSchedule(next.scheduler, next.options, baseLr, g);
  return (step) => linearWarmupLr(baseLr, step, testCase.options as AnyOptions, after);
}

function pureMomentum(testCase: SchedulerCase, g: number): ((step: number) => number) | null {
  const options = testCase.options;
  if (options.cycleMomentum === false) return null;
  const pick = (value: unknown) => (Array.isArray(value) ? value[g] : value);
  const perGroup = {
    ...options,
    maxLr: pick(options.maxLr),
    baseLr: pick(options.baseLr),
    baseMomentum: pick(options.baseMomentum),
    maxMomentum: pick(options.maxMomentum),
  } as AnyOptions;
  if (testCase.scheduler === 'OneCycleLR') return (step) => oneCycleMomentum(step, withoutBaseLr(perGroup));
  if (testCase.scheduler === 'CyclicLR') return (step) => cyclicMomentum(step, perGroup);
  return null;
}

/** Relative error of each row against the golden rows; counts bit-identical values too. */
function compare(actual: number[][], expected: number[][]): { worst: number; exact: number; total: number } {
  expect(actual.length).toBe(expected.length);
  let worst = 0;
  let exact = 0;
  let total = 0;
  expected.forEach((row, step) => {
    row.forEach((value, g) => {
      const mine = actual[step]![g]!;
      total++;
      if (mine === value) exact++;
      else worst = Math.max(worst, Math.abs(mine - value) / Math.max(Math.abs(value), Number.MIN_VALUE));
    });
  });
  return { worst, exact, total };
}

function momentumOf(group: { momentum?: number; betas?: [number, number] }): number {
  return group.betas !== undefined ? group.betas[0] : group.momentum!;
}

function runBound(testCase: SchedulerCase): { lrs: number[][]; momenta: number[][]; scheduler: unknown } {
  const optimizer = makeOptimizer(testCase.optimizer ?? 'SGD', testCase.lrs);
  const scheduler = buildScheduler(testCase, optimizer);
  const groups = optimizer.paramGroups as { lr: number; momentum?: number; betas?: [number, number] }[];
  const lrs = [groups.map((group) => group.lr)];
  const momenta = [groups.map(momentumOf)];
  const metrics = testCase.negateMetric ? fixture.metrics.map((value) => -value) : fixture.metrics;
  for (let step = 0; step < fixture.steps; step++) {
    optimizer.step();
    const epoch = testCase.epochs?.[step];
    if (scheduler instanceof ReduceLROnPlateau) scheduler.step(metrics[step]!);
    else if (epoch !== undefined && epoch !== null) (scheduler as CosineAnnealingWarmRestarts).step(epoch);
    else scheduler.step();
    lrs.push(groups.map((group) => group.lr));
    momenta.push(groups.map(momentumOf));
    expect(scheduler.getLastLr()).toEqual(lrs[lrs.length - 1]);
  }
  return { lrs, momenta, scheduler };
}

/**
 * Cases computed with the same IEEE operations as PyTorch and no libm call (cos, pow): they
 * must match bit for bit. The others may differ by the last bit of V8's Math.cos/Math.pow
 * against glibc's, or by PyTorch's recursive form against the closed form, within 1e-12.
 */
function bitExact(testCase: SchedulerCase): boolean {
  const { scheduler, options } = testCase;
  if (scheduler === 'ReduceLROnPlateau') return true;
  // base · factor as PyTorch computes it; the factors but 'exponential' (a pow) are exact in both
  // languages (sqrt is correctly rounded, powers of 0.5 are exact).
  if (scheduler === 'LambdaLR') return options.lrLambda !== 'exponential';
  if (scheduler === 'OneCycleLR') return options.annealStrategy === 'linear';
  if (scheduler === 'CyclicLR') return options.mode !== 'exp_range';
  return false;
}

describe('schedulers against PyTorch 1.13 (1000 steps)', () => {
  it.each(fixture.cases.map((testCase) => [testCase.name, testCase] as const))('%s', (_name, testCase) => {
    const { lrs, momenta } = runBound(testCase);
    const bound = compare(lrs, testCase.expectedLrs);
    expect(bound.worst, 'optimizer-bound learning rates').toBeLessThanOrEqual(1e-12);
    if (bitExact(testCase)) expect(bound.exact, 'bit-identical learning rates').toBe(bound.total);
    if (testCase.expectedMomenta !== undefined) {
      const cycled = compare(momenta, testCase.expectedMomenta);
      expect(cycled.worst, 'momenta').toBeLessThanOrEqual(1e-12);
      if (bitExact(testCase)) expect(cycled.exact, 'bit-identical momenta').toBe(cycled.total);
    }

    const pure = testCase.lrs.map((_lr, g) => pureLr(testCase, g));
    if (pure.every((schedule) => schedule !== null)) {
      const rows = testCase.expectedLrs.map((_row, step) => pure.map((schedule) => schedule!(step)));
      expect(compare(rows, testCase.expectedLrs).worst, 'pure learning rates').toBeLessThanOrEqual(1e-12);
    }
    const pureMomenta = testCase.lrs.map((_lr, g) => pureMomentum(testCase, g));
    if (testCase.expectedMomenta !== undefined && pureMomenta.every((schedule) => schedule !== null)) {
      const rows = testCase.expectedMomenta.map((_row, step) =>
        pureMomenta.map((schedule) => schedule!(step)),
      );
      expect(compare(rows, testCase.expectedMomenta).worst, 'pure momenta').toBeLessThanOrEqual(1e-12);
    }
  });
});

/** Steps a scheduler `count` times and returns the first group's rates. */
function trace(scheduler: LRScheduler, count: number): number[] {
  const rates: number[] = [];
  for (let k = 0; k < count; k++) {
    scheduler.step();
    rates.push(scheduler.optimizer.getLr());
  }
  return rates;
}

describe('scheduler behaviour', () => {
  it('lrAt is pure: it neither moves the scheduler nor touches the optimizer', () => {
    const optimizer = makeOptimizer('SGD', [0.1, 0.01]);
    const scheduler = new CosineAnnealingLR(optimizer, { tMax: 10 });
    scheduler.step();
    expect(scheduler.lrAt(5)).toEqual([0.05, 0.005]);
    expect(scheduler.lastEpoch).toBe(1);
    expect(scheduler.getLastLr()).toEqual(optimizer.paramGroups.map((group) => group.lr));
    expect(scheduler.lrAt(0)).toEqual(scheduler.baseLrs);
  });

  it('overwrites an external setLr at the next step (closed form), unlike PyTorch’s chainable form', () => {
    const optimizer = makeOptimizer('SGD', [0.1]);
    const scheduler = new StepLR(optimizer, { stepSize: 2, gamma: 0.5 });
    optimizer.setLr(1);
    scheduler.step();
    expect(optimizer.getLr()).toBe(0.1);
    scheduler.step();
    expect(optimizer.getLr()).toBe(0.05);
  });

  it.each([
    ['StepLR', (optimizer: Optimizer) => new StepLR(optimizer, { stepSize: 3 })],
    ['OneCycleLR', (optimizer: Optimizer) => new OneCycleLR(optimizer, { maxLr: 0.1, totalSteps: 60 })],
    [
      'CyclicLR',
      (optimizer: Optimizer) => new CyclicLR(optimizer, { baseLr: 0.01, maxLr: 0.1, stepSizeUp: 7 }),
    ],
    [
      'LinearWarmup then ExponentialLR',
      (optimizer: Optimizer) =>
        new LinearWarmup(optimizer, { warmupSteps: 10, after: new ExponentialLR(optimizer, { gamma: 0.9 }) }),
    ],
    ['LambdaLR', (optimizer: Optimizer) => new LambdaLR(optimizer, { lrLambda: (epoch) => 1 / (1 + epoch) })],
    ['LinearLR', (optimizer: Optimizer) => new LinearLR(optimizer, { totalIters: 30 })],
    [
      'CosineAnnealingWarmRestarts',
      (optimizer: Optimizer) => new CosineAnnealingWarmRestarts(optimizer, { t0: 7, tMult: 2 }),
    ],
    [
      'SequentialLR of LinearLR and warm restarts',
      (optimizer: Optimizer) =>
        new SequentialLR(optimizer, {
          schedulers: [new LinearLR(optimizer), new CosineAnnealingWarmRestarts(optimizer, { t0: 6 })],
          milestones: [15],
        }),
    ],
  ])('%s resumes from stateDict exactly where it stopped', (_name, make) => {
    const straight = make(makeOptimizer('SGD', [0.1, 0.02]));
    const expected = trace(straight, 50);
    const first = make(makeOptimizer('SGD', [0.1, 0.02]));
    trace(first, 20);
    const saved = first.stateDict();
    const resumed = make(makeOptimizer('SGD', [0.1, 0.02]));
    resumed.loadStateDict(JSON.parse(JSON.stringify(saved)));
    expect(resumed.getLastLr()).toEqual(first.getLastLr());
    expect(trace(resumed, 30)).toEqual(expected.slice(20));
    expectFlodlError(() => resumed.loadStateDict({ ...saved, baseLrs: [0.1] } as never), 'ERR_CHECKPOINT');
  });

  it('ReduceLROnPlateau takes tensor metrics and resumes from stateDict', () => {
    const optimizer = makeOptimizer('SGD', [0.1]);
    const scheduler = new ReduceLROnPlateau(optimizer, { patience: 2, factor: 0.5 });
    const metric = fromData([1.0], [1], { dtype: 'float64' });
    for (let k = 0; k < 4; k++) scheduler.step(metric);
    metric.dispose();
    expect(optimizer.getLr()).toBe(0.05);
    const saved = scheduler.stateDict();
    const fresh = new ReduceLROnPlateau(makeOptimizer('SGD', [0.05]), { patience: 2, factor: 0.5 });
    fresh.loadStateDict(saved);
    for (const plateau of [scheduler, fresh]) for (let k = 0; k < 3; k++) plateau.step(1.0);
    expect(fresh.getLastLr()).toEqual([0.025]);
    expect(scheduler.getLastLr()).toEqual([0.025]);
    expectFlodlError(() => fresh.loadStateDict({ ...saved, numBadEpochs: -1 }), 'ERR_CHECKPOINT');
    expectFlodlError(() => scheduler.step('low' as unknown as number), 'ERR_INVALID_ARGUMENT');
  });

  it('LinearWarmup hands over to ReduceLROnPlateau, feeding it the metric after the warmup', () => {
    const optimizer = makeOptimizer('Adam', [0.01]);
    const plateau = new ReduceLROnPlateau(optimizer, { patience: 0, factor: 0.5 });
    const warmup = new LinearWarmup(optimizer, { warmupSteps: 4, startFactor: 0.5, after: plateau });
    const rates = [optimizer.getLr()];
    for (let k = 0; k < 3; k++) {
      warmup.step(1);
      rates.push(optimizer.getLr());
    }
    expect(rates).toEqual([0.005, 0.00625, 0.0075, 0.00875]);
    warmup.step(1); // hand-over: the full rate, and the plateau's first (improving) metric
    expect(optimizer.getLr()).toBe(0.01);
    warmup.step(1); // no improvement, patience 0: halved
    expect(optimizer.getLr()).toBe(0.005);
    expect(warmup.getLastLr()).toEqual([0.005]);
    expectFlodlError(() => warmup.step(), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => warmup.lrAt(10), 'ERR_INVALID_ARGUMENT');
    expect(warmup.lrAt(2)).toEqual([0.0075]);
  });

  it('OneCycleLR refuses to step past totalSteps and stays where it was', () => {
    const optimizer = makeOptimizer('SGD', [0.1]);
    const scheduler = new OneCycleLR(optimizer, { maxLr: 0.1, totalSteps: 5 });
    trace(scheduler, 5);
    const last = optimizer.getLr();
    expect(expectFlodlError(() => scheduler.step(), 'ERR_INVALID_ARGUMENT').message).toMatchInlineSnapshot(`
      "OneCycleLR.lrAt: tried to step 7 times
        expected: at most totalSteps + 1 = 6 steps (counting the one at construction)
        got: step 6"
    `);
    expect(scheduler.lastEpoch).toBe(5);
    expect(optimizer.getLr()).toBe(last);
    expectFlodlError(() => oneCycleLr(6, { maxLr: 0.1, totalSteps: 5 }), 'ERR_INVALID_ARGUMENT');
    const byEpochs = new OneCycleLR(makeOptimizer('SGD', [0.1]), { maxLr: 0.1, epochs: 2, stepsPerEpoch: 3 });
    expect(byEpochs.totalSteps).toBe(6);
  });

  it('CosineAnnealingWarmRestarts: lrAt(epoch) is what step(epoch) sets; a plain step goes on from a fraction', () => {
    const optimizer = makeOptimizer('SGD', [0.1]);
    const scheduler = new CosineAnnealingWarmRestarts(optimizer, { t0: 10, tMult: 2 });
    scheduler.step(12.5);
    expect(optimizer.getLr()).toBe(scheduler.lrAt(12.5)[0]);
    expect([scheduler.lastEpoch, scheduler.tCur, scheduler.tI]).toEqual([12, 2.5, 20]);
    scheduler.step(); // PyTorch: T_cur + 1
    expect([scheduler.lastEpoch, scheduler.tCur]).toEqual([13, 3.5]);
    expect(optimizer.getLr()).toBe(scheduler.lrAt(13.5)[0]);
    expect(cosineAnnealingWarmRestartsLr(0.1, 15, { t0: 10 })).toBeCloseTo(0.05, 15);
    // The period of an epoch is found exactly: PyTorch's log(243, 3) = 4.999… puts epoch 121 of
    // t0 1, tMult 3 at the end of the 81-epoch period (lr 0) instead of the start of the next.
    expect(cosineAnnealingWarmRestartsLr(0.1, 121, { t0: 1, tMult: 3 })).toBe(0.1);
    expectFlodlError(() => scheduler.step(-1), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => scheduler.lrAt(Number.NaN), 'ERR_INVALID_ARGUMENT');
  });

  it('SequentialLR starts every scheduler from the first one’s base rates, as PyTorch’s initial_lr', () => {
    const optimizer = makeOptimizer('SGD', [0.1, 0.01]);
    // Built in order, the cosine reads the groups after LinearLR set them to a tenth.
    const warmup = new LinearLR(optimizer, { startFactor: 0.1, totalIters: 4 });
    const cosine = new CosineAnnealingLR(optimizer, { tMax: 10 });
    const scheduler = new SequentialLR(optimizer, { schedulers: [warmup, cosine], milestones: [4] });
    expect(cosine.baseLrs).toEqual([0.1, 0.01]);
    expect(optimizer.paramGroups.map((group) => group.lr)).toEqual([0.1 * 0.1, 0.01 * 0.1]);
    const rates = trace(scheduler, 6);
    expect(rates.slice(3)).toEqual([
      0.1,
      cosineAnnealingLr(0.1, 1, { tMax: 10 }),
      cosineAnnealingLr(0.1, 2, { tMax: 10 }),
    ]);
    expect(scheduler.lrAt(5)).toEqual(cosine.lrAt(1));
    expect(cosine.lastEpoch).toBe(2);
    // OneCycleLR inside still cycles momentum: SequentialLR steps the scheduler in charge.
    const cycled = makeOptimizer('SGD', [0.1]);
    const oneCycle = new OneCycleLR(cycled, { maxLr: 0.1, totalSteps: 20 });
    const sequence = new SequentialLR(cycled, {
      schedulers: [oneCycle, new ExponentialLR(cycled, { gamma: 0.9 })],
      milestones: [10],
    });
    trace(sequence, 3);
    expect((cycled.paramGroups[0] as unknown as { momentum: number }).momentum).toBe(
      oneCycleMomentum(3, { maxLr: 0.1, totalSteps: 20 }),
    );
  });

  it('LambdaLR and the new schedulers refuse bad input, naming it', () => {
    const optimizer = makeOptimizer('SGD', [0.1, 0.01]);
    expect(
      expectFlodlError(() => new LambdaLR(optimizer, { lrLambda: [() => 1] }), 'ERR_INVALID_ARGUMENT')
        .message,
    ).toMatchInlineSnapshot(`
      "LambdaLR: invalid options.lrLambda
        expected: a function of the step, or 2 functions (one per parameter group)
        got: [a function]"
    `);
    const broken = new LambdaLR(optimizer, { lrLambda: (epoch) => (epoch < 2 ? 1 : Number.NaN) });
    broken.step();
    expect(expectFlodlError(() => broken.step(), 'ERR_INVALID_ARGUMENT').message).toMatchInlineSnapshot(`
      "LambdaLR.lrAt: lrLambda[0] returned NaN at step 2
        expected: a finite number (the factor of the starting learning rate)
        got: NaN"
    `);
    expect(broken.lastEpoch).toBe(1);
    expect(
      expectFlodlError(() => new LinearLR(optimizer, { startFactor: 0 }), 'ERR_INVALID_ARGUMENT').message,
    ).toMatchInlineSnapshot(`
      "LinearLR: invalid options.startFactor
        expected: a number in (0, 1]
        got: 0"
    `);
    expectFlodlError(() => new LinearLR(optimizer, { endFactor: 1.5 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new LinearLR(optimizer, { totalIters: 0 }), 'ERR_INVALID_ARGUMENT');
    expect(
      expectFlodlError(() => new LinearLR(optimizer, { total_iters: 3 } as never), 'ERR_INVALID_ARGUMENT')
        .message,
    ).toMatchInlineSnapshot(`
      "LinearLR: unknown option 'total_iters'; did you mean \`totalIters\`?
        expected: one of startFactor, endFactor, totalIters
        got: total_iters"
    `);
    expectFlodlError(() => new CosineAnnealingWarmRestarts(optimizer, { t0: 0 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(
      () => new CosineAnnealingWarmRestarts(optimizer, { t0: 5, tMult: 1.5 }),
      'ERR_INVALID_ARGUMENT',
    );
    expect(
      expectFlodlError(
        () => new CosineAnnealingWarmRestarts(optimizer, { T_0: 5 } as never),
        'ERR_INVALID_ARGUMENT',
      ).message,
    ).toMatchInlineSnapshot(`
      "CosineAnnealingWarmRestarts: unknown option 'T_0'; did you mean \`t0\`?
        expected: one of t0, tMult, etaMin
        got: T_0"
    `);
    const first = new LinearLR(optimizer);
    const second = new StepLR(optimizer, { stepSize: 3 });
    expect(
      expectFlodlError(
        () => new SequentialLR(optimizer, { schedulers: [first, second], milestones: [] }),
        'ERR_INVALID_ARGUMENT',
      ).message,
    ).toMatchInlineSnapshot(`
      "SequentialLR: one milestone is needed per scheduler after the first
        expected: 1 milestone(s) for 2 schedulers
        got: 0: []"
    `);
    expectFlodlError(
      () => new SequentialLR(optimizer, { schedulers: [first, second, first], milestones: [5, 5] }),
      'ERR_INVALID_ARGUMENT',
    );
    expectFlodlError(
      () => new SequentialLR(optimizer, { schedulers: [], milestones: [] }),
      'ERR_INVALID_ARGUMENT',
    );
    const plateau = new ReduceLROnPlateau(optimizer);
    expectFlodlError(
      () => new SequentialLR(optimizer, { schedulers: [first, plateau as never], milestones: [3] }),
      'ERR_INVALID_ARGUMENT',
    );
    const other = new StepLR(makeOptimizer('SGD', [0.1, 0.01]), { stepSize: 2 });
    expectFlodlError(
      () => new SequentialLR(optimizer, { schedulers: [first, other], milestones: [3] }),
      'ERR_INVALID_ARGUMENT',
    );
    const sequence = new SequentialLR(optimizer, { schedulers: [first, second], milestones: [3] });
    expectFlodlError(
      () => sequence.loadStateDict({ ...sequence.stateDict(), schedulers: [] }),
      'ERR_CHECKPOINT',
    );
    const restarts = new CosineAnnealingWarmRestarts(optimizer, { t0: 4 });
    expectFlodlError(() => restarts.loadStateDict({ ...restarts.stateDict(), tI: 0 }), 'ERR_CHECKPOINT');
  });

  it('rejects bad options, naming them', () => {
    const optimizer = makeOptimizer('SGD', [0.1, 0.01]);
    expect(
      expectFlodlError(() => new StepLR(optimizer, { step_size: 3 } as never), 'ERR_INVALID_ARGUMENT')
        .message,
    ).toMatchInlineSnapshot(`
      "StepLR: unknown option 'step_size'; did you mean \`stepSize\`?
        expected: one of stepSize, gamma
        got: step_size"
    `);
    expectFlodlError(() => new StepLR(optimizer, { stepSize: 0 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new StepLR({} as Optimizer, { stepSize: 3 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new MultiStepLR(optimizer, { milestones: [10, 2.5] }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new ExponentialLR(optimizer, {} as never), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(
      () => new CosineAnnealingLR(optimizer, { tMax: 10, etaMin: -1 }),
      'ERR_INVALID_ARGUMENT',
    );
    expectFlodlError(() => new OneCycleLR(optimizer, { maxLr: 0.1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(
      () => new OneCycleLR(optimizer, { maxLr: [0.1], totalSteps: 10 }),
      'ERR_INVALID_ARGUMENT',
    );
    expectFlodlError(
      () => new OneCycleLR(optimizer, { maxLr: 0.1, totalSteps: 10, pctStart: 1.5 }),
      'ERR_INVALID_ARGUMENT',
    );
    expectFlodlError(
      () => new CyclicLR(optimizer, { baseLr: 0.01, maxLr: 0.1, mode: 'triangle' as never }),
      'ERR_INVALID_ARGUMENT',
    );
    expectFlodlError(() => new ReduceLROnPlateau(optimizer, { factor: 1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new ReduceLROnPlateau(optimizer, { minLr: [0.1] }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(
      () => new LinearWarmup(optimizer, { warmupSteps: 5, startFactor: 2 }),
      'ERR_INVALID_ARGUMENT',
    );
    const other = makeOptimizer('SGD', [0.1]);
    expectFlodlError(
      () => new LinearWarmup(optimizer, { warmupSteps: 5, after: new StepLR(other, { stepSize: 2 }) }),
      'ERR_INVALID_ARGUMENT',
    );
    expectFlodlError(() => stepLr(0.1, 2.5, { stepSize: 3 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => cosineAnnealingLr(0.1, -1, { tMax: 3 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => cyclicLr(3, { baseLr: [0.1], maxLr: 1 } as never), 'ERR_INVALID_ARGUMENT');
  });
});
