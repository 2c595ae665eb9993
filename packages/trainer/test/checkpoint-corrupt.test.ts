// Bad bundles: a truncated, corrupt or foreign file is a typed ERR_CHECKPOINT naming the file,
// nothing is built, nothing on disk changes; a bundle write that fails (or a process killed
// while writing) leaves the previous bundles loadable.
import { spawn } from 'node:child_process';
import {
  closeSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mseLoss } from '@flodl/autograd';
import { Adam, Linear } from '@flodl/nn';
import { FlodlError, manualSeed, randn } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { writeBundle } from '../src/checkpoint/write.js';
import { TensorDataset } from '../src/data/index.js';
import { periodicBundles, readCheckpoint, Trainer } from '../src/index.js';
import { temporaryFolder } from './helpers.js';

const folder = temporaryFolder('bad-bundles');
manualSeed(2);
const x = randn([32, 4]);
const data = new TensorDataset([x, x.matmul(randn([4, 2]))]);

const builder = (epochs = 1, width = 2) =>
  Trainer.builder(
    () => new Linear(4, width),
    (params) => new Adam(params, { lr: 0.01 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  )
    .dataset(data)
    .batchSize(8)
    .numEpochs(epochs)
    .devices(['cpu']);

/** Every file of `dir` (not its folders), name → bytes (hex). */
const snapshot = (dir: string) =>
  Object.fromEntries(
    readdirSync(dir)
      .filter((name) => statSync(join(dir, name)).isFile())
      .map((name) => [name, readFileSync(join(dir, name)).toString('hex')]),
  );

/** The error `fn` rejects with (or throws). */
async function failure(fn: () => unknown): Promise<FlodlError> {
  try {
    await fn();
  } catch (error) {
    if (FlodlError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a failure');
}

describe('bad checkpoint bundles', () => {
  it('refuses each kind of damage with ERR_CHECKPOINT naming the file, changing nothing', async () => {
    const good = join(folder, 'good', 'run');
    mkdirSync(join(folder, 'good'));
    await builder().savePath(good).run().join();
    const other = join(folder, 'other', 'run');
    mkdirSync(join(folder, 'other'));
    await builder(2).savePath(other).run().join();

    const damages: [string, (stem: string) => void, string, RegExp][] = [
      ['truncated model', (stem) => truncateSync(`${stem}.safetensors`, 40), '.safetensors', /truncated/],
      [
        'huge header length',
        (stem) => {
          const fd = openSync(`${stem}.safetensors`, 'r+');
          writeSync(fd, Buffer.from([255, 255, 255, 255, 255, 255, 255, 127]), 0, 8, 0);
          closeSync(fd);
        },
        '.safetensors',
        // Same size, other bytes: the checksum the meta recorded refuses it first.
        /does not match the checksum/,
      ],
      [
        'bad meta JSON',
        (stem) => writeFileSync(`${stem}.meta.json`, '{"format": "flodl.checkpoint", '),
        '.meta.json',
        /not JSON/,
      ],
      [
        'a newer format version',
        (stem) => {
          const meta = JSON.parse(readFileSync(`${stem}.meta.json`, 'utf8'));
          writeFileSync(`${stem}.meta.json`, JSON.stringify({ ...meta, version: 99 }));
        },
        '.meta.json',
        /newer flodl/,
      ],
      [
        'a foreign meta file',
        (stem) => writeFileSync(`${stem}.meta.json`, '{"name": "some-package"}'),
        '.meta.json',
        /not a checkpoint meta/,
      ],
      [
        'a meta file too large to read',
        (stem) => truncateSync(`${stem}.meta.json`, 17 * 1024 * 1024),
        '.meta.json',
        /too large/,
      ],
      [
        'a field of the wrong type',
        (stem) => {
          const meta = JSON.parse(readFileSync(`${stem}.meta.json`, 'utf8'));
          writeFileSync(
            `${stem}.meta.json`,
            JSON.stringify({ ...meta, cursor: { ...meta.cursor, batch: -1 } }),
          );
        },
        '.meta.json',
        /invalid cursor/,
      ],
      [
        'the model of another bundle',
        (stem) => copyFileSync(`${other}.safetensors`, `${stem}.safetensors`),
        '.safetensors',
        /another bundle/,
      ],
      [
        'an optimizer file missing',
        (stem) => truncateSync(`${stem}.optim.safetensors`, 0),
        '.optim.safetensors',
        /truncated/,
      ],
    ];
    for (const [index, [name, damage, file, pattern]] of damages.entries()) {
      const dir = join(folder, `case-${index}`);
      mkdirSync(dir);
      for (const entry of readdirSync(join(folder, 'good')))
        copyFileSync(join(folder, 'good', entry), join(dir, entry));
      const stem = join(dir, 'run');
      damage(stem);
      const before = snapshot(dir);
      const error = await failure(() => builder().resumeFrom(stem).run().join());
      expect(error.code, name).toBe('ERR_CHECKPOINT');
      expect(error.message, name).toContain(`${stem}${file}`);
      expect(error.message, name).toMatch(pattern);
      expect(snapshot(dir), name).toEqual(before);
    }
    // A model of another shape: refused naming the model file, the bundle untouched.
    const before = snapshot(join(folder, 'good'));
    const error = await failure(() => builder(1, 3).resumeFrom(good).run().join());
    expect(error.code).toBe('ERR_CHECKPOINT');
    expect(error.message).toContain(`${good}.safetensors`);
    expect(snapshot(join(folder, 'good'))).toEqual(before);
    // No bundle at all.
    const missing = await failure(() => readCheckpoint(join(folder, 'nothing')));
    expect(missing.code).toBe('ERR_CHECKPOINT');
    expect(missing.message).toContain(join(folder, 'nothing.meta.json'));
  });

  it('a failed write leaves the stem incomplete and the previous bundle loadable', async () => {
    const savePath = join(folder, 'rotating');
    await builder(2).savePath(savePath).checkpointEvery(1).run().join();
    expect(periodicBundles(savePath).map((bundle) => bundle.step)).toEqual([4, 8]);
    const before = snapshot(folder);
    // The next bundle's optimizer file cannot be written (a folder is in its way).
    const model = new Linear(4, 2);
    const optimizer = new Adam(model.parameters(), { lr: 0.01 });
    mkdirSync(`${savePath}.step-12.optim.safetensors`);
    const source = {
      model,
      optimizer,
      scheduler: undefined,
      device: 'cpu' as const,
      rank: 0,
      worldSize: 1,
      mode: 'single',
      membership: [0],
      seed: 42,
      batchSize: 8,
      datasetLength: 32,
      globalStep: 0,
      localStep: 12,
      stepsSinceAvg: 12,
      averagingCount: 0,
      cursor: { epoch: 3, batch: 0, totalLoss: 0, computeMs: 0, dataMs: 0 },
      covered: [],
    };
    const error = await failure(() => writeBundle(`${savePath}.step-12`, source, 'every'));
    expect(error.code).toBe('ERR_IO');
    expect(existsSync(`${savePath}.step-12.meta.json`)).toBe(false);
    // Every earlier file is as it was; the newest complete bundle still resumes.
    const after = snapshot(folder);
    for (const [name, bytes] of Object.entries(before)) expect(after[name], name).toBe(bytes);
    expect(periodicBundles(savePath).map((bundle) => bundle.step)).toEqual([4, 8]);
    // The same failure while rewriting the final bundle: resumeFrom(savePath) falls back to the newest periodic one.
    rmSync(`${savePath}.optim.safetensors`);
    mkdirSync(`${savePath}.optim.safetensors`);
    expect((await failure(() => writeBundle(savePath, source, 'final'))).code).toBe('ERR_IO');
    expect(readCheckpoint(savePath).stem).toBe(`${savePath}.step-8`);
    const resumed = await builder(3).resumeFrom(savePath).run().join();
    expect(resumed.params.length).toBe(2);
    optimizer.dispose();
    model.dispose();
  });

  it('a process killed while it writes bundles leaves every complete bundle loadable', async () => {
    const savePath = join(folder, 'killed', 'run');
    mkdirSync(join(folder, 'killed'));
    const script = fileURLToPath(new URL('./fixtures/bundle-writer.ts', import.meta.url));
    const child = spawn(process.execPath, ['--import', 'tsx', script, savePath], { stdio: 'ignore' });
    // Kill it once a few bundles are out: a write is in flight at almost any moment.
    const deadline = Date.now() + 60_000;
    while (periodicBundles(savePath).length < 2 && Date.now() < deadline && child.exitCode === null)
      await new Promise((resolve) => setTimeout(resolve, 20));
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));
    const bundles = periodicBundles(savePath);
    expect(bundles.length).toBeGreaterThanOrEqual(2);
    for (const { stem } of bundles) expect(readCheckpoint(stem).stem).toBe(stem);
    const newest = readCheckpoint(bundles.at(-1)!.stem);
    const resumed = await builder(newest.meta.epoch + 1)
      .resumeFrom(newest.stem)
      .run()
      .join();
    expect(resumed.params.length).toBe(2);
  });
});
