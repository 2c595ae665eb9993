// The benchmarks on tiny settings, so they keep running as the code moves. No timing is
// asserted: only that every figure is produced and the rounds did their work.
import { describe, expect, it } from 'vitest';
import { runAveragingBench } from '../bench/averaging.js';
import { runCoordinatorBench } from '../bench/coordinator.js';

describe('benchmarks (smoke)', () => {
  it('bench:averaging runs host rounds and a collective round on a small model', async () => {
    const result = await runAveragingBench({ params: 20_000, layers: 4, ranks: 2, rounds: 2, print: false });
    expect(result.params).toBe(20_000);
    expect(result.bytes).toBe(80_000);
    expect(result.host.roundsMs).toHaveLength(2);
    for (const value of [
      result.limitMs,
      result.host.round,
      result.memcpyBytesPerSec,
      result.loopbackBytesPerSec,
    ])
      expect(value).toBeGreaterThan(0);
    expect(result.collective?.averageMs).toBeGreaterThan(0);
    expect(result.collective?.allReduceMs).toBeGreaterThan(0);
  });

  it('bench:coordinator simulates mixed-speed clusters in every policy', () => {
    const rows = runCoordinatorBench({
      ranks: [8, 16],
      modes: ['CpuCadence', 'NcclSync', 'CpuAsync'],
      batches: 16,
      repeats: 1,
      print: false,
    });
    expect(rows).toHaveLength(6);
    for (const row of rows) {
      expect(row.rounds, `${row.mode} ${row.ranks}`).toBeGreaterThan(0);
      expect(row.reportsPerRound).toBeGreaterThan(row.ranks - 1);
      expect(row.decisionMs).toBeGreaterThanOrEqual(0);
      expect(row.cpuPerRoundMs).toBeGreaterThan(0);
    }
  });
});
