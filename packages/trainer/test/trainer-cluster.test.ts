// The managed Trainer with three CPU ranks: the launcher, the coordinator and the rank
// processes are real, and talk over loopback sockets.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EpochMetrics, LaunchMode } from '@flodl/distributed';
import { describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const script = join(here, 'fixtures', 'trainer-script.ts');

interface ScriptResult {
  metrics: EpochMetrics[];
  evals: [number, number][];
  worldSize: number;
  params: string[];
  lost: { rank: number; message: string }[];
}

function runScript(config: Record<string, unknown>, extraEnv: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'flodl-trainer-test-'));
  const out = join(dir, 'result.json');
  const trace = join(dir, 'trace');
  spawnSync('mkdir', ['-p', trace]);
  try {
    const child = spawnSync(
      process.execPath,
      ['--import', 'tsx', script, JSON.stringify({ ...config, out })],
      {
        encoding: 'utf8',
        timeout: 90_000,
        env: { ...process.env, FLODL_TRACE_DIR: trace, ...extraEnv },
      },
    );
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
    return { status: child.status, stderr: child.stderr, stdout: child.stdout, result, rounds };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const MODES: LaunchMode[] = ['CpuSync', 'CpuCadence', 'CpuAsync', 'NcclSync', 'NcclCadence'];

describe.concurrent('Trainer on three CPU ranks', () => {
  for (const mode of MODES) {
    it(`${mode}: loss falls, replicas agree after every round, join returns the consensus, eval once per epoch`, () => {
      const { status, stderr, result, rounds } = runScript({
        mode,
        totalSamples: 480,
        batchSize: 8,
        numEpochs: 3,
      });
      expect(status, stderr).toBe(0);
      const run = result as ScriptResult;
      expect(run.worldSize).toBe(3);
      expect(run.metrics.map((metrics) => metrics.epoch)).toEqual([0, 1, 2]);
      expect(run.metrics[2]!.avgLoss).toBeLessThan(run.metrics[0]!.avgLoss);
      for (const metrics of run.metrics) {
        expect(metrics.perRankSamples.reduce((sum, samples) => sum + samples, 0)).toBeGreaterThan(0);
      }
      // one eval per epoch (the final canonical eval may follow), on one rank, reaching the handle
      const evalEpochs = run.evals.map(([epoch]) => epoch);
      expect(new Set(evalEpochs.slice(0, 3))).toEqual(new Set([1, 2, 3]));
      expect(rounds.size).toBe(3);
      const byVersion = new Map<number, Set<string>>();
      for (const list of rounds.values()) {
        for (const round of list)
          byVersion.set(round.version, (byVersion.get(round.version) ?? new Set()).add(round.digest));
      }
      expect(byVersion.size).toBeGreaterThan(0);
      if (mode !== 'CpuAsync') {
        for (const digests of byVersion.values()) expect(digests.size).toBe(1);
      }
      expect(run.params.length).toBe(4);
      expect(run.lost).toEqual([]);
    });
  }
});
