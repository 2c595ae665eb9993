import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alive } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { KILL_GRACE_ENV, LAUNCHER_PID_ENV, orphanGuardNodeArgs, resolveTsx } from '../src/launcher/index.js';
import './fixtures/cluster-setup.js'; // runs the .ts rank fixtures through this package's tsx

const here = dirname(fileURLToPath(import.meta.url));
const driver = join(here, 'fixtures', 'orphan-launcher.ts');

interface RankRecord {
  pid: number;
  ppid: number;
  launcherPid: number;
}

async function until(predicate: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (predicate()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return predicate();
}

const exited = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

describe('orphan protection', () => {
  it.each([
    ['ranks that sleep', 'plain', 3000],
    ['ranks that ignore SIGTERM (SIGKILL after the grace), output piped', 'ignore-term', 4500],
    // Their own guard cannot run: the launcher's reaper process, outside the ranks, stops them.
    ['ranks frozen by SIGSTOP', 'stopped', 3000],
  ])('stops %s within seconds of the launcher being SIGKILLed', async (_title, variant, withinMs) => {
    const folder = mkdtempSync(join(tmpdir(), 'flodl-orphans-'));
    const launcher = spawn(
      process.execPath,
      ['--import', resolveTsx(driver).loaderUrl, driver, folder, variant],
      {
        stdio: 'ignore',
        // A SIGKILLed launcher cannot remove its record directory: it goes in `folder`, removed here.
        env: { ...process.env, TMPDIR: folder },
      },
    );
    const records: RankRecord[] = [];
    try {
      const files = [0, 1].map((rank) => join(folder, `rank${rank}.json`));
      expect(await until(() => files.every((file) => existsSync(file)), 30_000)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 100)); // let the writes finish
      records.push(...files.map((file) => JSON.parse(readFileSync(file, 'utf8')) as RankRecord));
      for (const record of records) {
        expect(record).toMatchObject({ ppid: launcher.pid, launcherPid: launcher.pid });
        expect(alive(record.pid)).toBe(true);
      }
      if (variant === 'stopped') for (const record of records) process.kill(record.pid, 'SIGSTOP');
      const killed = Date.now();
      launcher.kill('SIGKILL');
      await exited(launcher);
      const gone = await until(() => records.every((record) => !alive(record.pid)), withinMs + 5000);
      expect(gone).toBe(true);
      expect(Date.now() - killed).toBeLessThan(withinMs);
    } finally {
      launcher.kill('SIGKILL');
      for (const record of records) if (alive(record.pid)) process.kill(record.pid, 'SIGKILL');
      rmSync(folder, { recursive: true, force: true });
    }
  });

  it('watches any process named by FLODL_LAUNCHER_PID, and does nothing without it', async () => {
    const stand = spawn(process.execPath, ['-e', 'setInterval(() => undefined, 1000)'], { stdio: 'ignore' });
    const rank = spawn(
      process.execPath,
      [...orphanGuardNodeArgs(), '-e', 'setInterval(() => undefined, 1000)'],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        env: { ...process.env, [LAUNCHER_PID_ENV]: String(stand.pid), [KILL_GRACE_ENV]: '500' },
      },
    );
    let stderr = '';
    rank.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(rank.exitCode).toBeNull();
      stand.kill('SIGKILL');
      await exited(stand);
      const started = Date.now();
      await exited(rank);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(rank.signalCode).toBe('SIGTERM');
      expect(stderr).toContain(`flodl: the launcher (pid ${stand.pid}) is gone`);
    } finally {
      stand.kill('SIGKILL');
      rank.kill('SIGKILL');
    }

    const environment = { ...process.env };
    delete environment[LAUNCHER_PID_ENV];
    const plain = spawn(process.execPath, [...orphanGuardNodeArgs(), '-e', 'console.log("ran")'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: environment,
    });
    let stdout = '';
    plain.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    await exited(plain);
    expect([plain.exitCode, stdout]).toEqual([0, 'ran\n']);
  });
});
