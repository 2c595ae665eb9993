// A rank dies mid-run under a real ClusterCoordinator (3 processes over loopback, CPU): in an
// elastic run the launcher reports the exit, the coordinator declares the rank dead, and the
// survivors finish the schedule with bit-identical parameters after every later round (host
// modes: the reduce in flight completes over the survivors; collective modes: the survivors
// re-form their Gloo group). Without `elastic` the run still fails fast.

import { type LaunchMode, RankFailedError } from '@flodl/distributed';
import { FlodlError } from '@flodl/tensor-native';
import { captureWarnings } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import {
  massLawAverage,
  noGloo,
  type ObservedRun,
  type RankRecord,
  runObserved,
} from './fixtures/observed-run.js';

// A dying rank can reset its connection; the coordinator logs the drop (expected here).
captureWarnings([
  /^\[flodl\] dropped connection from .*: wire: connection error: (read|write) (ECONNRESET|EPIPE)/,
]);

const TOTAL_SAMPLES = 576;
const BATCH_SIZE = 16;
const NUM_EPOCHS = 3;

interface Death {
  rank: number;
  how: 'exit' | 'kill';
  atStep?: number;
  atRound?: number;
}

function run(
  mode: LaunchMode,
  die: Death,
  extra: { nproc?: number; elastic?: boolean; stepDelayMs?: number[] } = {},
) {
  return runObserved({
    mode,
    totalSamples: TOTAL_SAMPLES,
    batchSize: BATCH_SIZE,
    numEpochs: NUM_EPOCHS,
    elastic: extra.elastic ?? true,
    ...(extra.nproc ? { nproc: extra.nproc } : {}),
    rank: { die, ...(extra.stepDelayMs ? { stepDelayMs: extra.stepDelayMs } : {}) },
  });
}

/** The survivors finished the whole schedule without the dead rank, in step after its death. */
function checkSurvivors(mode: LaunchMode, result: ObservedRun, dead: number): RankRecord[] {
  const { host } = result;
  expect(result.error).toBeUndefined();
  expect(result.hostErrors).toEqual([]);
  // launch resolved with the lost rank listed; the coordinator finished the schedule without it.
  expect(result.result?.lost.map((record) => record.rank)).toEqual([dead]);
  expect(result.result?.ranks.map((rank) => rank.outcome)).toEqual(
    [0, 1, 2].map((rank) => (rank === dead ? 'failed' : 'ok')),
  );
  expect(host.coordinator.finishReason).toBe('Completed');
  expect(host.coordinator.deathRecords().map((record) => record.rank)).toEqual([dead]);
  // The launcher's exit report reached the host; the death was declared within a second of it.
  const exit = host.exits.find((entry) => entry.rank === dead);
  expect(exit?.outcome).toBe('failed');
  const declared = host.coordinator.deathRecords()[0]!.timeMs;
  expect(Math.abs(declared - result.result!.lost[0]!.time)).toBeLessThan(1000);
  const survivors = [0, 1, 2].filter((rank) => rank !== dead);
  expect([...result.records.keys()].sort()).toEqual(survivors);
  const records = survivors.map((rank) => result.records.get(rank)!);

  // Rounds after the death: the dead rank's window no longer counts.
  const averaged = host.notices.flatMap((notice) => (notice.type === 'Averaged' ? [notice] : []));
  const lastWithDead = Math.max(0, ...averaged.filter((n) => (n.steps[dead] ?? 0) > 0).map((n) => n.version));
  const later = averaged.filter((notice) => notice.version > lastWithDead).map((notice) => notice.version);
  expect(later.length, 'rounds after the death').toBeGreaterThanOrEqual(2);
  const versions = records[0]!.rounds.map((round) => round.version);
  expect(records[1]!.rounds.map((round) => round.version)).toEqual(versions);
  expect(versions).toEqual(expect.arrayContaining(later));
  for (const version of versions) {
    const rounds = records.map((record) => record.rounds.find((round) => round.version === version)!);
    // Survivors hold bit-identical parameters after every round.
    expect(rounds[1]!.post, `round ${version}`).toEqual(rounds[0]!.post);
    if (!later.includes(version)) continue;
    // The mass law over exactly the survivors: Σ f32(m·W) / Σ m.
    const total = rounds.reduce((sum, round) => sum + round.mass, 0);
    for (const round of rounds) expect(round.totalMass).toBe(total);
    if (total === 0) {
      // No survivor stepped in this window: nothing to average, each keeps its parameters.
      for (const round of rounds) expect(round.post).toEqual(round.pre);
      continue;
    }
    const expected = massLawAverage(rounds);
    if (mode.startsWith('Cpu')) expect(rounds[0]!.consensus).toEqual(expected);
    else for (const [i, value] of rounds[0]!.post.entries()) expect(value).toBeCloseTo(expected[i]!, 5);
  }
  // The flush round ends the run: the survivors' final parameters are the same bits.
  expect(records[1]!.final).toEqual(records[0]!.final);
  // Every epoch was aggregated; the one after the death was trained by the survivors alone.
  const epochs = host.notices.flatMap((notice) => (notice.type === 'EpochMetrics' ? [notice.metrics] : []));
  expect(epochs.map((metrics) => metrics.epoch)).toEqual([0, 1, 2]);
  const last = epochs[2]!;
  expect(last.perRankSamples[dead]).toBe(0);
  expect(last.perRankSamples.reduce((sum, samples) => sum + samples, 0)).toBe(TOTAL_SAMPLES);
  const lastEpochSamples = records
    .flatMap((record) => record.plans)
    .filter((plan) => plan.epoch === NUM_EPOCHS - 1)
    .reduce((sum, plan) => sum + plan.partitionSize, 0);
  expect(lastEpochSamples).toBe(TOTAL_SAMPLES);
  for (const record of records) {
    const early = record.losses.slice(0, 4).reduce((a, b) => a + b) / 4;
    const late = record.losses.slice(-4).reduce((a, b) => a + b) / 4;
    expect(late, `rank ${record.rank} loss`).toBeLessThan(early);
  }
  return records;
}

