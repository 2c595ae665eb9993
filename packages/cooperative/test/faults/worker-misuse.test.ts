// 10 000 malformed calls against the cooperative Worker, drawn by a seeded generator: `step`
// with no batch in flight, with something that is not the loss, twice for one batch; every
// method of a finished Worker with arbitrary arguments; `intoWorker()` with bad options. Every
// one must be a typed FlodlError; none may crash the process or leak a tensor, and the Worker
// trains on between the bad calls.
import { SeededDraw } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import {
  FlodlError,
  Linear,
  liveTensorCount,
  manualSeed,
  mseLoss,
  randn,
  SGD,
  TensorDataset,
  Trainer,
  type Worker,
} from '../../src/index.js';

manualSeed(5);
// The datasets keep their own handles: the tensors made here are freed at once, so none waits
// for the collector while the test counts live tensors.
const x = randn([16, 4]);
const w = randn([4, 1]);
const y = x.matmul(w);
const data = new TensorDataset([x, y]);
for (const tensor of [x, w, y]) tensor.dispose();

const builder = () =>
  Trainer.builder(
    () => new Linear(4, 1),
    (params) => new SGD(params, { lr: 0.05 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  )
    .dataset(data)
    .batchSize(4)
    .numEpochs(1)
    .devices(['cpu'])
    .progress(false);

/** Anything but the loss tensor. */
function notLoss(draw: SeededDraw): unknown {
  return draw.pick([
    undefined,
    null,
    0,
    1.5,
    'loss',
    {},
    [],
    { item: 5 },
    () => 0,
    Symbol('loss'),
    10n,
    true,
  ]);
}

const FINISHED_CALLS = [
  'model',
  'nextPlan',
  'nextBatch',
  'step',
  'requestCheckpoint',
  'requestEval',
] as const;

/** Bad options `intoWorker()` must refuse. */
const BAD_OPTIONS: [string, unknown][] = [
  ['batchSize', 0],
  ['batchSize', 17],
  ['numEpochs', -1],
  ['devices', []],
  ['devices', ['gpu']],
  ['mode', 'Sync'],
  ['seed', 1.5],
  ['evalEvery', 2],
  ['checkpointEvery', 1],
  ['livenessMs', 10],
  ['elastic', 'yes'],
  ['resident', 'maybe'],
  ['prefetch', -1],
  ['maxFailure', { percent: 5 }],
];

const CALLS = 10_000;

describe('10 000 malformed calls against the cooperative Worker', () => {
  it('each is a typed FlodlError; the Worker trains on between them; nothing leaks', async () => {
    const draw = new SeededDraw(20_261_202);
    const tensorsBefore = liveTensorCount();
    const untyped = new Set<string>();
    const accepted = new Set<string>();
    let calls = 0;
    const expectTyped = async (what: string, call: () => unknown): Promise<void> => {
      calls += 1;
      try {
        await call();
        accepted.add(what);
      } catch (error) {
        if (!FlodlError.isInstance(error)) untyped.add(`${what}: ${String(error)}`);
      }
    };
    // Finished Workers, for the calls after finish().
    const finished: Worker<Linear>[] = [];
    for (let index = 0; index < 3; index++) {
      const worker = await builder().intoWorker();
      for (const tensor of (await worker.finish()).params) tensor.dispose();
      finished.push(worker);
    }
    // A live Worker the draws interleave with real steps.
    let live = await builder().intoWorker();
    let steps = 0;
    while (calls < CALLS) {
      const kind = draw.next();
      if (kind < 0.6) {
        const worker = draw.pick(finished);
        const method = draw.pick(FINISHED_CALLS);
        await expectTyped(`${method} after finish()`, () =>
          method === 'model'
            ? worker.model
            : (worker as unknown as Record<string, (value: unknown) => unknown>)[method]?.(notLoss(draw)),
        );
      } else if (kind < 0.75) {
        await expectTyped('step() with no batch in flight', () => live.step(notLoss(draw) as never));
      } else if (kind < 0.97) {
        // A real step of the live Worker, with bad calls around it.
        let plan = await live.nextPlan();
        let batch = plan ? await live.nextBatch() : null;
        if (!batch) {
          for (const tensor of (await live.finish()).params) tensor.dispose();
          live = await builder().intoWorker();
          plan = await live.nextPlan();
          batch = await live.nextBatch();
        }
        if (!batch) throw new Error('a fresh Worker gave no batch');
        await expectTyped('step() with something that is not the loss', () =>
          live.step(notLoss(draw) as never),
        );
        const loss = mseLoss(live.model.forward(batch.at(0)), batch.at(1));
        loss.backward();
        await live.step(loss);
        steps += 1;
        await expectTyped('step() twice for one batch', () => live.step(loss));
      } else {
        const [option, value] = draw.pick(BAD_OPTIONS);
        await expectTyped(`intoWorker() with ${option} = ${JSON.stringify(value)}`, async () => {
          const target = builder();
          (target as unknown as Record<string, (value: unknown) => unknown>)[option]?.(value);
          const worker = await target.intoWorker();
          // One that formed anyway must not linger.
          for (const tensor of (await worker.finish()).params) tensor.dispose();
        });
      }
    }
    expect({ untyped: [...untyped].sort(), accepted: [...accepted].sort() }).toEqual({
      untyped: [],
      accepted: [],
    });
    expect(steps).toBeGreaterThan(100);
    for (const tensor of (await live.finish()).params) tensor.dispose();
    expect(liveTensorCount()).toBe(tensorsBefore);
  });
});
