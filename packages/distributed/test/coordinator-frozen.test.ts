// A rank frozen whole (SIGSTOP: no training, no heartbeats) while its peers wait on it, on a
// fake clock: only the frozen rank is suspected and declared dead; the peers that wait in its
// round (its collective, or its step in lockstep) keep heartbeating and are not taken for
// stalled themselves.
import { describe, expect, it } from 'vitest';
import {
  EL_CHE_MODES,
  type ElCheMode,
  SimulatedCluster,
  type SimulatedClusterOptions,
  type SimulatedRankSpec,
} from '../src/coordinator/index.js';

/** Three ranks of 20 ms steps, a 3 s heartbeat timeout; `extra` adds to the cluster's options. */
function cluster(
  mode: ElCheMode,
  ranks: SimulatedRankSpec[],
  extra: Partial<SimulatedClusterOptions> = {},
): SimulatedCluster {
  return new SimulatedCluster({
    ranks,
    coordinator: {
      totalSamples: 12_000,
      batchSize: 32,
      numEpochs: 2,
      elche: { mode },
      heartbeatTimeoutMs: 3_000,
    },
    syncMs: 10,
    reduceMs: 10,
    tickMs: 100,
    ...extra,
  });
}

describe('a frozen rank and the peers waiting on it (simulated ranks, fake clock)', () => {
  for (const mode of EL_CHE_MODES) {
    it(`${mode}: only the frozen rank is suspected and lost`, () => {
      const sim = cluster(mode, [
        { msPerBatch: 20 },
        { msPerBatch: 20 },
        { msPerBatch: 20, hangAtMs: 1_500 },
      ]);
      const result = sim.run();
      expect(result.finished).toBe(true);
      const suspected = result.notices.filter((notice) => notice.type === 'RankSuspected').map((n) => n.rank);
      expect(
        suspected.every((rank) => rank === 2),
        `suspected ${suspected.join(', ')}`,
      ).toBe(true);
      const lost = sim.coordinator.deathRecords().map((record) => record.rank);
      expect(lost).toEqual([2]);
    });
  }
});

// Frozen inside the collective itself, while the peers wait in it and leave it only once the
// frozen process is ended (a collective returns when its peer's sockets close): the peers owe
// the round as long as the frozen rank does, so their clocks must not run out with its.
describe('a rank frozen inside the collective (simulated ranks, fake clock)', () => {
  for (const mode of ['NcclSync', 'NcclCadence'] as const) {
    for (const hangAt of [800, 1_100, 1_400, 1_700, 2_000, 2_300, 2_600]) {
      it(`${mode}: frozen in the first collective after ${hangAt} ms, only it is lost`, () => {
        const sim = cluster(
          mode,
          [
            { msPerBatch: 20, jitter: 0.1 },
            { msPerBatch: 20, jitter: 0.1, hangInCollectiveAtMs: hangAt },
            { msPerBatch: 20, jitter: 0.1 },
          ],
          { tickMs: 10, heartbeatMs: 200, collectiveAbortMs: 1_500 },
        );
        const result = sim.run();
        expect(result.finished).toBe(true);
        const lost = sim.coordinator.deathRecords().map((record) => `${record.rank} (${record.cause})`);
        expect(lost).toHaveLength(1);
        expect(lost[0]).toMatch(/^1 /);
        expect(sim.coordinator.finishReason).toBe('Completed');
      });
    }
  }
});
