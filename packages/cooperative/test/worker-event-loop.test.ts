// The Worker's steps give the event loop a turn every ~50 ms (the runtime's, shared with the
// managed loop): timers fire inside the user's `await` loop, the dashboard answers, and
// `worker.stop()` from a timer ends the run within one step. Counts are asserted, not timings.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FlodlError,
  Linear,
  manualSeed,
  mseLoss,
  ReLU,
  randn,
  readCheckpoint,
  Sequential,
  SGD,
  TensorDataset,
  Trainer,
  type Worker,
} from '../src/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const folder = mkdtempSync(join(tmpdir(), 'flodl-worker-turns-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));
const pause = new Int32Array(new SharedArrayBuffer(4));

function builder(samples: number, epochs: number) {
  manualSeed(5);
  const x = randn([samples, 4]);
  return Trainer.builder(
    () => new Sequential(new Linear(4, 8), new ReLU(), new Linear(8, 1)),
    (params) => new SGD(params, { lr: 0.01 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  )
    .dataset(new TensorDataset([x, x.sum([1], true)]))
    .batchSize(8)
    .numEpochs(epochs)
    .devices(['cpu']);
}

/** The user's loop, every step at least `stepMs`; → steps trained, and whether a step said shutdown. */
async function train(worker: Worker, stepMs: number, onStep: (steps: number) => void = () => undefined) {
  let steps = 0;
  let shutdown = false;
  for (let plan = await worker.nextPlan(); plan && !shutdown; plan = await worker.nextPlan()) {
    for (let batch = await worker.nextBatch(); batch; batch = await worker.nextBatch()) {
      const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
      loss.backward();
      Atomics.wait(pause, 0, 0, stepMs);
      steps += 1;
      onStep(steps);
      if ((await worker.step(loss)).shutdown) {
        shutdown = true;
        break;
      }
    }
  }
  return { steps, shutdown };
}

describe('the Worker lets the event loop run', () => {
  it("a 100 ms setInterval fires regularly inside the user's loop of ~1.5 s", async () => {
    const worker = await builder(8 * 750, 1).intoWorker();
    let ticks = 0;
    const timer = setInterval(() => {
      ticks += 1;
    }, 100);
    const started = performance.now();
    const { steps } = await train(worker, 2);
    const elapsed = performance.now() - started;
    clearInterval(timer);
    const state = await worker.finish();
    for (const tensor of state.params) tensor.dispose();
    expect(steps).toBe(750);
    expect(elapsed).toBeGreaterThan(1400);
    // ~15 ticks; before the turns, none fired until the loop ended.
    expect(ticks).toBeGreaterThanOrEqual(5);
  });

  it('worker.stop() from a timer ends the run after at most one more step; finish() saves a stop bundle', async () => {
    const savePath = join(folder, 'stopped');
    const worker = await builder(8 * 400, 3)
      .savePath(savePath)
      .intoWorker();
    let steps = 0;
    let stepsAtStop = -1;
    setTimeout(() => {
      stepsAtStop = steps;
      worker.stop();
    }, 300);
    const trained = await train(worker, 2, (count) => {
      steps = count;
    });
    expect(trained.shutdown).toBe(true);
    expect(stepsAtStop).toBeGreaterThan(0);
    expect(trained.steps - stepsAtStop).toBeLessThanOrEqual(1);
    expect(await worker.nextPlan()).toBeNull();
    const state = await worker.finish();
    for (const tensor of state.params) tensor.dispose();
    const { meta } = readCheckpoint(savePath);
    expect(meta.reason).toBe('stop');
    expect(meta.localStep).toBe(trained.steps);
  });

  it('stop() after finish() is a typed error', async () => {
    const worker = await builder(16, 1).intoWorker();
    await worker.finish();
    expect(() => worker.stop()).toThrow(FlodlError);
  });

  it("the dashboard's /state.json answers while the user's loop trains", async () => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        join(here, 'fixtures', 'worker-long-run.ts'),
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
        const state = (await (await fetch(`${base}/state.json`)).json()) as {
          finished: unknown;
          recordCount: number;
        };
        answers.push(performance.now() - sent);
        expect(state.finished).toBeNull();
        records.push(state.recordCount);
        await new Promise((resolve) => setTimeout(resolve, 37));
      }
      expect(stdout).not.toContain('done');
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
