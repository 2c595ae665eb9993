// A cluster run's savePath: the launching process holds `<savePath>.lock` for the whole run (a
// second run on the path is refused, naming the launcher's pid) and removes it at the end; a
// cluster resume from a bundle with a rank's optimizer file changed in place is refused by the
// launcher, naming the file, before any rank starts. Two CPU ranks, a tiny model, a few batches.
import { closeSync, existsSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { mseLoss } from '@flodl/autograd';
import { Linear, SGD } from '@flodl/nn';
import { randn } from '@flodl/tensor-native';
import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { TensorDataset } from '../src/data/index.js';
import { lockPathOf, readCheckpoint, Trainer } from '../src/index.js';
import { runScript } from './cluster-script.js';
import { temporaryFolder } from './helpers.js';

const folder = temporaryFolder('cluster-lock');
const base = {
  mode: 'CpuSync',
  devices: ['cpu', 'cpu'],
  totalSamples: 64,
  batchSize: 8,
  numEpochs: 2,
  momentum: 0.5,
};

describe('a cluster run and its savePath', () => {
  it('the launcher holds the lock for the run; a resume from a damaged rank file is refused before any rank starts', async () => {
    const savePath = join(folder, 'run');
    const lock = lockPathOf(savePath);
    // Slow steps keep the run going while this process tries the same savePath.
    const running = runScript({ ...base, savePath, stepDelayMs: [150, 150] });
    let ended = false;
    void running.then(() => {
      ended = true;
    });
    // Until the launcher's lock is there with its owner written (a loaded machine starts it late).
    const written = () => existsSync(lock) && readFileSync(lock, 'utf8').endsWith('\n');
    while (!written() && !ended) await new Promise((resolve) => setTimeout(resolve, 20));
    if (ended) throw new Error(`the run ended before its lock was seen: ${(await running).stderr}`);
    const holder = JSON.parse(readFileSync(lock, 'utf8'));
    expect(holder.pid).not.toBe(process.pid);
    expect(holder.op).toBe('Trainer.run');
    const second = Trainer.builder(
      () => new Linear(4, 1),
      (params) => new SGD(params, { lr: 0.05 }),
      (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
    )
      .dataset(new TensorDataset([randn([16, 4]), randn([16, 1])]))
      .batchSize(8)
      .numEpochs(1)
      .devices(['cpu'])
      .savePath(savePath);
    expect(caught(() => second.run(), 'ERR_CHECKPOINT').message).toContain(
      `is held by pid ${holder.pid} on `,
    );
    const { status, stderr } = await running;
    expect(status, stderr).toBe(0);
    expect(existsSync(lock)).toBe(false);
    const bundle = readCheckpoint(savePath);
    expect([...bundle.optimizers.keys()].sort()).toEqual([0, 1]);

    // Rank 1's optimizer file overwritten in place: the launcher refuses the resume.
    const damaged = bundle.optimizers.get(1) as string;
    const size = statSync(damaged).size;
    const descriptor = openSync(damaged, 'r+');
    writeSync(descriptor, Buffer.alloc(8, 0xff), 0, 8, size - 8);
    closeSync(descriptor);
    const resumed = await runScript({ ...base, resumeFrom: savePath });
    expect(resumed.status).not.toBe(0);
    expect(resumed.stderr).toContain(`${damaged}: does not match the checksum its bundle recorded`);
    expect(resumed.stderr).toContain('ERR_CHECKPOINT');
    expect(resumed.stderr).not.toMatch(/\[rank \d\]/);
    expect(existsSync(lock)).toBe(false);
  }, 240_000);
});
