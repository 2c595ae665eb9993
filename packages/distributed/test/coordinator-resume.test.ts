// A resumed coordinator (CoordinatorOptions.resume) continues the saved run: it starts at the
// saved epoch with its clocks and ElChe state, and hands out exactly the samples of the epoch
// in progress the save had not covered, onto the saved world size or another one.
import { describe, expect, it } from 'vitest';
import {
  ChunkPool,
  ClusterCoordinator,
  EL_CHE_MODES,
  type ElCheMode,
  SimulatedCluster,
  type SimulatedRankSpec,
  usableSamples,
} from '../src/coordinator/index.js';
import { coverage, expectExactCover } from './fixtures/coverage.js';

const BATCH = 8;
const SAMPLES = 2_403;
const EPOCHS = 3;
const USABLE = usableSamples(SAMPLES, BATCH);
/** What a 3-rank save of epoch 1 had trained: a prefix of each Sync partition, and a stray chunk. */
const COVERED: [number, number][] = [
  [0, 80],
  [800, 840],
  [1600, 1608],
  [2000, 2048],
];

function resumed(mode: ElCheMode, ranks: SimulatedRankSpec[]) {
  return new SimulatedCluster({
    ranks,
    coordinator: {
      totalSamples: SAMPLES,
      batchSize: BATCH,
      numEpochs: EPOCHS,
      elche: { mode },
      resume: { epoch: 1, covered: COVERED, globalStep: 300, averagingCount: 40 },
    },
    syncMs: 5,
    reduceMs: 5,
  }).run();
}

describe('a resumed coordinator', () => {
  for (const mode of EL_CHE_MODES) {
    for (const worldSize of [3, 2]) {
      it(`${mode} on ${worldSize} ranks: starts at the saved epoch and covers the rest of it exactly once`, () => {
        const result = resumed(
          mode,
          Array.from({ length: worldSize }, (_, rank) => ({ msPerBatch: 10 + 5 * rank })),
        );
        expect(result.finished).toBe(true);
        expect(result.epochs.map((epoch) => epoch.epoch)).toEqual([1, 2]);
        const covered = coverage(result, false);
        expect([...covered.keys()].sort()).toEqual([1, 2]);
        // The resumed epoch's slices and the saved coverage tile the epoch, no sample twice.
        expectExactCover([...(covered.get(1) ?? []), ...COVERED], USABLE);
        expectExactCover(covered.get(2) ?? [], USABLE);
        const trained = COVERED.reduce((sum, [from, to]) => sum + to - from, 0);
        expect(result.epochs[0]!.perRankSamples.reduce((sum, count) => sum + count, 0)).toBe(
          USABLE - trained,
        );
        // Every rank hears the saved LR clock at formation; rounds advance it from there.
        const clocks = result.commands.flatMap(({ command }) =>
          command.type === 'SetGlobalStep' ? [command.globalStep] : [],
        );
        expect(clocks.slice(0, worldSize)).toEqual(new Array(worldSize).fill(300));
        expect(clocks.at(-1)).toBeGreaterThan(300);
        const versions = result.commands.flatMap(({ command }) =>
          command.type === 'RequestParams' || command.type === 'Update' ? [command.version] : [],
        );
        if (versions.length > 0) expect(Math.min(...versions)).toBe(41);
      });
    }
  }

  it('restores ElChe and the guard history, and starts the next epoch when the saved one is covered whole', () => {
    const state = {
      anchor: 7,
      anchorRank: 1,
      smoothedMsPerBatch: [20, 40],
      phase: 'Stable',
      calibrationCount: 9,
    } as const;
    const coordinator = new ClusterCoordinator({
      worldSize: 2,
      totalSamples: 160,
      batchSize: 8,
      numEpochs: 3,
      elche: { mode: 'CpuCadence' },
      resume: { epoch: 1, covered: [[0, 160]], elche: state, guardHistory: [0.1, 0.2] },
    });
    expect(coordinator.elChe.toState()).toMatchObject({ anchor: 7, phase: 'Stable', calibrationCount: 9 });
    expect(coordinator.guard.history()).toEqual([0.1, 0.2]);
    coordinator.handle({ type: 'RankJoined', rank: 0 });
    const { commands } = coordinator.handle({ type: 'RankJoined', rank: 1 });
    const plans = commands.flatMap(({ command }) =>
      command.type === 'StartEpoch' ? [command.plan.epoch] : [],
    );
    expect(new Set(plans)).toEqual(new Set([2]));
  });

  it('refuses a resume state that does not fit the run, naming the field', () => {
    const options = { worldSize: 2, totalSamples: 160, batchSize: 8, numEpochs: 3 };
    expect(() => new ClusterCoordinator({ ...options, resume: { epoch: 4 } })).toThrow(/resume\.epoch/);
    expect(() => new ClusterCoordinator({ ...options, resume: { epoch: 1, covered: [[0, 999]] } })).toThrow(
      /resume\.covered/,
    );
  });

  it('ChunkPool.resumed serves each uncovered position once: a span keeps its first run, the rest is reclaimed', () => {
    const pool = ChunkPool.resumed(
      1,
      [40, 40],
      [
        [0, 8],
        [16, 24],
        [40, 48],
      ],
    );
    expect(pool.remaining()).toBe(56);
    expect(pool.takeOwn(1)).toEqual({ offset: 48, size: 32 });
    // Rank 0: the reclaimed run first, then its own span's first uncovered run.
    expect(pool.takeChunk(100, 0)).toEqual({ offset: 24, size: 16 });
    expect(pool.takeChunk(100, 0)).toEqual({ offset: 8, size: 8 });
    expect(pool.takeChunk(100, 0)).toBeUndefined();
  });
});
