import { describe, expect, it } from 'vitest';
import {
  EL_CHE_MODES,
  type ElCheMode,
  SimulatedCluster,
  type SimulatedRankSpec,
  usableSamples,
} from '../src/coordinator/index.js';

/** A small seeded PRNG (LCG) so the rigs are the same on every run. */
function lcg(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31;
  };
}

type Fault = 'none' | 'die' | 'hang' | 'die-all-but-one';

function rig(random: () => number, world: number, fault: Fault): SimulatedRankSpec[] {
  return Array.from({ length: world }, (_, rank) => ({
    msPerBatch: 5 + random() * 40,
    dataMs: random() * 5,
    jitter: 0.05,
    fillMs: random() * 30,
    ...(fault === 'die' && rank === 1 ? { dieAtMs: 500 + random() * 3000 } : {}),
    ...(fault === 'die-all-but-one' && rank >= 1 ? { dieAtMs: 500 + random() * 3000 } : {}),
    ...(fault === 'hang' && rank === world - 1 ? { hangAtMs: 500 + random() * 3000 } : {}),
  }));
}

describe('random heterogeneous rigs with faults', () => {
  for (const mode of EL_CHE_MODES) {
    it(`${mode}: every run ends (completed or saved) and completed epochs are covered exactly`, () => {
      const random = lcg(EL_CHE_MODES.indexOf(mode as ElCheMode) + 3);
      for (const maxBatchDiff of [undefined, 8]) {
        for (const fault of ['none', 'die', 'hang', 'die-all-but-one'] as const) {
          for (const world of [2, 3, 4]) {
            const totalSamples = 6000 + Math.floor(random() * 6000);
            const sim = new SimulatedCluster({
              ranks: rig(random, world, fault),
              syncMs: 5 + random() * 50,
              reduceMs: 5 + random() * 50,
              divergence: () => random() * 0.1,
              maxTimeMs: 300_000,
              coordinator: {
                totalSamples,
                batchSize: 16,
                numEpochs: 3,
                heartbeatTimeoutMs: 2000,
                evalEveryEpochs: 1,
                checkpointEvery: 1,
                elche: { mode, ...(maxBatchDiff === undefined ? {} : { maxBatchDiff }) },
              },
            });
            const result = sim.run();
            const label = `${mode} maxBatchDiff=${maxBatchDiff} ${fault} W=${world}`;
            expect(result.finished, label).toBe(true);
            const reason = sim.coordinator.finishReason;
            if (fault === 'none') expect(reason, label).toBe('Completed');
            if (reason !== 'Completed') {
              expect(['SingleSurvivor', 'AllRanksLost'], label).toContain(reason);
              continue;
            }
            expect(result.epochs, label).toHaveLength(3);
            const usable = usableSamples(totalSamples, 16);
            const progressive = !mode.endsWith('Sync');
            for (const epoch of result.epochs) {
              const reported = epoch.perRankSamples.reduce((sum, samples) => sum + samples, 0);
              // Progressive epochs are reported in full; a Sync death credits the dead rank's
              // processed prefix without a report.
              if (progressive || fault === 'none') expect(reported, label).toBe(usable);
              else expect(reported, label).toBeLessThanOrEqual(usable);
            }
          }
        }
      }
    });
  }
});