/**
 * Sync's whole partitions: what the dead rank had not run of its epoch-0 partition (192
 * samples, less the batches it reported) went to the survivors, exactly; returns that count.
 */
function checkExtension(result: ObservedRun, records: RankRecord[]): number {
  const death = result.host.coordinator.deathRecords()[0]!;
  const extended = records.flatMap((record) => record.extended);
  expect(extended.every((plan) => plan.epoch === 0)).toBe(true);
  const leftover = TOTAL_SAMPLES / 3 - BATCH_SIZE * (death.lastStepCount ?? 0);
  expect(extended.reduce((sum, plan) => sum + plan.partitionSize, 0)).toBe(leftover);
  return leftover;
}

describe('host modes: a rank dies, the survivors finish (elastic)', () => {
  it('CpuSync: rank 2 exits non-zero when round 3 asks for its state; round 3 completes with ranks 0 and 1', async () => {
    const result = await run('CpuSync', { rank: 2, how: 'exit', atRound: 3 });
    const records = checkSurvivors('CpuSync', result, 2);
    expect(result.result?.lost[0]).toMatchObject({ exitCode: 3, signal: null });
    // The reduce in flight completed over the survivors only, sum and divisor alike.
    const round = result.host.rounds.find((entry) => entry.version === 3)!;
    expect(round.accepted).toEqual([0, 1]);
    expect(round.dropped).toEqual([2]);
    expect(round.totalMass).toBe(round.masses![0]! + round.masses![1]!);
    const survivorRounds = records.map((record) => record.rounds.find((entry) => entry.version === 3)!);
    if ((round.totalMass ?? 0) > 0)
      expect(survivorRounds[0]!.consensus).toEqual(massLawAverage(survivorRounds));
    else for (const survivor of survivorRounds) expect(survivor.post).toEqual(survivor.pre);
    // Full partitions (Sync): the dead rank's unprocessed samples (if it had not finished its
    // partition when round 3 asked) went to the survivors.
    checkExtension(result, records);
    expect(result.elapsedMs).toBeLessThan(20_000);
  }, 90_000);

  it('CpuSync: the slow rank 2 dies in round 3 with batches left; round 3 may have had no survivor step', async () => {
    // Rank 2 steps 30× slower: the survivors finish their epoch-0 partitions early and wait, so
    // round 3 can find them with no step since round 2 (no mass: nothing to average, each
    // keeps its parameters), and rank 2 certainly dies inside its partition.
    const result = await run('CpuSync', { rank: 2, how: 'exit', atRound: 3 }, { stepDelayMs: [2, 2, 60] });
    const records = checkSurvivors('CpuSync', result, 2);
    const round = result.host.rounds.find((entry) => entry.version === 3)!;
    expect(round.accepted).toEqual([0, 1]);
    expect(round.dropped).toEqual([2]);
    const survivorRounds = records.map((record) => record.rounds.find((entry) => entry.version === 3)!);
    for (const survivor of survivorRounds)
      expect(survivor.post).toEqual((round.totalMass ?? 0) === 0 ? survivor.pre : survivorRounds[0]!.post);
    expect(checkExtension(result, records)).toBeGreaterThan(0);
    expect(result.elapsedMs).toBeLessThan(20_000);
  }, 90_000);

  it('CpuCadence: rank 1 is SIGKILLed after 8 steps; the survivors take over its chunks', async () => {
    const result = await run('CpuCadence', { rank: 1, how: 'kill', atStep: 8 });
    checkSurvivors('CpuCadence', result, 1);
    expect(result.result?.lost[0]).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    expect(result.elapsedMs).toBeLessThan(20_000);
  }, 90_000);

  it('CpuAsync: rank 2 is SIGKILLed after 8 steps', async () => {
    const result = await run('CpuAsync', { rank: 2, how: 'kill', atStep: 8 });
    checkSurvivors('CpuAsync', result, 2);
    expect(result.elapsedMs).toBeLessThan(20_000);
  }, 90_000);
});

