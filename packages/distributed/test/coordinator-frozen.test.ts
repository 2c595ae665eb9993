// A rank frozen whole (SIGSTOP: no training, no heartbeats) while its peers wait on it, on a
// fake clock: only the frozen rank is suspected and declared dead; the peers that wait in its
// round (its collective, or its step in lockstep) keep heartbeating and are not taken for
// stalled themselves.
import { describe, expect, it } from 'vitest';
import { EL_CHE_MODES, SimulatedCluster } from '../src/coordinator/index.js';

describe('a frozen rank and the peers waiting on it (simulated ranks, fake clock)', () => {
  for (const mode of EL_CHE_MODES) {
    it(`${mode}: only the frozen rank is suspected and lost`, () => {
      const sim = new SimulatedCluster({
        ranks: [{ msPerBatch: 20 }, { msPerBatch: 20 }, { msPerBatch: 20, hangAtMs: 1_500 }],
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
      });
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
