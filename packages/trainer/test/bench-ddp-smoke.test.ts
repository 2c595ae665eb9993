// bench:ddp runs end to end on tiny settings: the fastest rank alone and two paced CPU ranks
// (no timing is asserted; the JSON must carry every field, with positive ratios).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cuda } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { resnet } from '../bench/fashion-models.js';

const bench = join(dirname(fileURLToPath(import.meta.url)), '..', 'bench', 'ddp.ts');
const hasData = existsSync('/usr/share/datasets/fashion-mnist');
const hasSchedstat = existsSync(`/proc/${process.pid}/task/${process.pid}/schedstat`);
// The PyTorch reference's test runs where Debian's python3-torch (with Gloo) is installed.
const TORCH_PYTHON = '/usr/bin/python3';
const hasTorch =
  spawnSync(TORCH_PYTHON, ['-c', 'import torch.distributed as d; assert d.is_gloo_available()']).status === 0;

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
    const reference = spawnSync(process.execPath, ['--import', 'tsx', bench, '--references', 'apart,ddp'], {
      encoding: 'utf8',
    });
    expect(reference.status).toBe(2);
    expect(reference.stderr).toContain('--references: ddp is not apart or pytorch');
  }, 60_000);

  it.skipIf(!hasData)(
    'reports the fastest rank alone, two plain trainings apart and two unequal ranks as JSON',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'flodl-bench-ddp-test-'));
      try {
        const out = join(dir, 'result.json');
        const child = spawn(
          process.execPath,
          [
            ...['--expose-gc', '--import', 'tsx', bench, '--model', 'mlp', '--modes', 'CpuCadence'],
            ...['--samples', '2048', '--epochs', '2', '--speeds', '1,0.5', '--split', 'test'],
            ...['--holdout', '500', '--references', 'apart,pytorch', '--python', '/nonexistent/python3'],
            ...['--json', out],
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
        expect(report.runs.map((run: { mode: string }) => run.mode)).toEqual([
          'alone',
          'apart',
          'CpuCadence',
        ]);
        for (const run of report.runs) {
          for (const field of RUN_FIELDS) expect(run, field).toHaveProperty(field);
          expect(run.ratio).toBeGreaterThan(0);
          expect(run.ratioWall).toBeGreaterThan(0);
          expect(run.accuracy).toBeGreaterThan(0.1); // better than chance after 2 × 2048 images
          expect(run.evalSamples).toBe(500);
          expect(run.samples).toBeGreaterThan(0);
        }
        // Without an interpreter that has torch, the PyTorch reference is skipped, saying why.
        expect(report.skipped).toEqual([
          { model: 'mlp', mode: 'pytorch', reason: expect.stringContaining('no interpreter with torch') },
        ]);
        const [alone, separate, cadence] = report.runs;
        expect(alone.ratio).toBe(1);
        expect(alone.perRank).toHaveLength(1);
        // Measured before the first mode and after each (apart included); each is compared with
        // the mean of the two around it.
        expect(alone.aloneRuns).toHaveLength(3);
        expect(alone.samplesPerSec).toBeCloseTo(
          (alone.aloneRuns[0] + alone.aloneRuns[1] + alone.aloneRuns[2]) / 3,
        );
        expect(cadence.aloneRuns).toEqual(alone.aloneRuns.slice(1));
        // Apart: one plain training per rank at the rank's speed, at once, each on its speed's
        // part of the samples; their samples/s add up, and the cluster's runs are set against it.
        expect(separate.ranks).toBe(2);
        expect(separate.rounds).toBe(0);
        expect(separate.ideal).toBeCloseTo(1.5);
        expect(separate.perRank.map((part: { speed: number }) => part.speed)).toEqual([1, 0.5]);
        expect(separate.perRank[0].samples).toBe(2 * 2048);
        expect(separate.perRank[1].samples).toBe(2 * 1024);
        expect(separate.perRank[1].paceIdleMs).toBeGreaterThan(0);
        expect(separate.ofApart).toBeUndefined();
        expect(cadence.ofApart).toBeCloseTo(cadence.ratio / separate.ratio);
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
        // Where the CPU went over the epochs after the first, per process (Linux): the launcher
        // and each rank, main thread and the rest.
        if (hasSchedstat) {
          expect(cadence.threads).toMatchObject({ fromEpoch: 2, toEpoch: 2 });
          expect(cadence.threads.windowMs).toBeGreaterThan(0);
          expect(cadence.threads.uses.map((use: { process: string }) => use.process)).toEqual([
            'launcher',
            'rank 0',
            'rank 1',
          ]);
          for (const use of cadence.threads.uses) expect(use.mainOnCore + use.mainWaiting).toBeLessThan(1.05);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    150_000,
  );

  it.skipIf(!hasData)(
    "trains the wide ResNet alone with `--modes ''` (the fastest rank alone, no modes)",
    () => {
      const dir = mkdtempSync(join(tmpdir(), 'flodl-bench-ddp-test-'));
      try {
        const out = join(dir, 'result.json');
        const child = spawnSync(
          process.execPath,
          [
            ...['--expose-gc', '--import', 'tsx', bench, '--model', 'resnet', '--modes', ''],
            ...['--samples', '32', '--batch-size', '16', '--epochs', '1', '--split', 'test'],
            ...['--holdout', '20', '--references', '', '--json', out],
          ],
          { encoding: 'utf8', timeout: 120_000 },
        );
        expect(child.status, child.stderr).toBe(0);
        const report = JSON.parse(readFileSync(out, 'utf8'));
        expect(report.settings.models).toEqual(['resnet']);
        expect(report.settings.modes).toEqual([]);
        expect(report.runs).toHaveLength(1);
        const [alone] = report.runs;
        expect(alone).toMatchObject({
          model: 'resnet',
          mode: 'alone',
          samples: 32,
          evalSamples: 20,
          rounds: 0,
        });
        expect(Number.isFinite(alone.loss)).toBe(true);
        expect(alone.perRank[0].workPerStepMs).toBeGreaterThan(0);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    150_000,
  );

  it.skipIf(!hasTorch)(
    "builds the wide ResNet with PyTorch's reference model's parameters",
    () => {
      const script = [
        'import importlib.util, json, sys',
        'spec = importlib.util.spec_from_file_location("reference", sys.argv[1])',
        'module = importlib.util.module_from_spec(spec)',
        'spec.loader.exec_module(module)',
        'model = module.build("resnet")',
        'print(json.dumps({"parameters": [list(p.shape) for p in model.parameters()],',
        '                  "buffers": [list(b.shape) for b in model.buffers()]}))',
      ].join('\n');
      const reference = join(dirname(bench), 'ddp-pytorch.py');
      const child = spawnSync(TORCH_PYTHON, ['-c', script, reference], { encoding: 'utf8' });
      expect(child.status, child.stderr).toBe(0);
      const shapes = JSON.parse(child.stdout);
      const model = resnet();
      // The same tensors in the same order (4.33M parameters; batch norm's statistics as buffers).
      expect(model.parameters().map((parameter) => parameter.shape)).toEqual(shapes.parameters);
      expect(model.buffers().map((buffer) => buffer.shape)).toEqual(shapes.buffers);
      const count = model.parameters().reduce((sum, p) => sum + p.shape.reduce((a, b) => a * b, 1), 0);
      expect(count).toBe(4_326_602);
      model.dispose();
    },
    60_000,
  );

  it.skipIf(!hasData || !hasTorch)(
    'runs the PyTorch reference alone and with DDP, paced like the ranks, where an interpreter has torch',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'flodl-bench-ddp-test-'));
      try {
        const out = join(dir, 'result.json');
        const child = spawnSync(
          process.execPath,
          [
            ...['--expose-gc', '--import', 'tsx', bench, '--model', 'mlp', '--modes', 'CpuCadence'],
            ...['--samples', '1024', '--epochs', '1', '--speeds', '1,0.5', '--split', 'test'],
            ...['--holdout', '500', '--references', 'pytorch', '--python', TORCH_PYTHON, '--json', out],
          ],
          { encoding: 'utf8', timeout: 120_000 },
        );
        expect(child.status, child.stderr).toBe(0);
        const report = JSON.parse(readFileSync(out, 'utf8'));
        expect(report.runs.map((run: { mode: string }) => run.mode)).toEqual([
          'alone',
          'CpuCadence',
          'pytorch-alone',
          'pytorch-ddp',
        ]);
        const [, , alone, ddp] = report.runs;
        for (const run of [alone, ddp]) {
          for (const field of RUN_FIELDS) expect(run, field).toHaveProperty(field);
          expect(run.torch).toMatch(/^\d+\.\d+/);
          expect(run.evalSamples).toBe(500);
          expect(run.accuracy).toBeGreaterThan(0.1);
          expect(run.samplesPerSec).toBeGreaterThan(0);
        }
        expect(alone.ranks).toBe(1);
        expect(alone.samples).toBe(1024);
        // DDP: every rank the same count of the epoch, the gradients averaged at every step, so
        // it goes at its slowest rank's pace; the half-speed rank idled.
        expect(ddp.ranks).toBe(2);
        expect(ddp.perRank.map((part: { samples: number }) => part.samples)).toEqual([512, 512]);
        expect(ddp.rounds).toBe(4);
        expect(ddp.ideal).toBeCloseTo(1);
        expect(ddp.perRank[1].paceIdleMs).toBeGreaterThan(0);
        expect(ddp.perRank[0].paceIdleMs).toBe(0);
        expect(child.stdout).toMatch(/mlp PyTorch .*: DDP over Gloo [\d.]+x its own alone/);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    150_000,
  );
});