describe.skipIf(noGloo)(
  'collective modes (Gloo): the survivors re-form their process group (elastic)',
  () => {
    it('NcclSync: rank 2 is SIGKILLed as round 3 starts; the survivors leave the failed collective and re-form', async () => {
      const result = await run('NcclSync', { rank: 2, how: 'kill', atRound: 3 });
      const records = checkSurvivors('NcclSync', result, 2);
      for (const [index, record] of records.entries()) {
        expect(record.declaredDead).toEqual([2]);
        expect(record.reformations).toBe(1);
        // New dense ranks in ascending global order.
        expect(record.sessions).toEqual([{ newRank: index, newWorldSize: 2 }]);
      }
      expect(result.elapsedMs).toBeLessThan(20_000);
    }, 90_000);

    it('NcclCadence: rank 0, the rendezvous host, exits non-zero after 8 steps', async () => {
      const result = await run('NcclCadence', { rank: 0, how: 'exit', atStep: 8 });
      const records = checkSurvivors('NcclCadence', result, 0);
      expect(records.map((record) => record.sessions)).toEqual([
        [{ newRank: 0, newWorldSize: 2 }],
        [{ newRank: 1, newWorldSize: 2 }],
      ]);
      expect(result.elapsedMs).toBeLessThan(20_000);
    }, 90_000);

    it('NcclCadence, 2 ranks: the single survivor is told to save and exits cleanly within seconds', async () => {
      const result = await run('NcclCadence', { rank: 1, how: 'kill', atStep: 10 }, { nproc: 2 });
      expect(result.error).toBeUndefined();
      expect(result.result?.lost.map((record) => record.rank)).toEqual([1]);
      expect(result.host.coordinator.finishReason).toBe('SingleSurvivor');
      expect(result.records.get(0)?.saveRequested).toBe('SingleSurvivor');
      expect(result.result?.ranks.map((rank) => rank.outcome)).toEqual(['ok', 'failed']);
      // Out within seconds: no wait on a collective or a session timeout (30 s).
      expect(result.elapsedMs).toBeLessThan(15_000);
    }, 90_000);
  },
);

describe('failure policies', () => {
  it('maxFailure: the first death crosses the threshold: one survivor saves, all exit, launch fails', async () => {
    const result = await runObserved({
      mode: 'CpuCadence',
      totalSamples: TOTAL_SAMPLES,
      batchSize: BATCH_SIZE,
      numEpochs: NUM_EPOCHS,
      elastic: true,
      maxFailure: { absolute: 1 },
      rank: { die: { rank: 2, how: 'kill', atStep: 10 } },
    });
    expect(result.error).toBeInstanceOf(RankFailedError);
    expect((result.error as RankFailedError).rootCause.rank).toBe(2);
    expect((result.error as RankFailedError).stoppedRanks).toEqual([]);
    expect(result.host.coordinator.finishReason).toBe('MaxFailureExceeded');
    // The survivors left on the coordinator's word, one of them saving first.
    expect([...result.records.keys()].sort()).toEqual([0, 1]);
    const saves = [...result.records.values()].map((record) => record.saveRequested);
    expect(saves.sort()).toEqual(['MaxFailureExceeded', null]);
    expect(result.elapsedMs).toBeLessThan(20_000);
  }, 90_000);

  it('without elastic a dying rank still stops the others and fails the run fast', async () => {
    const result = await run('CpuCadence', { rank: 2, how: 'kill', atStep: 10 }, { elastic: false });
    expect(result.error).toBeInstanceOf(RankFailedError);
    const error = result.error as RankFailedError;
    expect(FlodlError.isInstance(error) && error.code).toBe('ERR_RANK_FAILED');
    expect(error.rootCause).toMatchObject({ rank: 2, signal: 'SIGKILL' });
    expect(error.failures.map((record) => record.rank)).toEqual([2]);
    expect(error.stoppedRanks).toEqual([0, 1]);
    expect(result.records.size).toBe(0);
    expect(result.elapsedMs).toBeLessThan(15_000);
  }, 90_000);
});
