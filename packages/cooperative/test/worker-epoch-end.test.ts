// The cooperative Worker on one device serves what follows an epoch as the managed one-device
// run does: epochFn before each epoch, metricsFn and pollMetrics after it, and the checkpoints
// due (checkpointEvery with a checkpointFn and a bundle, checkpointAtEpoch).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type EpochMetrics,
  Linear,
  manualSeed,
  mseLoss,
  periodicBundles,
  randn,
  readCheckpoint,
  SGD,
  TensorDataset,
  Trainer,
  type Worker,
} from '../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'flodl-worker-epoch-end-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

manualSeed(11);
const x = randn([32, 4]);
const samples = new TensorDataset([x, x.matmul(randn([4, 2]))]);

interface Seen {
  epochs: number[];
  metrics: EpochMetrics[];
  versions: number[];
}

function builder(seen: Seen, savePath: string) {
  return Trainer.builder(
    () => new Linear(4, 2),
    (params) => new SGD(params, { lr: 0.05 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  )
    .dataset(samples)
    .batchSize(8)
    .numEpochs(3)
    .devices(['cpu'])
    .seed(3)
    .progress(false)
    .epochFn((epoch) => {
      seen.epochs.push(epoch);
    })
    .metricsFn((metrics) => {
      seen.metrics.push(metrics);
    })
    .checkpointEvery(2)
    .checkpointFn((version) => {
      seen.versions.push(version);
    })
    .checkpointAtEpoch(1)
    .savePath(savePath);
}

async function train(worker: Worker<Linear>): Promise<EpochMetrics[]> {
  const polled: EpochMetrics[] = [];
  for (let plan = await worker.nextPlan(); plan; plan = await worker.nextPlan()) {
    for (let batch = await worker.nextBatch(); batch; batch = await worker.nextBatch()) {
      const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
      loss.backward();
      await worker.step(loss);
    }
    polled.push(...worker.pollMetrics());
  }
  return polled;
}

describe('cooperative Worker, one device: what follows an epoch', () => {
  it('runs epochFn, metricsFn and the checkpoints at the managed run’s points, with its metrics', async () => {
    const managed: Seen = { epochs: [], metrics: [], versions: [] };
    const managedPath = join(dir, 'managed');
    await builder(managed, managedPath).run().join();

    const cooperative: Seen = { epochs: [], metrics: [], versions: [] };
    const workerPath = join(dir, 'worker');
    const worker = await builder(cooperative, workerPath).intoWorker();
    const polled = await train(worker);
    const latest = worker.epochMetrics();
    const state = await worker.finish();
    for (const tensor of [...state.params, ...state.buffers]) tensor.dispose();

    expect(cooperative.epochs).toEqual([0, 1, 2]);
    expect(cooperative.epochs).toEqual(managed.epochs);
    expect(cooperative.metrics.map((metrics) => metrics.epoch)).toEqual([0, 1, 2]);
    expect(cooperative.metrics.map((metrics) => metrics.avgLoss)).toEqual(
      managed.metrics.map((metrics) => metrics.avgLoss),
    );
    expect(polled).toEqual(cooperative.metrics);
    expect(latest).toBe(cooperative.metrics[2]);
    expect(cooperative.versions).toEqual([2]);
    expect(cooperative.versions).toEqual(managed.versions);
    // checkpointAtEpoch(1) and checkpointEvery(2): bundles after epochs 1 and 2, as the managed run's.
    const bundles = (path: string) =>
      periodicBundles(path).map(({ stem }) => readCheckpoint(stem).meta.reason);
    expect(bundles(workerPath)).toEqual(bundles(managedPath));
    expect(bundles(workerPath).sort()).toEqual(['atEpoch', 'every']);
    expect(existsSync(`${workerPath}.lock`)).toBe(false);
  });
});
