// Watching a managed run: the progress display, the metrics log of a single-device run, and
// the dashboard a 2-rank CPU run serves from its launcher.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mseLoss } from '@flodl/autograd';
import { readMetricsLog } from '@flodl/distributed';
import { Linear, SGD } from '@flodl/nn';
import { FlodlError, manualSeed, randn } from '@flodl/tensor-native';
import { describe, expect, it, vi } from 'vitest';
import { TensorDataset } from '../src/data/index.js';
import { openRunMonitor, Trainer } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const script = join(here, 'fixtures', 'trainer-script.ts');
const flodlBin = join(
  dirname(createRequire(import.meta.url).resolve('@flodl/distributed/package.json')),
  'bin',
  'flodl.mjs',
);

function builder(samples = 64) {
  manualSeed(5);
  const x = randn([samples, 3]);
  const data = new TensorDataset([x, x.matmul(randn([3, 1]))]);
  return Trainer.builder(
    () => new Linear(3, 1),
    (params) => new SGD(params, { lr: 0.05 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  )
    .dataset(data)
    .batchSize(8)
    .devices(['cpu']);
}

describe('Trainer monitor on one device', () => {
  it('metricsLog: the log reads back with every epoch, sampled steps and the eval results', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flodl-monitor-'));
    try {
      const path = join(dir, 'run.jsonl');
      const lines: string[] = [];
      await builder()
        .numEpochs(3)
        .evalFn(() => 0.5)
        .metricsLog(path)
        .progress({ stream: { write: (text: string) => lines.push(text) }, tty: false })
        .run()
        .join();
      const log = readMetricsLog(path);
      expect(log.header.worldSize).toBe(1);
      expect(log.header.epochs).toBe(3);
      const epochs = log.records.filter((record) => record.kind === 'epoch');
      expect(epochs.map((record) => record.metrics.epoch)).toEqual([0, 1, 2]);
      expect(log.records.filter((record) => record.kind === 'step').length).toBeGreaterThan(0);
      expect(log.records.filter((record) => record.kind === 'eval').map((record) => record.epoch)).toEqual([
        1, 2, 3,
      ]);
      expect(log.records.at(-1)?.kind).toBe('finished');
      // The display drew the epochs and the evals it was given a stream for.
      const text = lines.join('');
      expect(text).toMatch(/epoch 1\/3/);
      expect(text).toMatch(/epoch 3\/3/);
      expect(text).toMatch(/training done/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("progress is on by default where stdout is the user's, and progress(false) draws nothing", async () => {
    const written: string[] = [];
    const saved = process.env.FLODL_PROGRESS;
    process.env.FLODL_PROGRESS = '1';
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      written.push(String(chunk));
      return true;
    });
    try {
      await builder().numEpochs(1).run().join();
      const byDefault = written.splice(0).join('');
      await builder().numEpochs(1).progress(false).run().join();
      expect(byDefault).toMatch(/epoch 1\/1 done/);
      expect(written.join('')).not.toMatch(/epoch|training/);
    } finally {
      spy.mockRestore();
      if (saved === undefined) delete process.env.FLODL_PROGRESS;
      else process.env.FLODL_PROGRESS = saved;
    }
  });

  it('progress(false) makes no display; bad monitor options fail before the run starts', async () => {
    const monitor = await openRunMonitor(
      { progress: false, numEpochs: 1, dataset: { length: 8, get: () => [] }, batchSize: 8 } as never,
      { worldSize: 1 },
    );
    expect(monitor.progress.enabled).toBe(false);
    expect(monitor.recorder).toBeUndefined();
    await monitor.close('Completed');
    expect(() => builder().numEpochs(1).progress({ fps: 0 }).run()).toThrow(FlodlError);
    expect(() => builder().numEpochs(1).metricsLog('').run()).toThrow(/metricsLog/);
    expect(() => builder().numEpochs(1).dashboard({ port: -1 }).run()).toThrow(/dashboard/);
    expect(() =>
      builder()
        .numEpochs(1)
        .options({ dashboard: { port: 0, bind: 'x' } as never })
        .run(),
    ).toThrow(/bind/);
  });
});

/** Runs `args` (a script under node), waits for its dashboard URL, polls `/state.json` until both ranks trained. */
async function watchTwoRanks(args: string[]) {
  const child = spawn(process.execPath, args, {
    // The display on (the test config turns it off): the launcher draws, the ranks stay silent.
    env: { ...process.env, FLODL_PROGRESS: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stdout = '';
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const url = new Promise<string | undefined>((resolve) => {
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const found = /flodl dashboard: (http:\/\/127\.0\.0\.1:\d+)\//.exec(stdout)?.[1];
      if (found) resolve(found);
    });
    void exited.then(() => resolve(undefined));
  });
  try {
    const base = await url;
    expect(base, `${stdout}\n${stderr}`).toBeDefined();
    const seen = new Set<number>();
    let running = true;
    void exited.then(() => {
      running = false;
    });
    // Poll while the run lasts (bounded by the run itself, and the kill timer).
    while (running && seen.size < 2) {
      try {
        const state = (await (await fetch(`${base}/state.json`)).json()) as {
          ranks: { rank: number; status: string }[];
        };
        for (const rank of state.ranks) if (rank.status === 'training') seen.add(rank.rank);
      } catch {
        // The run ended between the check and the request.
      }
      if (seen.size < 2) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const code = await exited;
    return { seen: [...seen].sort(), code, stdout, stderr };
  } finally {
    clearTimeout(killer);
    child.kill('SIGKILL');
  }
}

const twoRanks = {
  mode: 'CpuCadence',
  devices: ['cpu', 'cpu'],
  totalSamples: 320,
  batchSize: 8,
  numEpochs: 4,
  evalEvery: 0,
  stepDelayMs: [20, 20],
};

describe('Trainer monitor on two CPU ranks', () => {
  it('the launcher serves /state.json with both ranks while the run goes on, and draws the cohort', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flodl-monitor-'));
    try {
      const config = { ...twoRanks, dashboard: true, progressIntervalMs: 0, out: join(dir, 'result.json') };
      const run = await watchTwoRanks(['--import', 'tsx', script, JSON.stringify(config)]);
      expect(run.seen).toEqual([0, 1]);
      expect(run.code, run.stderr).toBe(0);
      // Piped stdout: plain lines, from the launcher only (rank output would read `[rank N] ...`).
      expect(run.stdout).toMatch(/^epoch 4\/4 done/m);
      expect(run.stdout).toMatch(/^epoch 2\/4 +\d+\/40 · /m);
      expect(run.stdout).toMatch(/^ranks 0: \d+\.\d% .* · 1: \d+\.\d% /m);
      expect(run.stdout).not.toMatch(/^\[rank \d\] .*epoch/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('flodl launch --dashboard 0 serves the coordinator it forms from the ranks', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'flodl-monitor-'));
    try {
      const config = { ...twoRanks, out: join(dir, 'result.json') };
      const run = await watchTwoRanks([
        flodlBin,
        'launch',
        '--nproc',
        '2',
        '--dashboard',
        '0',
        script,
        JSON.stringify(config),
      ]);
      expect(run.seen).toEqual([0, 1]);
      expect(run.code, run.stderr).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
