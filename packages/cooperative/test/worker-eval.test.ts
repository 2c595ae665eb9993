// The cooperative Worker on one device runs the builder's evalFn after its epochs, as the
// managed one-device run does: the same points (evalEvery, requestEval), the same metrics, and
// the same surfaces (pollEval, evalResultFn, the progress display, the metrics log).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import {
  Linear,
  manualSeed,
  mseLoss,
  noGrad,
  randn,
  readMetricsLog,
  SGD,
  type Tensor,
  TensorDataset,
  Trainer,
  type Worker,
} from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'flodl-worker-eval-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** 32 samples of a linear map, the same on every call. */
function data(): TensorDataset {
  manualSeed(11);
  const x = randn([32, 4]);
  return new TensorDataset([x, x.matmul(randn([4, 2]))]);
}

const samples = data();

/** The mean squared error of `model` on the first 16 samples (the eval). */
function evaluate(model: Linear): number {
  const [x, y] = samples.getBatch(Array.from({ length: 16 }, (_, index) => index));
  const metric = noGrad(() => mseLoss(model.forward(x as Tensor), y as Tensor).item() as number);
  x?.dispose();
  y?.dispose();
  return metric;
}

function builder(epochs: number) {
  return Trainer.builder(
    () => new Linear(4, 2),
    (params) => new SGD(params, { lr: 0.05 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  )
    .dataset(samples)
    .batchSize(8)
    .numEpochs(epochs)
    .devices(['cpu'])
    .seed(3);
}

/** Trains every plan with `step(loss)`; `during(epoch)` runs once per plan, after its first step. */
async function train(worker: Worker<Linear>, during: (epoch: number) => void = () => undefined) {
  for (let plan = await worker.nextPlan(); plan; plan = await worker.nextPlan()) {
    let first = true;
    for (let batch = await worker.nextBatch(); batch; batch = await worker.nextBatch()) {
      const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
      loss.backward();
      await worker.step(loss);
      if (first) during(plan.epoch);
      first = false;
    }
  }
}

describe('cooperative Worker eval, one device', () => {
  it('runs evalFn every evalEvery epochs with the managed run’s metrics, on every surface', async () => {
    const managed: [number, number][] = [];
    await builder(4)
      .evalFn(evaluate)
      .evalEvery(2)
      .evalResultFn((epoch, metric) => managed.push([epoch, metric]))
      .progress(false)
      .run()
      .join();
    expect(managed.map(([epoch]) => epoch)).toEqual([2, 4]);

    const path = join(dir, 'every.jsonl');
    const lines: string[] = [];
    const results: [number, number][] = [];
    const worker = await builder(4)
      .evalFn(evaluate)
      .evalEvery(2)
      .evalResultFn((epoch, metric) => results.push([epoch, metric]))
      .metricsLog(path)
      .progress({ stream: { write: (text: string) => lines.push(text) }, tty: false })
      .intoWorker();
    const polled: [number, number][] = [];
    for (let plan = await worker.nextPlan(); plan; plan = await worker.nextPlan()) {
      for (let batch = await worker.nextBatch(); batch; batch = await worker.nextBatch()) {
        const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
        loss.backward();
        await worker.step(loss);
      }
      // The eval of an epoch is in by the time its last nextBatch() returned null.
      polled.push(...worker.pollEval());
    }
    await worker.finish();
    // The same points and, the run being the same, the same metrics bit for bit.
    expect(polled).toEqual(managed);
    expect(results).toEqual(managed);
    expect(worker.pollEval()).toEqual([]);
    const evals = readMetricsLog(path).records.filter((record) => record.kind === 'eval');
    expect(evals.map((record) => [record.epoch, record.metric])).toEqual(managed);
    const evalLines = lines
      .join('')
      .split('\n')
      .filter((line) => line.startsWith('eval'));
    expect(evalLines).toEqual([
      expect.stringMatching(/^eval epoch 2 · eval /),
      expect.stringMatching(/^eval epoch 4 /),
    ]);
  });

  it('evaluates an epoch the loop left undrained when nextPlan() closes it', async () => {
    const worker = await builder(2).evalFn(evaluate).progress(false).intoWorker();
    const polled: number[] = [];
    for (let plan = await worker.nextPlan(); plan; plan = await worker.nextPlan()) {
      const batch = await worker.nextBatch();
      if (!batch) break;
      const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
      loss.backward();
      await worker.step(loss);
      polled.push(...worker.pollEval().map(([epoch]) => epoch));
    }
    polled.push(...worker.pollEval().map(([epoch]) => epoch));
    await worker.finish();
    expect(polled).toEqual([1, 2]);
  });

  it('requestEval() evaluates after the epoch in flight, whatever evalEvery says; a no-op without evalFn', async () => {
    const worker = await builder(3).evalFn(evaluate).evalEvery(0).progress(false).intoWorker();
    await train(worker, (epoch) => {
      if (epoch === 1) worker.requestEval();
    });
    await worker.finish();
    expect(worker.pollEval().map(([epoch]) => epoch)).toEqual([2]);

    const without = await builder(1).progress(false).intoWorker();
    await train(without, () => without.requestEval());
    await without.finish();
    expect(without.pollEval()).toEqual([]);
  });

  it('a failing evalFn is warned about and logged, not listed; training goes on', async () => {
    const warned: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      warned.push(String(chunk));
      return true;
    });
    const path = join(dir, 'failing.jsonl');
    let state: Awaited<ReturnType<Worker<Linear>['finish']>>;
    try {
      const worker = await builder(2)
        .evalFn(() => {
          throw new Error('no eval today');
        })
        .metricsLog(path)
        .progress(false)
        .intoWorker();
      await train(worker);
      state = await worker.finish();
      expect(worker.pollEval()).toEqual([]);
    } finally {
      spy.mockRestore();
    }
    expect(state.params.length).toBe(2);
    const evals = readMetricsLog(path).records.filter((record) => record.kind === 'eval');
    expect(evals.map((record) => [record.epoch, record.error])).toEqual([
      [1, 'no eval today'],
      [2, 'no eval today'],
    ]);
    expect(warned).toEqual([
      'flodl: evalFn failed: no eval today\n',
      'flodl: evalFn failed: no eval today\n',
    ]);
  });
});
