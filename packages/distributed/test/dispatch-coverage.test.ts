import { describe, expect, it } from 'vitest';
import {
  EL_CHE_MODES,
  type ElCheMode,
  MIN_CHUNK_BATCHES,
  SimulatedCluster,
  type SimulatedRankSpec,
  type SimulationResult,
  usableSamples,
} from '../src/coordinator/index.js';
import { coverage, expectExactCover } from './fixtures/coverage.js';

const BATCH = 32;
const SAMPLES = 20_005;
const EPOCHS = 3;
const USABLE = usableSamples(SAMPLES, BATCH);

function simulate(mode: ElCheMode, ranks: SimulatedRankSpec[]): SimulationResult {
  return new SimulatedCluster({
    ranks,
    coordinator: { totalSamples: SAMPLES, batchSize: BATCH, numEpochs: EPOCHS, elche: { mode } },
    syncMs: 10,
    reduceMs: 10,
  }).run();
}

const SPEEDS: SimulatedRankSpec[] = [{ msPerBatch: 35 }, { msPerBatch: 17.5 }, { msPerBatch: 10 }];

describe('epoch coverage', () => {
  for (const mode of EL_CHE_MODES) {
    it(`${mode}: every epoch covers exactly floor(N/batch)·batch samples, without overlap`, () => {
      const result = simulate(mode, SPEEDS);
      expect(result.finished).toBe(true);
      const covered = coverage(result, false);
      expect([...covered.keys()].sort()).toEqual([0, 1, 2]);
      for (const ranges of covered.values()) expectExactCover(ranges, USABLE);
      expect(
        result.epochs.map((epoch) => epoch.perRankSamples.reduce((sum, count) => sum + count, 0)),
      ).toEqual(new Array(EPOCHS).fill(USABLE));
    });

    it(`${mode}: coverage stays exact when a rank dies mid-epoch`, () => {
      const ranks = SPEEDS.map((spec, rank) => (rank === 1 ? { ...spec, dieAtMs: 1_700 } : spec));
      const result = simulate(mode, ranks);
      expect(result.finished).toBe(true);
      expect(result.notices.some((notice) => notice.type === 'RankDead')).toBe(true);
      const progressive = !mode.endsWith('Sync');
      for (const ranges of coverage(result, !progressive).values()) expectExactCover(ranges, USABLE);
      if (!progressive) {
        expect(result.commands.some(({ command }) => command.type === 'ExtendPartition')).toBe(true);
      }
      // The epoch metrics count every sample once too: a Sync rank's credited batches included.
      expect(
        result.epochs.map((epoch) => epoch.perRankSamples.reduce((sum, count) => sum + count, 0)),
      ).toEqual(new Array(EPOCHS).fill(USABLE));
    });
  }

  it('keeps progressive chunks at ≥ 4 batches outside each epoch’s tail', () => {
    for (const mode of ['NcclCadence', 'CpuCadence', 'CpuAsync'] as const) {
      const result = simulate(mode, SPEEDS);
      const plans = result.commands.flatMap(({ command }) =>
        command.type === 'StartEpoch' ? [command.plan] : [],
      );
      const sizes = plans.map((plan) => plan.partitionSize / BATCH);
      expect(sizes.every((size) => Number.isInteger(size) && size >= 1)).toBe(true);
      // Under the minimum only where the epoch had less than a tenth of its batches left to hand
      // out (its tail, where each rank gets the share that ends with the others).
      plans.forEach((plan, index) => {
        if (plan.partitionSize >= MIN_CHUNK_BATCHES * BATCH) return;
        const left = plans
          .slice(index)
          .filter((later) => later.epoch === plan.epoch)
          .reduce((sum, later) => sum + later.partitionSize, 0);
        expect(left, `${mode}: a ${sizes[index]}-batch chunk`).toBeLessThan(USABLE / 10);
      });
    }
  });

  it('never gives a rank a second chunk while one is in flight', () => {
    for (const mode of ['NcclCadence', 'CpuCadence', 'CpuAsync'] as const) {
      const result = simulate(mode, SPEEDS);
      for (let rank = 0; rank < SPEEDS.length; rank++) {
        const plans = result.commands
          .filter(({ rank: target, command }) => target === rank && command.type === 'StartEpoch')
          .map(({ timeMs }) => ({ timeMs, kind: 'plan' }));
        const reports = result.completed
          .filter((slice) => slice.rank === rank)
          .map(({ timeMs }) => ({ timeMs, kind: 'done' }));
        // A report and the next plan share a timestamp: the report comes first.
        const timeline = [...plans, ...reports].sort(
          (left, right) => left.timeMs - right.timeMs || (left.kind === 'done' ? -1 : 1),
        );
        expect(timeline.map((event) => event.kind)).toEqual(
          timeline.map((_, index) => (index % 2 === 0 ? 'plan' : 'done')),
        );
        expect(plans.length).toBe(reports.length);
      }
    }
  });

  it('gives faster ranks proportionally more of each epoch once calibrated', () => {
    const result = simulate('CpuCadence', SPEEDS);
    const last = result.epochs.at(-1)!;
    const [slow, medium, fast] = last.perRankSamples as [number, number, number];
    expect(medium / slow).toBeGreaterThan(1.7);
    expect(fast / slow).toBeGreaterThan(3);
  });
});
