// The savePath's lock: a run holds `<savePath>.lock` for its life, a second run on the same path
// is refused at its start (naming the holder's pid) and the first is unharmed; the lock goes
// when the run ends, when its step throws and when its process exits mid-run; a process killed
// outright leaves it behind, and the next run takes the stale lock over with a warning.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mseLoss } from '@flodl/autograd';
import { Adam, Linear } from '@flodl/nn';
import { manualSeed, randn } from '@flodl/tensor-native';
import { caught } from '@flodl/testing';
import { describe, expect, it, vi } from 'vitest';
import { TensorDataset } from '../src/data/index.js';
import {
  acquireSaveLock,
  lockPathOf,
  periodicBundles,
  readCheckpoint,
  type TrainedRun,
  Trainer,
} from '../src/index.js';
import { temporaryFolder } from './helpers.js';

const folder = temporaryFolder('save-lock');
manualSeed(2);
const x = randn([32, 4]);
const data = new TensorDataset([x, x.matmul(randn([4, 2]))]);
const fixtures = new URL('./fixtures/', import.meta.url);

const builder = (epochs = 1, throwAt?: number) => {
  let steps = 0;
  return Trainer.builder(
    () => new Linear(4, 2),
    (params) => new Adam(params, { lr: 0.01 }),
    (model, batch) => {
      steps += 1;
      if (steps === throwAt) throw new Error('planned failure');
      return mseLoss(model.forward(batch.at(0)), batch.at(1));
    },
  )
    .dataset(data)
    .batchSize(8)
    .numEpochs(epochs)
    .devices(['cpu']);
};

const owner = (savePath: string) => JSON.parse(readFileSync(lockPathOf(savePath), 'utf8'));

/** Starts a fixture script (`node --import tsx`) with `args`. */
function start(name: string, ...args: string[]) {
  return spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL(name, fixtures)), ...args], {
    stdio: 'ignore',
  });
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('the savePath lock', () => {
  it('refuses a second run on the same savePath at its start; the first is unharmed, and the path resumes after it', async () => {
    const savePath = join(folder, 'twice', 'run');
    const first = builder(3).savePath(savePath).run();
    expect(owner(savePath)).toMatchObject({ pid: process.pid, op: 'Trainer.run' });
    const error = caught(() => builder().savePath(savePath).run(), 'ERR_CHECKPOINT');
    expect(error.message).toContain(
      `${savePath} is in use by another run: ${lockPathOf(savePath)} is held by pid ${process.pid}`,
    );
    expect(error.message).toContain('(this process)');
    expect(error.message).toMatch(/give this run another \.savePath/);
    // A direct acquire is refused too; nothing else changed.
    expect(caught(() => acquireSaveLock(savePath, 'test'), 'ERR_CHECKPOINT').message).toMatch(/is in use/);
    const trained = await first.join();
    expect(trained.params.length).toBe(2);
    expect(readCheckpoint(savePath).meta).toMatchObject({ reason: 'final', epoch: 3 });
    expect(existsSync(lockPathOf(savePath))).toBe(false);
    // The same savePath once the first run ended: resumed, and written again.
    const resumed = await builder(4).resumeFrom(savePath).savePath(savePath).run().join();
    expect(resumed.params.length).toBe(2);
    expect(readCheckpoint(savePath).meta.epoch).toBe(4);
    expect(existsSync(lockPathOf(savePath))).toBe(false);
  });

  it("names another process's pid; a SIGKILLed holder's stale lock is taken over with a warning", async () => {
    const savePath = join(folder, 'killed', 'run');
    const child = start('bundle-writer.ts', savePath);
    await until(() => periodicBundles(savePath).length > 0, 'the child to write a bundle');
    expect(owner(savePath).pid).toBe(child.pid);
    const error = caught(() => builder().savePath(savePath).run(), 'ERR_CHECKPOINT');
    expect(error.message).toContain(`is held by pid ${child.pid} on `);
    expect(error.message).not.toContain('(this process)');
    child.kill('SIGKILL');
    await new Promise((resolve) => child.once('close', resolve));
    // Killed outright: the lock stays behind, naming a pid that is gone.
    expect(owner(savePath).pid).toBe(child.pid);
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    let trained: TrainedRun;
    try {
      trained = await builder().resumeFrom(savePath).savePath(savePath).run().join();
    } finally {
      spy.mockRestore();
    }
    expect(trained.params.length).toBe(2);
    expect(written.filter((line) => line.includes('.lock'))).toEqual([
      `flodl: ${lockPathOf(savePath)}: stale lock of pid ${child.pid} (no such process on this host); taking it over\n`,
    ]);
    expect(existsSync(lockPathOf(savePath))).toBe(false);
  });

  it("never takes over another host's lock; an unreadable one only once it is old", () => {
    const savePath = join(folder, 'foreign', 'run');
    mkdirSync(join(folder, 'foreign'));
    const lock = lockPathOf(savePath);
    const foreign = {
      pid: 1,
      hostname: 'another-host',
      startedAt: '2026-01-01T00:00:00.000Z',
      op: 'Trainer.run',
      token: 'ab',
    };
    writeFileSync(lock, JSON.stringify(foreign));
    const error = caught(() => acquireSaveLock(savePath, 'test'), 'ERR_CHECKPOINT');
    expect(error.got).toBe('pid 1 on another-host, since 2026-01-01T00:00:00.000Z');
    expect(error.message).toMatch(/or, if no run uses it .* remove /);
    // Not JSON (a writer that died mid-write, or some other file): held while fresh, stale once old.
    writeFileSync(lock, '{"pid": 12');
    expect(caught(() => acquireSaveLock(savePath, 'test'), 'ERR_CHECKPOINT').got).toBe(
      'a lock file that does not name its owner',
    );
    const minuteAgo = new Date(Date.now() - 60_000);
    utimesSync(lock, minuteAgo, minuteAgo);
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    let taken: ReturnType<typeof acquireSaveLock>;
    try {
      taken = acquireSaveLock(savePath, 'test');
    } finally {
      spy.mockRestore();
    }
    expect(written.length).toBe(1);
    expect(written[0]).toMatch(/^flodl: .*\.lock: an unreadable lock 6\d s old is stale; taking it over\n$/);
    expect(owner(savePath)).toMatchObject({ pid: process.pid, op: 'test' });
    taken?.release();
    taken?.release();
    expect(existsSync(lock)).toBe(false);
  });

  it("goes when the run's step throws, and when its process exits mid-run", async () => {
    const savePath = join(folder, 'failed', 'run');
    const failed = builder(2, 3).savePath(savePath).run();
    await expect(failed.join()).rejects.toThrow(/planned failure/);
    expect(existsSync(lockPathOf(savePath))).toBe(false);
    const exited = join(folder, 'exited', 'run');
    const child = start('exit-mid-run.ts', exited);
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(3);
    expect(existsSync(join(folder, 'exited'))).toBe(true);
    expect(existsSync(lockPathOf(exited))).toBe(false);
  });
});
