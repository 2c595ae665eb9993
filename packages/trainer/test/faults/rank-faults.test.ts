// The fault suite: real rank processes of a managed Trainer run (three CPU ranks, each of the
// five modes) killed (SIGKILL) or frozen (SIGSTOP) before, during and after a reduce, the eval
// rank killed in its eval, a rank killed inside a checkpoint write, the launcher killed, a
// trainStep that throws. The faulted process must be ended and reported lost within the
// liveness setting + 5 s of the fault, the survivors finish, every epoch's samples are
// trained once (from the metrics), no process is left behind, and the last bundle loads.
// CI runs the share of the matrix that `ciMatrix` picks and bounds the whole run's end by a
// hang bound (the survivors' remaining training is as slow as the machine is loaded);
// `pnpm soak:faults` runs all of it, holds the whole run's end to the liveness setting + 5 s,
// and prints the README's table.
import { distributed } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { checkScenario, ciMatrix, KNOWN_BUGS } from './matrix.js';
import { runScenario } from './scenario.js';

const noGloo = !distributed.isAvailable('gloo');

/**
 * Scenarios at once: each is four processes (launcher and three ranks) whose liveness is
 * short, so the 2-core CI machine runs two at a time; `FLODL_FAULTS_CONCURRENCY` overrides.
 */
const CONCURRENCY = Number(process.env.FLODL_FAULTS_CONCURRENCY ?? 2);
let running = 0;
const waiting: (() => void)[] = [];
async function withSlot<T>(work: () => Promise<T>): Promise<T> {
  while (running >= CONCURRENCY) await new Promise<void>((resolve) => waiting.push(resolve));
  running += 1;
  try {
    return await work();
  } finally {
    running -= 1;
    waiting.shift()?.();
  }
}

describe.concurrent('faults: three CPU ranks of a managed Trainer run', () => {
  for (const scenario of ciMatrix()) {
    const bug = KNOWN_BUGS[`${scenario.mode} ${scenario.name}`];
    it.skipIf((scenario.mode.startsWith('Nccl') && noGloo) || bug !== undefined)(
      `${scenario.mode}: ${scenario.name}${bug ? ` (skipped, open bug: ${bug})` : ''}`,
      async () => {
        const outcome = await withSlot(() => runScenario(scenario.config));
        try {
          // The faulted process handled within livenessMs + 5 s; the whole run within the hang
          // bound (the survivors' own remaining work is as slow as the machine is loaded).
          const row = checkScenario(scenario, outcome, { bound: 'handled' });
          expect(row.problems, outcome.stderr.slice(-4000)).toEqual([]);
        } finally {
          outcome.cleanup();
        }
        // Waiting for a slot counts against a test's timeout: the whole queue's bound.
      },
      600_000,
    );
  }
});
