// Ctrl-C and SIGTERM with real signals: a training child process (the fixture long-run-script)
// gets the signal once it trains, stops at the next step, writes its stop bundle, says so in one
// line and exits 130 / 143; a resume from that bundle continues at the next step. On a cluster
// the signal goes to the launcher's whole process group, as a terminal's Ctrl-C does.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { readCheckpoint, Trainer } from '../src/index.js';
import { temporaryFolder } from './helpers.js';

const here = dirname(fileURLToPath(import.meta.url));
const folder = temporaryFolder('signals');

interface Running {
  child: ChildProcess;
  /** Resolves once stdout said `training` (false when the process ended first). */
  training: Promise<boolean>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => { stdout: string; stderr: string };
}

/** Starts the fixture with `config` (`detached`: in its own process group, as a terminal's job). */
function start(config: Record<string, unknown>, detached = false): Running {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(here, 'fixtures', 'long-run-script.ts'), JSON.stringify(config)],
    { cwd: join(here, '..'), stdio: ['ignore', 'pipe', 'pipe'], detached },
  );
  let stdout = '';
  let stderr = '';
  const killer = setTimeout(() => kill(child, detached), 90_000);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal });
    }),
  );
  child.stderr?.on('data', (chunk) => {
    stderr += chunk;
  });
  const training = new Promise<boolean>((resolve) => {
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
      if (stdout.includes('training')) resolve(true);
    });
    void exited.then(() => resolve(false));
  });
  return { child, training, exited, output: () => ({ stdout, stderr }) };
}

