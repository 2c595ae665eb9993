// Ctrl-C in a cooperative one-device run, with a real signal: the Worker's next step reports
// shutdown, the user's loop leaves, finish() writes the stop bundle and the process exits 130
// with one line saying so; a resume from the bundle continues at the next step.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { readCheckpoint } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'flodl-worker-signals-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** Runs the fixture; `onTraining` once it printed `training`. */
async function run(config: Record<string, unknown>, onTraining: (pid: number) => void = () => undefined) {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(here, 'fixtures', 'worker-long-run.ts'), JSON.stringify(config)],
    { cwd: join(here, '..'), stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  let told = false;
  child.stdout.on('data', (chunk) => {
    stdout += chunk;
    if (!told && stdout.includes('training')) {
      told = true;
      onTraining(child.pid as number);
    }
  });
  const exit = await new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  clearTimeout(killer);
  return { exit, stdout, stderr };
}

describe('Ctrl-C in a cooperative run on one device', () => {
  it('SIGINT: the step reports shutdown, finish() saves a stop bundle, exit 130; a resume continues at the next step', async () => {
    const savePath = join(folder, 'worker');
    const long = { samples: 8 * 250, batchSize: 8, numEpochs: 4, savePath };
    const stopped = await run({ ...long, stepDelayMs: 2 }, (pid) => process.kill(pid, 'SIGINT'));
    expect(stopped.exit, stopped.stderr).toEqual({ code: 130, signal: null });
    const line =
      /^flodl: SIGINT: stopping after step (\d+), saving a stop bundle at (.+) \(Ctrl-C again to exit at once\)$/m.exec(
        stopped.stderr,
      );
    expect(line, stopped.stderr).not.toBeNull();
    expect(line?.[2]).toBe(savePath);
    const stoppedAt = Number(line?.[1]);
    // finish() exited the process once it saved: the script's line after it never came.
    expect(stopped.stdout).not.toContain('done');
    const { meta } = readCheckpoint(savePath);
    expect(meta).toMatchObject({ reason: 'stop', localStep: stoppedAt });

    const resumed = await run({ ...long, resumeFrom: savePath });
    expect(resumed.exit, resumed.stderr).toEqual({ code: 0, signal: null });
    const epoch = Math.floor(stoppedAt / 250);
    expect(resumed.stderr).toContain(
      `flodl: resumed from ${savePath} at epoch ${epoch}, batch ${stoppedAt - epoch * 250}\n`,
    );
    expect(resumed.stdout).toContain(`done steps=${1000 - stoppedAt} shutdown=false\n`);
    expect(readCheckpoint(savePath).meta).toMatchObject({ reason: 'final', localStep: 1000 });
  });
});
