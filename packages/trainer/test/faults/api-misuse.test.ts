// 10 000 malformed calls against the managed Trainer's surface, drawn by a seeded generator:
// wrong types and out-of-range values for every option (by its method or through
// `options({...})`), options that contradict each other, calls in the wrong order (a builder
// used twice, set after its run started), calls after the run finished. Every one must be a
// typed FlodlError thrown before anything starts; none may crash the process or leak a tensor,
// and a real run still trains afterwards.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mseLoss } from '@flodl/autograd';
import { Linear, SGD } from '@flodl/nn';
import { FlodlError, liveTensorCount, manualSeed, randn } from '@flodl/tensor-native';
import { SeededDraw } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { TensorDataset } from '../../src/data/index.js';
import { Trainer, type TrainerBuilder, type TrainerOptions } from '../../src/index.js';

manualSeed(3);
// The datasets keep their own handles: the tensors made here are freed at once, so none waits
// for the collector while the test counts live tensors.
const x = randn([16, 4]);
const w = randn([4, 1]);
const y = x.matmul(w);
const data = new TensorDataset([x, y]);
const tinyX = randn([2, 4]);
const tinyY = randn([2, 1]);
const tiny = new TensorDataset([tinyX, tinyY]);
for (const tensor of [x, w, y, tinyX, tinyY]) tensor.dispose();

