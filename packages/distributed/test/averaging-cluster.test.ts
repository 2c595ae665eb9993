import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AveragingHost, type HostRound } from '../src/host/index.js';
import { type LaunchMode, launch } from '../src/launcher/index.js';
import { PROCESS_GROUP_PORT_ENV } from '../src/session/index.js';
import { bundledRankWorker } from './fixtures/cluster-setup.js';
import { freePort } from './fixtures/wire-helpers.js';

const here = dirname(fileURLToPath(import.meta.url));
const rankScript = join(here, 'fixtures', 'averaging-rank.ts');

const workerUrl = bundledRankWorker('averaging-rank-worker');

interface Round {
  version: number;
  steps: number;
  mass: number;
  totalMass: number;
  pre: number[];
  post: number[];
  consensus?: number[];
}
interface Record {
  rank: number;
  losses: number[];
  rounds: Round[];
}

async function run(mode: LaunchMode, config: object): Promise<{ records: Record[]; rounds: HostRound[] }> {
  const recordDir = mkdtempSync(join(tmpdir(), 'flodl-averaging-'));
  let host: AveragingHost | undefined;
  try {
    await launch({
      nproc: 3,
      script: rankScript,
      // On the CPU the Nccl* modes run their collective on Gloo.
      mode,
      args: [JSON.stringify({ ...config, mode })],
      env: { [PROCESS_GROUP_PORT_ENV]: String(await freePort()), FLODL_TEST_WORKER_URL: workerUrl().href },
      recordDir,
      stdio: 'ignore',
      timeoutMs: 40_000,
      onServer: (server) => {
        host = AveragingHost.attach(server, {
          mode,
          worldSize: 3,
          everySteps: mode.endsWith('Sync') ? 1 : 3,
        });
      },
    });
    const records = [0, 1, 2].map(
      (rank) => JSON.parse(readFileSync(join(recordDir, `averaging-${rank}.json`), 'utf8')) as Record,
    );
    return { records, rounds: host?.rounds ?? [] };
  } finally {
    rmSync(recordDir, { recursive: true, force: true });
  }
}

/** The mass law recomputed from what the ranks reported: Σ m·W / Σ m (f32 products, one division). */
function massLaw(records: Record[], version: number): { expected: number[]; masses: number[] } {
  const rounds = records.map((record) => record.rounds.find((round) => round.version === version)!);
  const masses = rounds.map((round) => round.mass);
  const total = masses.reduce((sum, mass) => sum + mass, 0);
  const expected = rounds[0]!.pre.map((_, index) =>
    Math.fround(rounds.reduce((sum, round) => sum + Math.fround(round.pre[index]! * round.mass), 0) / total),
  );
  return { expected, masses };
}

function checkRun(mode: LaunchMode, records: Record[]): void {
  for (const record of records) {
    const early = record.losses.slice(0, 3).reduce((a, b) => a + b) / 3;
    const late = record.losses.slice(-3).reduce((a, b) => a + b) / 3;
    expect(late, `rank ${record.rank} loss`).toBeLessThan(early);
  }
  const versions = records[0]!.rounds.map((round) => round.version);
  expect(versions.length).toBeGreaterThan(1);
  for (const record of records) expect(record.rounds.map((round) => round.version)).toEqual(versions);
  let unequal = false;
  for (const version of versions) {
    const { expected, masses } = massLaw(records, version);
    if (new Set(masses).size > 1) unequal = true;
    const rounds = records.map((record) => record.rounds.find((round) => round.version === version)!);
    for (const round of rounds) expect(round.totalMass).toBe(masses.reduce((a, b) => a + b, 0));
    const result =
      mode === 'CpuAsync' ? rounds.map((round) => round.consensus!) : rounds.map((round) => round.post);
    // bit-identical across ranks after each averaging (the consensus itself under CpuAsync)
    expect(result[1]).toEqual(result[0]);
    expect(result[2]).toEqual(result[0]);
    if (mode.startsWith('Cpu')) {
      // the host root sums f32(m·W) in float64 in rank order and divides once: exact
      expect(result[0]).toEqual(expected);
    } else {
      // Gloo sums in float32 in its own order: the law to float32 rounding
      for (const [index, value] of result[0]!.entries()) expect(value).toBeCloseTo(expected[index]!, 5);
    }
  }
  expect(unequal).toBe(true);
}

describe('averaging across processes (3 ranks on CPU)', () => {
  for (const mode of ['NcclSync', 'NcclCadence', 'CpuSync', 'CpuCadence'] as const) {
    it(`${mode}: loss falls, ranks are bit-identical after each round, the mass law holds`, async () => {
      const { records, rounds } = await run(mode, { steps: 30, extraRank: 0 });
      checkRun(mode, records);
      if (!mode.startsWith('Nccl')) {
        for (const round of rounds)
          expect(round.totalMass).toBe(Object.values(round.masses!).reduce((a, b) => a + b));
      }
    }, 45_000);
  }

  it('CpuAsync: ranks keep training and EASGD-blend one shared consensus', async () => {
    const alpha = 0.5;
    const { records } = await run('CpuAsync', { steps: 30, extraRank: 0, easgdAlpha: alpha });
    checkRun('CpuAsync', records);
  }, 45_000);
});
