// Ctrl-C on a run started with `flodl launch`: the terminal signals the whole process group;
// the Trainer's ranks ignore SIGINT and the launcher, which hosts the coordinator, stops them
// together after their next averaging round: they write the stop bundle, every process ends,
// and the command exits 130. A run resumed from that bundle starts from it and completes.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readCheckpoint } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const bin = join(here, '..', 'bin', 'flodl.mjs');
const script = join(here, 'fixtures', 'launch-long-script.ts');
const folder = mkdtempSync(join(tmpdir(), 'flodl-launch-signals-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

interface Launched {
  child: ChildProcess;
  training: Promise<boolean>;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output: () => { stdout: string; stderr: string };
}

/** `flodl launch --nproc 2` of the fixture, in its own process group (a terminal's job). */
function launchFixture(config: Record<string, unknown>): Launched {
  const child = spawn(
    process.execPath,
    [bin, 'launch', '--nproc', '2', '--mode', 'CpuCadence', script, JSON.stringify(config)],
    { cwd: join(here, '..'), stdio: ['ignore', 'pipe', 'pipe'], detached: true },
  );
  let stdout = '';
  let stderr = '';
  const killer = setTimeout(() => killGroup(child), 120_000);
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
      if (/\[rank 0\] training/.test(stdout) && /\[rank 1\] training/.test(stdout)) resolve(true);
    });
    void exited.then(() => resolve(false));
  });
  return { child, training, exited, output: () => ({ stdout, stderr }) };
}

function killGroup(child: ChildProcess): void {
  try {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('flodl launch: Ctrl-C', () => {
  it('SIGINT to the process group: the ranks stop together and save a stop bundle, nothing is left running, exit 130; the ranks then resume from it', async () => {
    const savePath = join(folder, 'run');
    const run = launchFixture({ savePath });
    const pid = run.child.pid as number;
    try {
      expect(await run.training, run.output().stderr).toBe(true);
      process.kill(-pid, 'SIGINT');
      const exit = await run.exited;
      const { stdout, stderr } = run.output();
      expect(exit, `${stdout}\n${stderr}`).toEqual({ code: 130, signal: null });
      expect(stderr).toMatch(
        /^flodl launch: SIGINT: stopping the ranks after their next averaging round \(step \d+\); they save where the script gives a savePath \(Ctrl-C again to end them at once\)$/m,
      );
      expect(`${stdout}${stderr}`).not.toMatch(/failed|ERR_RANK_FAILED/);
      const { meta } = readCheckpoint(savePath);
      expect(meta.reason).toBe('stop');
      expect(meta.worldSize).toBe(2);
      for (let wait = 0; wait < 50 && groupAlive(pid); wait++)
        await new Promise((resolve) => setTimeout(resolve, 100));
      expect(groupAlive(pid)).toBe(false);

      const resumed = launchFixture({ resumeFrom: savePath });
      const end = await resumed.exited;
      const after = resumed.output();
      expect(end, after.stderr).toEqual({ code: 0, signal: null });
    } finally {
      killGroup(run.child);
    }
  }, 240_000);
});
