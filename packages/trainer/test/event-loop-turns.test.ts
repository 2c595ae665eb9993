// A one-device run gives the event loop a turn every ~50 ms of steps: timers fire, the
// dashboard answers and a stop from a timer ends the run within one step. Counts, not timings,
// are asserted (CI's 2 cores are loaded); the dashboard's bound is loose on purpose.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mseLoss } from '@flodl/autograd';
import { Linear, ReLU, Sequential, SGD } from '@flodl/nn';
import { manualSeed, randn } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { TensorDataset } from '../src/data/index.js';
import { EventLoopYield, Trainer } from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const pause = new Int32Array(new SharedArrayBuffer(4));

/** A builder over `samples` regression samples whose every step takes at least `stepMs`. */
function slowRun(samples: number, stepMs: number, onStep: () => void) {
  manualSeed(5);
  const x = randn([samples, 4]);
  const data = new TensorDataset([x, x.sum([1], true)]);
  return Trainer.builder(
    () => new Sequential(new Linear(4, 8), new ReLU(), new Linear(8, 1)),
    (params) => new SGD(params, { lr: 0.01 }),
    (model, batch) => {
      onStep();
      Atomics.wait(pause, 0, 0, stepMs);
      return mseLoss(model.forward(batch.at(0)), batch.at(1));
    },
  )
    .dataset(data)
    .batchSize(8)
    .devices(['cpu']);
}

describe('EventLoopYield', () => {
  it('is due once its interval passed, and restarts it at each turn', async () => {
    const turns = new EventLoopYield(20);
    expect(turns.due()).toBe(false);
    Atomics.wait(pause, 0, 0, 25);
    expect(turns.due()).toBe(true);
    let ranInTurn = false;
    setImmediate(() => {
      ranInTurn = true;
    });
    await turns.pass();
    expect(ranInTurn).toBe(true);
    expect(turns.due()).toBe(false);
  });
});

describe('a one-device run lets the event loop run', () => {
  it('a 100 ms setInterval fires regularly during one epoch of ~1.5 s', async () => {
    let ticks = 0;
    let steps = 0;
    // One epoch: no epoch boundary (where the loop already yielded) falls inside the run.
    const handle = slowRun(8 * 750, 2, () => {
      steps += 1;
    })
      .numEpochs(1)
      .run();
    const timer = setInterval(() => {
      ticks += 1;
    }, 100);
    const started = performance.now();
    await handle.join();
    const elapsed = performance.now() - started;
    clearInterval(timer);
    expect(steps).toBe(750);
    expect(elapsed).toBeGreaterThan(1400);
    // ~15 ticks in 1.5 s; before the turns, none fired until the epoch ended.
    expect(ticks).toBeGreaterThanOrEqual(5);
  });

  it('handle.stop() from a timer ends the run after at most one more step', async () => {
    let steps = 0;
    const handle = slowRun(8 * 400, 2, () => {
      steps += 1;
    })
      .numEpochs(3)
      .run();
    let stepsAtStop = -1;
    setTimeout(() => {
      stepsAtStop = steps;
      handle.stop();
    }, 300);
    const state = await handle.join();
    for (const tensor of [...state.params, ...state.buffers]) tensor.dispose();
    expect(stepsAtStop).toBeGreaterThan(0);
    expect(stepsAtStop).toBeLessThan(1200);
    expect(steps - stepsAtStop).toBeLessThanOrEqual(1);
  });

  it("the dashboard's /state.json answers during training", async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(here, 'fixtures', 'long-run-script.ts'),
        JSON.stringify({ samples: 8 * 1000, batchSize: 8, numEpochs: 1, stepDelayMs: 2, dashboard: true }),
      ],
      { cwd: join(here, '..'), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const killer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    const training = new Promise<string | undefined>((resolve) => {
      child.stdout.on('data', (chunk) => {
        stdout += chunk;
        const url = /flodl dashboard: (http:\/\/127\.0\.0\.1:\d+)\//.exec(stdout)?.[1];
        if (url && stdout.includes('training')) resolve(url);
      });
      void exited.then(() => resolve(undefined));
    });
    try {
      const base = await training;
      expect(base, `${stdout}\n${stderr}`).toBeDefined();
      const answers: number[] = [];
      const records: number[] = [];
      for (let request = 0; request < 10; request++) {
        const sent = performance.now();
        const response = await fetch(`${base}/state.json`);
        const state = (await response.json()) as { finished: unknown; recordCount: number };
        answers.push(performance.now() - sent);
        expect(state.finished).toBeNull();
        records.push(state.recordCount);
        await new Promise((resolve) => setTimeout(resolve, 37));
      }
      expect(stdout).not.toContain('done');
      // The state moved on between the answers: they came while the run trained.
      expect(records.at(-1)).toBeGreaterThan(records[0] as number);
      // ~50 ms at most between turns; 1 s for the median (5 s for any) leaves room for a loaded CI machine.
      const median = [...answers].sort((left, right) => left - right)[answers.length >> 1] as number;
      expect(median).toBeLessThan(1000);
      expect(Math.max(...answers)).toBeLessThan(5000);
      expect(await exited).toBe(0);
    } finally {
      clearTimeout(killer);
      child.kill('SIGKILL');
    }
  });
});
