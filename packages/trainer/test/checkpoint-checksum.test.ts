// Each file of a bundle carries its SHA-256 in the meta: a file overwritten in place (same
// size, other bytes) is refused with ERR_CHECKPOINT naming the file, both hashes and the
// older bundle to resume from, before anything is built; nothing on disk changes; a bundle
// written before checksums (meta version 2) still resumes.
import { createHash } from 'node:crypto';
import {
  closeSync,
  copyFileSync,
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
import { mseLoss } from '@flodl/autograd';
import { Adam, Linear, StepLR } from '@flodl/nn';
import { FlodlError, manualSeed, randn } from '@flodl/tensor-native';
import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { TensorDataset } from '../src/data/index.js';
import { type CheckpointMeta, readCheckpoint, Trainer } from '../src/index.js';
import { temporaryFolder } from './helpers.js';

const folder = temporaryFolder('checksums');
manualSeed(5);
const x = randn([32, 4]);
const data = new TensorDataset([x, x.matmul(randn([4, 2]))]);

const builder = (epochs = 1) =>
  Trainer.builder(
    () => new Linear(4, 2),
    (params) => new Adam(params, { lr: 0.01 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  )
    .dataset(data)
    .batchSize(8)
    .numEpochs(epochs)
    .devices(['cpu'])
    .scheduler((optimizer) => new StepLR(optimizer, { stepSize: 3, gamma: 0.5 }));

const sha256 = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
const readMetaFile = (stem: string): CheckpointMeta => JSON.parse(readFileSync(`${stem}.meta.json`, 'utf8'));

/** Every file of `dir`, name → bytes (hex). */
const snapshot = (dir: string) =>
  Object.fromEntries(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name)).toString('hex')]));

/** Overwrites `count` bytes at the end of `path` in place with 0xFF (the size stays). */
function overwriteTail(path: string, count: number): void {
  const size = statSync(path).size;
  const descriptor = openSync(path, 'r+');
  writeSync(descriptor, Buffer.alloc(count, 0xff), 0, count, size - count);
  closeSync(descriptor);
}

/** Changes one digit of a scheduler file's state in place (still JSON, same size, same bundle id). */
function changeDigit(path: string): void {
  const text = readFileSync(path, 'utf8');
  const state = text.indexOf('"state"');
  const at = state + text.slice(state).search(/\d/);
  writeFileSync(path, text.slice(0, at) + (text[at] === '9' ? '8' : '9') + text.slice(at + 1));
}

/** A copy of the bundle folder `source` at `name`. */
function copyFolder(source: string, name: string): string {
  const dir = join(folder, name);
  mkdirSync(dir);
  for (const entry of readdirSync(source)) copyFileSync(join(source, entry), join(dir, entry));
  return dir;
}

async function failure(fn: () => unknown): Promise<FlodlError> {
  try {
    await fn();
  } catch (error) {
    if (FlodlError.isInstance(error)) return error;
    throw error;
  }
  throw new Error('expected a failure');
}

