// Stall suspicion on a fake clock: a rank whose training stops while its heartbeats go on (a
// main thread stuck in a native call) is suspected once its work is overdue by far more than
// its own smoothed step time, leaves the cohort so the survivors train on, and is declared
// dead (`stalled`) at the heartbeat timeout. Every epoch stays covered exactly once.
import { describe, expect, it } from 'vitest';
import {
  type CoordinatorNotice,
  EL_CHE_MODES,
  type ElCheMode,
  SimulatedCluster,
  type SimulatedRankSpec,
  type SimulationResult,
  usableSamples,
} from '../src/coordinator/index.js';
import { Driver } from './coordinator-driver.js';
import { coverage, expectExactCover } from './fixtures/coverage.js';

const BATCH = 32;
const SAMPLES = 20_005;
const EPOCHS = 3;
const USABLE = usableSamples(SAMPLES, BATCH);
const STALL_AT_MS = 1_700;
const TIMEOUT_MS = 6_000;
const TICK_MS = 250;
const SPEEDS: SimulatedRankSpec[] = [{ msPerBatch: 35 }, { msPerBatch: 17.5 }, { msPerBatch: 10 }];

function simulate(
  mode: ElCheMode,
  options: { ranks?: SimulatedRankSpec[]; stallFactor?: number; maxTimeMs?: number } = {},
): SimulationResult & { sim: SimulatedCluster } {
  const sim = new SimulatedCluster({
    ranks:
      options.ranks ?? SPEEDS.map((spec, rank) => (rank === 1 ? { ...spec, stallAtMs: STALL_AT_MS } : spec)),
    coordinator: {
      totalSamples: SAMPLES,
      batchSize: BATCH,
      numEpochs: EPOCHS,
      elche: { mode },
      heartbeatTimeoutMs: TIMEOUT_MS,
      ...(options.stallFactor === undefined ? {} : { stallFactor: options.stallFactor }),
    },
    syncMs: 10,
    reduceMs: 10,
    tickMs: TICK_MS,
    ...(options.maxTimeMs ? { maxTimeMs: options.maxTimeMs } : {}),
  });
  return { ...sim.run(), sim };
}

function expectExactCoverage(result: SimulationResult, creditsPartial: boolean): void {
  const covered = coverage(result, creditsPartial);
  expect([...covered.keys()].sort()).toEqual([0, 1, 2]);
  for (const ranges of covered.values()) expectExactCover(ranges, USABLE);
}

/** Samples the survivors (ranks 0 and 2) finished in `[from, to)` ms. */
function survivorSamples(result: SimulationResult, from: number, to: number): number {
  return result.completed
    .filter((slice) => slice.rank !== 1 && slice.timeMs >= from && slice.timeMs < to)
    .reduce((sum, slice) => sum + slice.size, 0);
}

function noticesOf<T extends CoordinatorNotice['type']>(
  result: SimulationResult,
  type: T,
): Extract<CoordinatorNotice, { type: T }>[] {
  return result.notices.filter(
    (notice): notice is Extract<CoordinatorNotice, { type: T }> => notice.type === type,
  );
}

