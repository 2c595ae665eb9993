// bench:ddp runs end to end on tiny settings: the fastest rank alone and two paced CPU ranks
// (no timing is asserted; the JSON must carry every field, with positive ratios).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cuda } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';

const bench = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'ddp.ts');
const hasData = existsSync('/usr/share/datasets/fashion-mnist');

const RUN_FIELDS = [
  'model',
  'mode',
  'ranks',
  'speeds',
  'trainSamples',
  'evalSamples',
  'wallMs',
  'trainMs',
  'samples',
  'samplesPerSec',
  'accuracy',
  'loss',
  'finalTrainLoss',
  'rounds',
  'averagingMs',
  'perRank',
  'epochShares',
  'devices',
  'ratio',
  'ratioWall',
  'ideal',
  'efficiency',
  'accuracyDelta',
  'met',
  'timeWent',
];
const RANK_FIELDS = [
  'rank',
  'speed',
  'samples',
  'share',
  'computeMs',
  'dataMs',
  'waitMs',
  'paceIdleMs',
  'workPerStepMs',
  'warmStepMs',
  'shareDone',
];

describe('bench:ddp', () => {
  it('refuses devices it cannot use, saying why, before running anything', () => {
    const refused = (devices: string) =>
      spawnSync(process.execPath, ['--import', 'tsx', bench, '--devices', devices], { encoding: 'utf8' });
    const bad = refused('cpu,gpu:0');
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('gpu:0 is not cpu or cuda:N');
    expect(refused('cpu').stderr).toContain('--nproc must be an integer >= 2');
    if (!cuda.isAvailable()) expect(refused('cuda:0,cpu').stderr).toContain('CUDA is not available here');
  }, 60_000);

  it.skipIf(!hasData)(
    'reports the fastest rank alone and two unequal ranks as JSON',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'flodl-bench-ddp-test-'));
      try {
        const out = join(dir, 'result.json');
        const child = spawn(
          process.execPath,
          [
            ...['--expose-gc', '--import', 'tsx', bench, '--model', 'mlp', '--modes', 'CpuCadence'],
            ...['--samples', '2048', '--epochs', '2', '--speeds', '1,0.5', '--split', 'test'],
            ...['--holdout', '500', '--json', out],
          ],
          { stdio: ['ignore', 'pipe', 'pipe'] },
        );
        let stderr = '';
        child.stderr.on('data', (chunk) => {
          stderr += chunk;
        });
        child.stdout.resume();
        const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
        const status = await new Promise<number | null>((resolve) =>
          child.on('exit', (code) => resolve(code)),
        );
        clearTimeout(timer);
        expect(status, stderr).toBe(0);
        const report = JSON.parse(readFileSync(out, 'utf8'));
        expect(report.settings).toMatchObject({ samples: 2048, epochs: 2, split: 'test', holdout: 500 });
        expect(report.runs.map((run: { mode: string }) => run.mode)).toEqual(['alone', 'CpuCadence']);
        for (const run of report.runs) {
          for (const field of RUN_FIELDS) expect(run, field).toHaveProperty(field);
          expect(run.ratio).toBeGreaterThan(0);
          expect(run.ratioWall).toBeGreaterThan(0);
          expect(run.accuracy).toBeGreaterThan(0.1); // better than chance after 2 × 2048 images
          expect(run.evalSamples).toBe(500);
          expect(run.samples).toBeGreaterThan(0);
        }
        const [alone, cadence] = report.runs;
        expect(alone.ratio).toBe(1);
        expect(alone.perRank).toHaveLength(1);
        // Measured before the mode and after it; each mode is compared with the mean of the two.
        expect(alone.aloneRuns).toHaveLength(2);
        expect(alone.samplesPerSec).toBeCloseTo((alone.aloneRuns[0] + alone.aloneRuns[1]) / 2);
        expect(cadence.aloneRuns).toEqual(alone.aloneRuns);
        expect(alone.devices).toEqual(['cpu']);
        expect(cadence.devices).toEqual(['cpu', 'cpu']);
        expect(cadence.ranks).toBe(2);
        expect(cadence.ideal).toBeCloseTo(1.5);
        expect(cadence.rounds).toBeGreaterThan(0);
        expect(cadence.perRank).toHaveLength(2);
        for (const part of cadence.perRank)
          for (const field of RANK_FIELDS) expect(part, field).toHaveProperty(field);
        // the half-speed rank idled; the full-speed one did not
        expect(cadence.perRank[1].paceIdleMs).toBeGreaterThan(0);
        expect(cadence.perRank[0].paceIdleMs).toBe(0);
        // the paced rank's pace comes from its warm work; every rank's work per step was timed
        expect(cadence.perRank[1].warmStepMs).toBeGreaterThan(0);
        expect(cadence.perRank[0].warmStepMs).toBe(0);
        for (const part of cadence.perRank) expect(part.workPerStepMs).toBeGreaterThan(0);
        expect(cadence.measuredIdeal).toBeGreaterThan(0);
        expect(alone.measuredIdeal).toBe(1);
        expect(cadence.perRank[0].share + cadence.perRank[1].share).toBeCloseTo(1);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    150_000,
  );
});