describe('bundle checksums', () => {
  it("records each file's SHA-256 from the bytes it wrote", async () => {
    const savePath = join(folder, 'recorded', 'run');
    await builder().savePath(savePath).run().join();
    const meta = readMetaFile(savePath);
    expect(meta.version).toBe(3);
    const files = [meta.files.model, ...Object.values(meta.files.optimizer), meta.files.scheduler];
    expect(files.length).toBe(3);
    for (const file of files)
      expect(file?.sha256, file?.name).toBe(sha256(join(folder, 'recorded', file!.name)));
  });

  it('refuses a file of each kind changed in place, naming it, both hashes and the older bundle; nothing changes', async () => {
    const good = join(folder, 'good');
    const savePath = join(good, 'run');
    // Two epochs, a bundle per epoch (steps 4 and 8) and the final one at savePath.
    await builder(2).savePath(savePath).checkpointEvery(1).run().join();
    const cases: [string, string, (path: string) => void][] = [
      ['model', '.safetensors', (path) => overwriteTail(path, 16)],
      ['optimizer', '.optim.safetensors', (path) => overwriteTail(path, 16)],
      ['scheduler', '.scheduler.json', changeDigit],
    ];
    for (const [kind, suffix, damage] of cases) {
      const dir = copyFolder(good, `in-place-${kind}`);
      const stem = join(dir, 'run');
      const path = `${stem}${suffix}`;
      const recorded = readFileSync(path).length;
      damage(path);
      expect(readFileSync(path).length, kind).toBe(recorded);
      const before = snapshot(dir);
      const error = await failure(() => builder(3).resumeFrom(stem).run().join());
      expect(error.code, kind).toBe('ERR_CHECKPOINT');
      expect(error.message, kind).toContain(`${path}: does not match the checksum its bundle recorded`);
      const file =
        kind === 'model'
          ? readMetaFile(stem).files.model
          : kind === 'optimizer'
            ? readMetaFile(stem).files.optimizer['0']
            : readMetaFile(stem).files.scheduler;
      expect(error.expected, kind).toBe(`sha256 ${file?.sha256}`);
      expect(error.got, kind).toBe(`sha256 ${sha256(path)}`);
      expect(error.expected, kind).not.toBe(error.got);
      // The final bundle at savePath is damaged: the newest periodic one is named instead.
      expect(error.message, kind).toContain(`.resumeFrom('${stem}.step-8')`);
      expect(snapshot(dir), kind).toEqual(before);
      if (kind === 'model')
        expect(
          error.message.replaceAll(dir, '<dir>').replace(/[0-9a-f]{64}/g, '<hex>'),
        ).toMatchInlineSnapshot(`
          "resumeFrom: <dir>/run.safetensors: does not match the checksum its bundle recorded (its bytes changed since it was written); resume from the older bundle instead: .resumeFrom('<dir>/run.step-8')
            expected: sha256 <hex>
            got: sha256 <hex>"
        `);
      // readCheckpoint refuses it the same way, and the process goes on: the good copy resumes.
      expect(caught(() => readCheckpoint(stem)).message).toBe(error.message);
    }
    const resumed = await builder(3).resumeFrom(savePath).run().join();
    expect(resumed.params.length).toBe(2);
  });

  it('a damaged newest periodic bundle is an error naming the next older one, never skipped', async () => {
    const dir = copyFolder(join(folder, 'good'), 'newest');
    const savePath = join(dir, 'run');
    // No final bundle: resumeFrom(savePath) takes the newest periodic one, step 8.
    for (const suffix of ['.meta.json', '.safetensors', '.optim.safetensors', '.scheduler.json'])
      rmSync(`${savePath}${suffix}`);
    expect(readCheckpoint(savePath).stem).toBe(`${savePath}.step-8`);
    overwriteTail(`${savePath}.step-8.safetensors`, 8);
    const error = await failure(() => builder(3).resumeFrom(savePath).run().join());
    expect(error.code).toBe('ERR_CHECKPOINT');
    expect(error.message).toContain(`${savePath}.step-8.safetensors: does not match the checksum`);
    expect(error.message).toContain(`.resumeFrom('${savePath}.step-4')`);
    // The older one named resumes.
    const resumed = await builder(3).resumeFrom(`${savePath}.step-4`).run().join();
    expect(resumed.params.length).toBe(2);
    // The oldest one damaged too: no older bundle is left, and the error says so.
    overwriteTail(`${savePath}.step-4.optim.safetensors`, 8);
    const last = caught(() => readCheckpoint(`${savePath}.step-4`));
    expect(last.message).toMatch(/no older complete bundle of this run is left/);
  });

  it('a truncated file names the older bundle too', () => {
    const dir = copyFolder(join(folder, 'good'), 'truncated');
    const stem = join(dir, 'run');
    truncateSync(`${stem}.optim.safetensors`, 100);
    const error = caught(() => readCheckpoint(stem));
    expect(error.code).toBe('ERR_CHECKPOINT');
    expect(error.message).toContain(`${stem}.optim.safetensors: is truncated; resume from the older bundle`);
    expect(error.got).toBe('100 bytes');
  });

  it('a bundle written before checksums (meta version 2) still resumes', async () => {
    const dir = copyFolder(join(folder, 'good'), 'version-2');
    const stem = join(dir, 'run');
    const meta = readMetaFile(stem);
    const strip = (file: { name: string; bytes: number } | null) =>
      file === null ? null : { name: file.name, bytes: file.bytes };
    const old = {
      ...meta,
      version: 2,
      files: {
        model: strip(meta.files.model),
        optimizer: Object.fromEntries(
          Object.entries(meta.files.optimizer).map(([rank, file]) => [rank, strip(file)]),
        ),
        scheduler: strip(meta.files.scheduler),
      },
    };
    writeFileSync(`${stem}.meta.json`, JSON.stringify(old));
    const bundle = readCheckpoint(stem);
    expect(bundle.meta.version).toBe(2);
    expect(bundle.meta.files.model.sha256).toBeUndefined();
    const resumed = await builder(3).resumeFrom(stem).run().join();
    expect(resumed.params.length).toBe(2);
  });
});
