// Runs the cluster fixture script (`fixtures/trainer-script.ts`) as a user would: `node --import
// tsx train.ts config`, the launcher and its rank processes real, to its end.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EpochMetrics } from '@flodl/distributed';

const here = dirname(fileURLToPath(import.meta.url));
const script = join(here, 'fixtures', 'trainer-script.ts');

export interface ScriptResult {
  metrics: EpochMetrics[];
  evals: [number, number][];
  worldSize: number;
  params: string[];
  lost: { rank: number; message: string }[];
}

/** Runs the fixture script as a user would (`node --import tsx train.ts config`), to its end. */
export async function runScript(config: Record<string, unknown>, extraEnv: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'flodl-trainer-test-'));
  const out = join(dir, 'result.json');
  const trace = join(dir, 'trace');
  mkdirSync(trace);
  try {
    const child = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify({ ...config, out })], {
      env: { ...process.env, FLODL_TRACE_DIR: trace, ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.stdout.resume();
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const status = await new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    clearTimeout(timer);
    const rounds = new Map<number, { version: number; digest: string }[]>();
    for (const file of readdirSync(trace)) {
      const rank = Number(/rank(\d+)/.exec(file)?.[1]);
      rounds.set(
        rank,
        readFileSync(join(trace, file), 'utf8')
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((line) => JSON.parse(line)),
      );
    }
    let result: ScriptResult | undefined;
    try {
      result = JSON.parse(readFileSync(out, 'utf8'));
    } catch {
      result = undefined;
    }
    return { status, stderr, result, rounds };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