describe('stall suspicion (simulated ranks, fake clock)', () => {
  for (const mode of EL_CHE_MODES) {
    it(`${mode}: a rank that stops training but heartbeats is suspected, the survivors go on, it dies at the timeout`, () => {
      const result = simulate(mode);
      expect(result.finished).toBe(true);
      expect(result.sim.coordinator.finishReason).toBe('Completed');
      const [suspected] = noticesOf(result, 'RankSuspected');
      expect(suspected).toMatchObject({ rank: 1 });
      // Suspected within a tick of its allowance: max(floor = timeout / 3, 10 × its step time).
      expect(suspected!.allowanceMs).toBe(TIMEOUT_MS / 3);
      expect(suspected!.overdueMs).toBeGreaterThan(suspected!.allowanceMs);
      expect(suspected!.overdueMs).toBeLessThanOrEqual(suspected!.allowanceMs + TICK_MS);
      // Declared dead once it went the whole timeout without progress, not before.
      const records = result.sim.coordinator.deathRecords();
      expect(records.map((record) => [record.rank, record.cause])).toEqual([[1, 'stalled']]);
      expect(records[0]!.timeMs).toBeGreaterThan(STALL_AT_MS + TIMEOUT_MS - 100);
      expect(records[0]!.timeMs).toBeLessThan(STALL_AT_MS + TIMEOUT_MS + 2 * TICK_MS);
      // Its heartbeats while suspected are expected: none is rejected before it is declared dead.
      const dead = result.notices.findIndex((notice) => notice.type === 'RankDead');
      const rejected = result.notices.findIndex(
        (notice) => notice.type === 'InputRejected' && notice.input === 'Heartbeat',
      );
      expect(rejected === -1 || rejected > dead).toBe(true);
      expectExactCoverage(result, mode.endsWith('Sync'));
    });
  }

  it('CpuCadence: the survivors finish the stalled rank’s epoch while it is suspected, where heartbeats alone hold it open', () => {
    const suspecting = simulate('CpuCadence');
    const heartbeatOnly = simulate('CpuCadence', {
      stallFactor: 0,
      maxTimeMs: STALL_AT_MS + TIMEOUT_MS + 2_000,
    });
    // Between the suspicion (≈ stall + 2 s) and the timeout (stall + 6 s).
    const from = STALL_AT_MS + TIMEOUT_MS / 3 + 2 * TICK_MS;
    const to = STALL_AT_MS + TIMEOUT_MS - 100;
    expect(survivorSamples(suspecting, from, to)).toBeGreaterThan(0);
    // The stalled rank's chunk went to the survivors, so its epoch closed before the timeout.
    // Heartbeats alone leave that chunk with the stalled rank: the survivors stream one epoch
    // ahead, and no epoch closes while it lives.
    const aggregatedBefore = (result: SimulationResult, ms: number) =>
      result.commands.filter(
        ({ rank, command, timeMs }) => rank === 0 && command.type === 'EpochAggregated' && timeMs < ms,
      ).length;
    expect(aggregatedBefore(suspecting, to)).toBeGreaterThan(0);
    expect(aggregatedBefore(heartbeatOnly, to)).toBe(0);
    // Without suspicion nothing declares a heartbeating rank dead.
    expect(heartbeatOnly.sim.coordinator.deathRecords()).toEqual([]);
  });

  it('never suspects a rank whose leaving would end the run; it is declared dead at the timeout', () => {
    const ranks: SimulatedRankSpec[] = [{ msPerBatch: 20 }, { msPerBatch: 20, stallAtMs: STALL_AT_MS }];
    const result = simulate('NcclCadence', { ranks });
    expect(noticesOf(result, 'RankSuspected')).toEqual([]);
    const records = result.sim.coordinator.deathRecords();
    expect(records.map((record) => [record.rank, record.cause])).toEqual([[1, 'stalled']]);
    expect(records[0]!.timeMs).toBeGreaterThan(STALL_AT_MS + TIMEOUT_MS - 100);
    // NCCL with one rank left: the survivor saves and the run ends.
    expect(result.sim.coordinator.finishReason).toBe('SingleSurvivor');
  });

  it('does not suspect ranks that wait on others (throttled, joined, at the epoch barrier)', () => {
    // A slow rank (8× slower) is waited on all run long but always progresses: nobody is suspected.
    const ranks: SimulatedRankSpec[] = [{ msPerBatch: 80 }, { msPerBatch: 10 }, { msPerBatch: 10 }];
    for (const mode of EL_CHE_MODES) {
      const result = simulate(mode, { ranks });
      expect(result.sim.coordinator.finishReason, mode).toBe('Completed');
      expect(noticesOf(result, 'RankSuspected'), mode).toEqual([]);
    }
  });
});

describe('death records', () => {
  it('keep the first cause and gain the exit status reported later', () => {
    const driver = new Driver({
      worldSize: 3,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'CpuCadence' },
    });
    driver.join();
    driver.batches(1, 3);
    driver.feed({ type: 'ConnectionLost', rank: 1, message: 'control connection closed' });
    driver.clock.advance(40);
    driver.feed({ type: 'RankExited', rank: 1, exitCode: 137, signal: 'SIGKILL', pid: 4242, stack: 'at x' });
    // A second report changes nothing.
    driver.feed({ type: 'RankExited', rank: 1, exitCode: 1 });
    expect(driver.coordinator.deathRecords()).toEqual([
      expect.objectContaining({
        rank: 1,
        cause: 'connection-lost',
        exitCode: 137,
        signal: 'SIGKILL',
        pid: 4242,
        stack: 'at x',
        message: 'control connection closed; then process ended (SIGKILL)',
        lastStepCount: 3,
      }),
    ]);
  });
});
