// The cooperative Worker's checkpoint bundles on one device: a loop left mid-epoch, finished
// (its bundle written) and resumed equals the uninterrupted loop bit for bit; requestCheckpoint
// writes a bundle between steps or after the step in flight.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  Adam,
  Dropout,
  type FlodlError,
  Linear,
  manualSeed,
  mseLoss,
  ReLU,
  randn,
  readCheckpoint,
  Sequential,
  StepLR,
  type Tensor,
  TensorDataset,
  Trainer,
  toBytes,
  type Worker,
} from '../src/index.js';

const folder = mkdtempSync(join(tmpdir(), 'flodl-worker-resume-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

manualSeed(5);
const x = randn([48, 4]);
const data = new TensorDataset([x, x.matmul(randn([4, 2]))]); // 6 batches of 8 per epoch
const hex = (tensors: Tensor[]) => tensors.map((tensor) => Buffer.from(toBytes(tensor)).toString('hex'));

const builder = () =>
  Trainer.builder(
    () => new Sequential(new Linear(4, 8), new ReLU(), new Dropout(0.25), new Linear(8, 2)),
    (params) => new Adam(params, { lr: 0.01 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  )
    .dataset(data)
    .batchSize(8)
    .numEpochs(3)
    .devices(['cpu'])
    .scheduler((optimizer) => new StepLR(optimizer, { stepSize: 4, gamma: 0.5 }));

/** Runs the loop; leaves it (without draining the plan) once `stopAfter` steps are done. */
async function loop(worker: Worker, stopAfter = Number.POSITIVE_INFINITY): Promise<number> {
  let steps = 0;
  for (let plan = await worker.nextPlan(); plan; plan = await worker.nextPlan()) {
    for (let batch = await worker.nextBatch(); batch; batch = await worker.nextBatch()) {
      const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
      loss.backward();
      await worker.step(loss);
      steps += 1;
      if (steps === stopAfter) return steps;
    }
  }
  return steps;
}

describe('cooperative Worker, checkpoint bundles', () => {
  it('N steps straight equal N/2 + finish + resume + N/2, bit for bit', async () => {
    const straight = await builder().intoWorker();
    expect(await loop(straight)).toBe(18);
    const expected = hex((await straight.finish()).params);

    const stem = join(folder, 'worker');
    const first = await builder().savePath(stem).intoWorker();
    expect(await loop(first, 8)).toBe(8);
    await first.finish();
    const saved = readCheckpoint(stem);
    expect(saved.meta).toMatchObject({ reason: 'stop', localStep: 8, cursor: { epoch: 1, batch: 2 } });

    const resumed = await builder().resumeFrom(stem).intoWorker();
    expect(await loop(resumed)).toBe(10);
    expect(hex((await resumed.finish()).params)).toEqual(expected);
  });

  it('requestCheckpoint writes at once between steps, or after the step in flight', async () => {
    const savePath = join(folder, 'requested');
    const worker = await builder().savePath(savePath).intoWorker();
    await worker.nextPlan();
    worker.requestCheckpoint(); // between steps: at once, before any step
    expect(readCheckpoint(`${savePath}.step-0`).meta.cursor).toMatchObject({ epoch: 0, batch: 0 });
    const batch = await worker.nextBatch();
    if (!batch) throw new Error('no batch');
    worker.requestCheckpoint(); // a batch in flight: after its step
    const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
    loss.backward();
    await worker.step(loss);
    expect(readCheckpoint(`${savePath}.step-1`).meta).toMatchObject({ reason: 'request', localStep: 1 });
    await worker.finish();
    expect(readCheckpoint(savePath).meta.cursor).toMatchObject({ epoch: 0, batch: 1 });
  });

  it('holds <savePath>.lock until finish(): a second Worker or run on the path is refused meanwhile', async () => {
    const savePath = join(folder, 'locked');
    const lock = `${savePath}.lock`;
    const worker = await builder().savePath(savePath).intoWorker();
    expect(JSON.parse(readFileSync(lock, 'utf8'))).toMatchObject({
      pid: process.pid,
      op: 'Trainer.intoWorker',
    });
    const refused = await builder()
      .savePath(savePath)
      .intoWorker()
      .then(
        () => undefined,
        (error: unknown) => error as FlodlError,
      );
    expect(refused?.code).toBe('ERR_CHECKPOINT');
    expect(refused?.message).toContain(`is held by pid ${process.pid}`);
    expect(() => builder().savePath(savePath).run()).toThrow(/is in use by another run/);
    expect(await loop(worker, 3)).toBe(3);
    await worker.finish();
    expect(existsSync(lock)).toBe(false);
    // Free again: the path resumes and is locked by the new Worker only.
    const resumed = await builder().resumeFrom(savePath).savePath(savePath).intoWorker();
    expect(existsSync(lock)).toBe(true);
    await resumed.finish();
    expect(existsSync(lock)).toBe(false);
  });
});