function kill(child: ChildProcess, group: boolean): void {
  try {
    if (group && child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
    else child.kill('SIGKILL');
  } catch {
    // Already gone.
  }
}

/** True while any process of the group `pid` leads is alive. */
function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** 250 batches of 8 an epoch, 4 epochs: 1000 steps. */
const long = { samples: 8 * 250, batchSize: 8, numEpochs: 4 };

describe('Ctrl-C and SIGTERM on one device', () => {
  it('SIGINT: stops at the next step, saves a stop bundle, says so, exits 130; a resume continues at the next step', async () => {
    const savePath = join(folder, 'interrupted');
    const run = start({ ...long, stepDelayMs: 2, savePath });
    expect(await run.training, run.output().stderr).toBe(true);
    run.child.kill('SIGINT');
    const exit = await run.exited;
    const { stdout, stderr } = run.output();
    expect(exit, stderr).toEqual({ code: 130, signal: null });
    const line = new RegExp(
      `^flodl: SIGINT: stopping after step (\\d+), saving a stop bundle at ${literal(savePath)} \\(Ctrl-C again to exit at once\\)$`,
      'm',
    ).exec(stderr);
    expect(line, stderr).not.toBeNull();
    const stoppedAt = Number(line?.[1]);
    expect(stdout).not.toContain('done');
    const { meta } = readCheckpoint(savePath);
    expect(meta.reason).toBe('stop');
    // Stopped at the next step: the bundle holds the steps the line named.
    expect(meta.localStep).toBe(stoppedAt);
    expect(stoppedAt).toBeGreaterThanOrEqual(3);
    expect(stoppedAt).toBeLessThan(1000);

    const resumed = start({ ...long, savePath, resumeFrom: savePath });
    const end = await resumed.exited;
    const after = resumed.output();
    expect(end, after.stderr).toEqual({ code: 0, signal: null });
    const epoch = Math.floor(stoppedAt / 250);
    expect(after.stderr).toContain(
      `flodl: resumed from ${savePath} at epoch ${epoch}, batch ${stoppedAt - epoch * 250}\n`,
    );
    // The resumed run trains exactly the steps the stopped one had left.
    expect(after.stdout).toContain(`done steps=${1000 - stoppedAt}\n`);
    const final = readCheckpoint(savePath).meta;
    expect(final.reason).toBe('final');
    expect(final.localStep).toBe(1000);
  });

  it('a second SIGINT while the run stops exits at once, without the bundle', async () => {
    const savePath = join(folder, 'twice');
    // Each step 200 ms: both signals land inside the same step, the first one's stop not done yet.
    const run = start({ ...long, stepDelayMs: 200, savePath });
    expect(await run.training, run.output().stderr).toBe(true);
    run.child.kill('SIGINT');
    await new Promise((resolve) => setTimeout(resolve, 30));
    run.child.kill('SIGINT');
    const exit = await run.exited;
    const { stderr } = run.output();
    expect(exit, stderr).toEqual({ code: 130, signal: null });
    expect(stderr).toMatch(/^flodl: SIGINT: stopping after step \d+, saving a stop bundle at /m);
    expect(stderr).toContain('flodl: SIGINT again: exiting now, without saving\n');
    expect(existsSync(`${savePath}.meta.json`)).toBe(false);
  });

  it('SIGTERM: the same stop and save, exit 143', async () => {
    const savePath = join(folder, 'terminated');
    const run = start({ ...long, stepDelayMs: 2, savePath });
    expect(await run.training, run.output().stderr).toBe(true);
    run.child.kill('SIGTERM');
    const exit = await run.exited;
    const { stderr } = run.output();
    expect(exit, stderr).toEqual({ code: 143, signal: null });
    const line =
      /^flodl: SIGTERM: stopping after step (\d+), saving a stop bundle at .+ \(SIGTERM again to exit at once\)$/m.exec(
        stderr,
      );
    expect(line, stderr).not.toBeNull();
    expect(readCheckpoint(savePath).meta).toMatchObject({ reason: 'stop', localStep: Number(line?.[1]) });
  });

  it("a script's own SIGINT listener keeps the process: the run stops and saves, the script goes on", async () => {
    const savePath = join(folder, 'listened');
    const run = start({ ...long, stepDelayMs: 2, savePath, userListener: true });
    expect(await run.training, run.output().stderr).toBe(true);
    run.child.kill('SIGINT');
    const exit = await run.exited;
    const { stdout, stderr } = run.output();
    expect(exit, stderr).toEqual({ code: 0, signal: null });
    expect(stdout).toContain('user listener\n');
    expect(stderr).toMatch(
      /stopping after step \d+, saving a stop bundle at .+ \(the script's own SIGINT listener keeps the process\)\n/,
    );
    // join() resolved: the script ran on past it.
    expect(stdout).toMatch(/done steps=\d+\n/);
    expect(readCheckpoint(savePath).meta.reason).toBe('stop');
  });

  it('handleSignals(false) leaves SIGINT alone: the process dies of it, nothing is saved', async () => {
    const savePath = join(folder, 'unhandled');
    const run = start({ ...long, stepDelayMs: 2, savePath, handleSignals: false });
    expect(await run.training, run.output().stderr).toBe(true);
    run.child.kill('SIGINT');
    expect(await run.exited).toEqual({ code: null, signal: 'SIGINT' });
    expect(run.output().stderr).not.toContain('flodl: SIGINT');
    expect(existsSync(`${savePath}.meta.json`)).toBe(false);
  });

  it('handleSignals takes true or false only', () => {
    const builder = () =>
      Trainer.builder(
        () => {
          throw new Error('never built');
        },
        () => {
          throw new Error('never built');
        },
        () => {
          throw new Error('never run');
        },
      )
        .dataset({ length: 8, names: ['x'], getBatch: () => ({}) as never })
        .batchSize(8)
        .numEpochs(1);
    const error = caught(() =>
      builder()
        .handleSignals('no' as never)
        .run(),
    );
    expect(error).toMatchObject({ code: 'ERR_INVALID_ARGUMENT', op: 'Trainer.handleSignals' });
    expect(() =>
      builder()
        .options({ handleSignals: 1 as never })
        .run(),
    ).toThrow(/handleSignals/);
  });
});

describe('Ctrl-C on a 2-rank CPU cluster', () => {
  it("SIGINT to the launcher's process group: the ranks ignore it, the launcher stops them together and they save; exit 130, nothing left running; a resume says where it goes on", async () => {
    const savePath = join(folder, 'cluster');
    const cluster = { samples: 8 * 300, batchSize: 8, numEpochs: 3, devices: ['cpu', 'cpu'] };
    const run = start({ ...cluster, stepDelayMs: 2, savePath }, true);
    const pid = run.child.pid as number;
    try {
      expect(await run.training, run.output().stderr).toBe(true);
      process.kill(-pid, 'SIGINT');
      const exit = await run.exited;
      const { stdout, stderr } = run.output();
      expect(exit, `${stdout}\n${stderr}`).toEqual({ code: 130, signal: null });
      expect(stderr).toMatch(
        new RegExp(
          `^flodl: SIGINT: stopping the ranks after their next averaging round \\(step \\d+\\), saving a stop bundle at ${literal(savePath)} \\(Ctrl-C again to exit at once\\)$`,
          'm',
        ),
      );
      expect(`${stdout}${stderr}`).not.toMatch(/rank \d+ failed|ERR_RANK_FAILED/);
      const { meta } = readCheckpoint(savePath);
      expect(meta.reason).toBe('stop');
      expect(meta.worldSize).toBe(2);
      // The ranks, the reaper: every process of the group ends.
      for (let wait = 0; wait < 50 && groupAlive(pid); wait++)
        await new Promise((resolve) => setTimeout(resolve, 100));
      expect(groupAlive(pid)).toBe(false);

      const resumed = start({ ...cluster, resumeFrom: savePath }, true);
      const end = await resumed.exited;
      const after = resumed.output();
      expect(end, after.stderr).toEqual({ code: 0, signal: null });
      expect(after.stderr).toMatch(
        new RegExp(
          `^flodl: resumed from ${literal(savePath)} at epoch ${meta.coverage.epoch}, batch \\d+$`,
          'm',
        ),
      );
    } finally {
      kill(run.child, true);
    }
  });
});