const builder = (): TrainerBuilder<Linear> =>
  Trainer.builder(
    () => new Linear(4, 1),
    (params) => new SGD(params, { lr: 0.05 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  );

/** Values of no type an option takes. */
const ALIEN = [null, true, {}, [], () => 1, Symbol('bad'), 10n, Number.NaN, 'text'];
/** Draws a value that is not a positive safe integer. */
function notPositiveInteger(draw: SeededDraw): unknown {
  return draw.pick([
    0,
    -1,
    -draw.int(1e6) - 1,
    1.5,
    draw.next() + 0.001,
    Number.POSITIVE_INFINITY,
    2 ** 53 + 2,
    '4',
    [4],
    ...ALIEN,
  ]);
}
/** Draws a value that is not a finite number ≥ 0. */
function notNonNegative(draw: SeededDraw): unknown {
  return draw.pick([
    -1,
    -draw.next() - 1e-9,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    '1',
    ...ALIEN,
  ]);
}
function notFunction(draw: SeededDraw): unknown {
  return draw.pick([5, 'fn', {}, [], true, null, 10n, Symbol('f')]);
}
function notPath(draw: SeededDraw): unknown {
  return draw.pick(['', 5, {}, [], null, true, () => 'path', 10n]);
}

/** Options set to a bad value: each draws the value and the options it needs around it. */
type BadOption = (draw: SeededDraw) => Partial<Record<keyof TrainerOptions, unknown>>;
const BAD: Record<string, BadOption> = {
  dataset: (draw) => ({
    dataset: draw.pick([
      null,
      5,
      'data',
      {},
      [],
      { length: 4 },
      { length: -1, get: () => [] },
      { length: 1.5, get: () => [] },
      { length: '16', get: () => [] },
      tiny, // less than one batch
    ]),
  }),
  batchSize: (draw) => ({ batchSize: draw.pick([notPositiveInteger(draw), 17, 1e9]) }),
  numEpochs: (draw) => ({ numEpochs: notPositiveInteger(draw) }),
  devices: (draw) => ({
    devices: draw.pick([[], 'cpu', [5], ['gpu'], ['cpu:0'], ['cuda:x'], [null], ['cpu', 7], null, {}, 1]),
  }),
  mode: (draw) => ({ mode: draw.pick(['Sync', '', 'cpusync', 'CpuSync ', 5, null, {}, []]) }),
  seed: (draw) => ({ seed: draw.pick([-1, 1.5, '1', Number.NaN, 2 ** 60, null, {}]) }),
  maxGradNorm: (draw) => ({ maxGradNorm: notNonNegative(draw) }),
  lrScaleRatio: (draw) => ({ lrScaleRatio: notNonNegative(draw) }),
  scheduler: (draw) => ({ scheduler: notFunction(draw) }),
  checkpointFn: (draw) => ({ checkpointFn: notFunction(draw) }),
  epochFn: (draw) => ({ epochFn: notFunction(draw) }),
  metricsFn: (draw) => ({ metricsFn: notFunction(draw) }),
  evalFn: (draw) => ({ evalFn: notFunction(draw) }),
  evalResultFn: (draw) =>
    draw.next() < 0.5 ? { evalResultFn: notFunction(draw) } : { evalResultFn: () => undefined },
  checkpointEvery: (draw) =>
    draw.next() < 0.5
      ? { checkpointEvery: notPositiveInteger(draw), savePath: '/tmp/flodl-misuse/never' }
      : { checkpointEvery: 1 + draw.int(5) }, // neither savePath nor checkpointFn
  savePath: (draw) => ({ savePath: notPath(draw) }),
  resumeFrom: (draw) => ({ resumeFrom: notPath(draw) }),
  checkpointAtEpoch: (draw) =>
    draw.pick([
      { checkpointAtEpoch: notPositiveInteger(draw), savePath: '/tmp/flodl-misuse/never' },
      { checkpointAtEpoch: 2 + draw.int(9), savePath: '/tmp/flodl-misuse/never' }, // past numEpochs
      { checkpointAtEpoch: 1 }, // no savePath
    ]),
  keepLast: (draw) =>
    draw.next() < 0.5
      ? { keepLast: notPositiveInteger(draw), savePath: '/tmp/flodl-misuse/never' }
      : { keepLast: 1 + draw.int(5) },
  evalEvery: (draw) =>
    draw.next() < 0.5
      ? { evalEvery: draw.pick([-1, 1.5, '1', Number.NaN, null, {}]), evalFn: () => 0 }
      : { evalEvery: 1 + draw.int(3) }, // no evalFn
  evalDataset: (draw) =>
    draw.next() < 0.5
      ? { evalDataset: data }
      : { evalDataset: draw.pick([5, 'x', {}, null]), evalFn: () => 0 },
  epochCallbackPolicy: (draw) => ({
    epochCallbackPolicy: draw.pick(['slowest', 5, { rank: 1 }, { rank: -1 }, { rank: 0.5 }, {}, null, []]),
  }),
  maxFailure: (draw) => ({
    maxFailure: draw.pick([
      0,
      -1,
      1.5,
      '1',
      {},
      null,
      { percent: -5 },
      { percent: 150 },
      { absolute: 0 },
      { absolute: 1.5 },
      { absolute: 1, percent: 5 },
    ]),
  }),
  heartbeatTimeoutMs: (draw) => ({ heartbeatTimeoutMs: notPositiveInteger(draw) }),
  timeoutMs: (draw) => ({ timeoutMs: notPositiveInteger(draw) }),
  livenessMs: (draw) => ({ livenessMs: draw.pick([100, 0, -1, 499, Number.NaN, '3000', null, {}]) }),
  prefetch: (draw) => ({ prefetch: draw.pick([-1, 1.5, '2', Number.NaN, null, {}]) }),
  progress: (draw) => ({ progress: draw.pick(['yes', 5, null, { unknown: 1 }, { intervalMs: -1 }, []]) }),
  metricsLog: (draw) => ({ metricsLog: notPath(draw) }),
  dashboard: (draw) => ({
    dashboard: draw.pick([
      { port: -1 },
      { port: 70_000 },
      { port: 1.5 },
      {},
      5,
      null,
      { port: 0, extra: 1 },
      { port: 0, host: '' },
    ]),
  }),
  elastic: (draw) => ({ elastic: draw.pick(['yes', 5, null, {}, []]) }),
  resident: (draw) => ({ resident: draw.pick(['maybe', 5, null, {}, []]) }),
  elche: (draw) => ({ elche: draw.pick([5, 'fast', null, [], { anchor: -1 }, { unknownKnob: 1 }]) }),
};
const OPTIONS = Object.keys(BAD);

/** Harmless valid options drawn around the bad one. */
const VALID: [keyof TrainerOptions, unknown][] = [
  ['seed', 7],
  ['maxGradNorm', 1],
  ['elastic', false],
  ['prefetch', 1],
  ['resident', false],
  ['progress', false],
  ['timeoutMs', 5_000],
];

function describeValue(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol' || typeof value === 'bigint') return String(value);
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Sets `options` on `target` one by one through its methods, or at once through `options({...})`. */
function apply(target: TrainerBuilder<Linear>, options: Record<string, unknown>, viaOptions: boolean): void {
  if (viaOptions) {
    target.options(options as TrainerOptions<Linear>);
    return;
  }
  for (const [key, value] of Object.entries(options)) {
    (target as unknown as Record<string, (value: unknown) => unknown>)[key]?.(value);
  }
}

const CALLS = 10_000;

describe('10 000 malformed calls against the Trainer', () => {
  it('each is a typed FlodlError before anything starts; the process trains on afterwards', async () => {
    const draw = new SeededDraw(20_261_201);
    const tensorsBefore = liveTensorCount();
    const escaped: string[] = [];
    const untyped: string[] = [];
    const codes = new Map<string, number>();
    const expectTyped = (what: string, call: () => unknown): void => {
      try {
        const returned = call();
        escaped.push(what);
        // A run that started anyway: stop it so the next draws run alone.
        const handle = returned as { stop?: () => void; join?: () => Promise<unknown> } | undefined;
        handle?.stop?.();
      } catch (error) {
        if (!FlodlError.isInstance(error)) untyped.push(`${what}: ${String(error)}`);
        else codes.set(error.code, (codes.get(error.code) ?? 0) + 1);
      }
    };
    let calls = 0;
    // Built runs the later draws misuse (after finish, twice).
    const finished: { run: ReturnType<TrainerBuilder<Linear>['run']>; target: TrainerBuilder<Linear> }[] = [];
    const folder = mkdtempSync(join(tmpdir(), 'flodl-misuse-'));
    for (let index = 0; index < 4; index++) {
      const target = builder().dataset(data).batchSize(4).numEpochs(1).devices(['cpu']).progress(false);
      if (index % 2 === 1) target.savePath(join(folder, `run${index}`));
      const run = target.run();
      await run.join();
      finished.push({ run, target });
    }
    while (calls < CALLS) {
      const kind = draw.next();
      calls += 1;
      if (kind < 0.9) {
        // A bad option among valid ones, set by its method or through options({...}).
        const option = draw.pick(OPTIONS);
        const bad = (BAD[option] as BadOption)(draw);
        const around = Object.fromEntries(VALID.filter(() => draw.next() < 0.3));
        const options = { dataset: data, batchSize: 4, numEpochs: 1, devices: ['cpu'], ...around, ...bad };
        const viaOptions = draw.next() < 0.3;
        const what = `${option} = ${describeValue(bad[option as keyof TrainerOptions])}${viaOptions ? ' (options)' : ''}`;
        expectTyped(what, () => {
          const target = builder();
          apply(target, options, viaOptions);
          return target.run();
        });
      } else if (kind < 0.93) {
        expectTyped('options() with an unknown name or no object', () =>
          builder().options(draw.pick([{ batchSizes: 4 }, { unknown: 1 }, 5, 'x', null]) as never),
        );
      } else if (kind < 0.96) {
        const slot = draw.int(3);
        const factories: unknown[] = [
          () => new Linear(4, 1),
          (params: never) => new SGD(params, { lr: 0.1 }),
          () => 0,
        ];
        factories[slot] = draw.pick([5, null, undefined, {}, 'model', []]);
        expectTyped(`Trainer.builder with factory ${slot} not a function`, () =>
          Trainer.builder(...(factories as Parameters<typeof Trainer.builder>)),
        );
      } else {
        // Wrong order and calls after the run finished.
        const { run, target } = draw.pick(finished);
        const misuse = draw.int(3);
        if (misuse === 0) expectTyped('run() again on a used builder', () => target.run());
        else if (misuse === 1)
          expectTyped('requestCheckpoint() after the run finished', () => run.requestCheckpoint());
        else {
          const option = draw.pick(['batchSize', 'numEpochs', 'seed', 'savePath'] as const);
          expectTyped(`${option}() after run()`, () =>
            (target as unknown as Record<string, (value: unknown) => unknown>)[option]?.(
              option === 'savePath' ? '/tmp/x' : 2,
            ),
          );
        }
      }
    }
    expect(calls).toBe(CALLS);
    expect({ untyped: [...new Set(untyped)].sort(), escaped: [...new Set(escaped)].sort() }).toEqual({
      untyped: [],
      escaped: [],
    });
    expect([...codes.keys()]).toEqual(['ERR_INVALID_ARGUMENT']);
    for (const { run } of finished) for (const tensor of (await run.join()).params) tensor.dispose();
    // The process is intact: a real run still trains.
    const state = await builder()
      .dataset(data)
      .batchSize(4)
      .numEpochs(2)
      .devices(['cpu'])
      .progress(false)
      .run()
      .join();
    expect(state.params.length).toBe(2);
    for (const tensor of [...state.params, ...state.buffers]) tensor.dispose();
    expect(liveTensorCount()).toBe(tensorsBefore);
    rmSync(folder, { recursive: true, force: true });
  });
});
