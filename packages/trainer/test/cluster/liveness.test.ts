// A hung rank under a real ClusterCoordinator (3 processes over loopback, CPU, liveness 3 s):
// a SIGSTOPped rank (no heartbeat) and a rank whose main thread blocks (heartbeats go on)
// are declared dead and ended by the launcher, which resolves with them lost; the survivors
// finish. Without `elastic` the run fails fast. No rank process is left behind.
import { RankFailedError } from '@flodl/distributed';
import { FlodlError } from '@flodl/tensor-native';
import { alive, captureWarnings } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { type ObservedRun, runObserved } from './fixtures/observed-run.js';

// An ended rank can reset its connection; the coordinator logs the drop (expected here).
captureWarnings([
  /^\[flodl\] dropped connection from .*: wire: connection error: (read|write) (ECONNRESET|EPIPE)/,
  /^\[flodl\] dropped connection from .*: wire: rank 1's control channel timed out after 3000 ms/,
]);

const LIVENESS_MS = 3_000;

function run(how: 'stop' | 'block', elastic = true, afterRounds = 0): Promise<ObservedRun> {
  return runObserved({
    mode: 'CpuCadence',
    totalSamples: 576,
    batchSize: 16,
    numEpochs: 3,
    elastic,
    livenessMs: LIVENESS_MS,
    // Slow enough steps that the survivors still train after the suspicion.
    rank: { die: { rank: 1, how, atStep: 8, afterRounds }, stepDelayMs: [8, 8, 8] },
  });
}

/** The survivors finished, the hung rank was ended by the launcher and is listed as lost. */
function checkLost(result: ObservedRun): void {
  expect(result.error).toBeUndefined();
  expect(result.hostErrors).toEqual([]);
  expect(result.result?.ranks.map((rank) => rank.outcome)).toEqual(['ok', 'failed', 'ok']);
  expect(result.result?.lost.map((record) => record.rank)).toEqual([1]);
  // Ended by the launcher on the coordinator's word (or, should its idle check come first, the server's).
  expect(result.result?.lost[0]?.message).toMatch(
    /^(declared dead by the coordinator .*|silent for 3000 ms); ended by the launcher/,
  );
  expect(result.host.coordinator.finishReason).toBe('Completed');
  expect([...result.records.keys()].sort()).toEqual([0, 2]);
  // The coordinator's record keeps why it was declared dead and gains the exit status.
  const [record] = result.host.coordinator.deathRecords();
  expect(record?.rank).toBe(1);
  expect(record?.signal ?? record?.exitCode).toBeDefined();
  for (const rank of result.result?.ranks ?? []) expect(alive(rank.pid), `rank ${rank.rank}`).toBe(false);
  // Every epoch was trained in full by the survivors' chunks.
  const epochs = result.host.notices.flatMap((notice) =>
    notice.type === 'EpochMetrics' ? [notice.metrics] : [],
  );
  expect(epochs.map((metrics) => metrics.perRankSamples.reduce((sum, samples) => sum + samples, 0))).toEqual([
    576, 576, 576,
  ]);
}

describe('liveness: hung ranks are ended, not waited on', () => {
  it('elastic: a SIGSTOPped rank is declared dead, ended and reported lost; the survivors finish', async () => {
    const result = await run('stop');
    checkLost(result);
    expect(['stalled', 'heartbeat-timeout']).toContain(result.host.coordinator.deathRecords()[0]?.cause);
    expect(result.elapsedMs).toBeLessThan(20_000);
  }, 90_000);

  it('elastic: a rank blocked on its main thread (still heartbeating) is suspected at once, the survivors train on', async () => {
    // Suspicion weighs the silence against the rank's smoothed step time, which ElChe reads
    // from a finished round (before it, only the heartbeat timeout applies): the rank blocks
    // once it took part in one.
    const result = await run('block', true, 1);
    checkLost(result);
    const notices = result.host.notices;
    const suspected = notices.findIndex((notice) => notice.type === 'RankSuspected' && notice.rank === 1);
    expect(suspected).toBeGreaterThanOrEqual(0);
    // The survivors kept averaging between the suspicion and the declared death.
    const dead = notices.findIndex((notice) => notice.type === 'RankDead');
    expect(dead).toBeGreaterThan(suspected);
    const rounds = notices.slice(suspected, dead).filter((notice) => notice.type === 'Averaged');
    expect(rounds.length).toBeGreaterThan(0);
    expect(result.host.coordinator.deathRecords()[0]?.cause).toBe('stalled');
    expect(result.elapsedMs).toBeLessThan(20_000);
  }, 90_000);

  it('without elastic a SIGSTOPped rank fails the run fast', async () => {
    const result = await run('stop', false);
    expect(result.error).toBeInstanceOf(RankFailedError);
    const error = result.error as RankFailedError;
    expect(FlodlError.isInstance(error) && error.code).toBe('ERR_RANK_FAILED');
    expect(error.rootCause.rank).toBe(1);
    expect(error.rootCause.message).toMatch(/^(declared dead by the coordinator|silent for 3000 ms)/);
    expect(error.stoppedRanks).toEqual([0, 2]);
    expect(result.elapsedMs).toBeLessThan(15_000);
  }, 90_000);
});
