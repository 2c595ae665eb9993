// ClusterCoordinator driving real rank runtimes (3 processes over loopback, CPU) in the four
// modes with a barrier or a cadence: the ranks follow the epoch plans, average on command with
// bit-identical parameters after every round (the mass law over what they shipped), and finish.
import type { CoordinatorHost, LaunchMode } from '@flodl/distributed';
import { describe, expect, it } from 'vitest';
import { massLawAverage, noGloo, type RankRecord, runObserved } from './fixtures/observed-run.js';

const TOTAL_SAMPLES = 576;
const BATCH_SIZE = 16;
const NUM_EPOCHS = 3;

async function run(mode: LaunchMode): Promise<{ records: RankRecord[]; host: CoordinatorHost }> {
  // On the CPU the Nccl* modes run their collective on Gloo; a short cadence averages often.
  const result = await runObserved({
    mode,
    totalSamples: TOTAL_SAMPLES,
    batchSize: BATCH_SIZE,
    numEpochs: NUM_EPOCHS,
  });
  expect(result.error).toBeUndefined();
  expect(result.hostErrors).toEqual([]);
  return { records: [0, 1, 2].map((rank) => result.records.get(rank)!), host: result.host };
}

function check(mode: LaunchMode, records: RankRecord[], host: CoordinatorHost): void {
  // The coordinator ran the whole schedule and shut the run down.
  expect(host.finished).toBe(true);
  expect(host.coordinator.finishReason).toBe('Completed');
  const epochs = host.notices.flatMap((notice) =>
    notice.type === 'EpochMetrics' ? [notice.metrics.epoch] : [],
  );
  expect(epochs).toEqual([0, 1, 2]);
  // Every epoch's samples were trained exactly once across the ranks, by the plans.
  for (let epoch = 0; epoch < NUM_EPOCHS; epoch++) {
    const samples = records
      .flatMap((record) => record.plans)
      .filter((plan) => plan.epoch === epoch)
      .reduce((sum, plan) => sum + plan.partitionSize, 0);
    expect(samples, `epoch ${epoch}`).toBe(TOTAL_SAMPLES);
  }
  for (const record of records) {
    const early = record.losses.slice(0, 4).reduce((a, b) => a + b) / 4;
    const late = record.losses.slice(-4).reduce((a, b) => a + b) / 4;
    expect(late, `rank ${record.rank} loss`).toBeLessThan(early);
  }
  // Parameters bit-identical across ranks after every round.
  const versions = records[0]!.rounds.map((round) => round.version);
  expect(versions.length).toBeGreaterThan(1);
  for (const record of records) expect(record.rounds.map((round) => round.version)).toEqual(versions);
  for (const [index] of versions.entries()) {
    const post = records.map((record) => record.rounds[index]!.post);
    expect(post[1]).toEqual(post[0]);
    expect(post[2]).toEqual(post[0]);
    // The mass law over what the ranks shipped: Σ f32(m·W) / Σ m (host root exact; Gloo to f32 rounding).
    const rounds = records.map((record) => record.rounds[index]!);
    const total = rounds.reduce((sum, round) => sum + round.mass, 0);
    for (const round of rounds) expect(round.totalMass).toBe(total);
    const expected = massLawAverage(rounds);
    if (mode.startsWith('Cpu')) expect(post[0]).toEqual(expected);
    else for (const [i, value] of post[0]!.entries()) expect(value).toBeCloseTo(expected[i]!, 5);
  }
  // The global step advances with every round, the same on every rank.
  const averaged = host.notices.flatMap((notice) => (notice.type === 'Averaged' ? [notice] : []));
  expect(averaged.length).toBe(versions.length);
  for (const [index, notice] of averaged.entries()) {
    if (index > 0) expect(notice.globalStep).toBeGreaterThan(averaged[index - 1]!.globalStep);
  }
  const finalStep = averaged.at(-1)!.globalStep;
  expect(finalStep).toBe(host.coordinator.globalStep);
  for (const record of records) {
    expect(record.globalSteps.at(-1)).toBe(finalStep);
    expect(record.globalSteps).toEqual(averaged.map((notice) => notice.globalStep));
  }
}

describe('ClusterCoordinator driving real ranks (3 processes on CPU)', () => {
  for (const mode of ['CpuSync', 'CpuCadence', 'NcclSync', 'NcclCadence'] as const) {
    it.skipIf(mode.startsWith('Nccl') && noGloo)(
      `${mode}: ranks follow the epoch plans, average on command, and finish`,
      async () => {
        const { records, host } = await run(mode);
        check(mode, records, host);
        if (mode.startsWith('Cpu')) {
          expect(host.rounds.map((round) => round.version)).toEqual(records[0]!.rounds.map((r) => r.version));
          for (const round of host.rounds) {
            const masses = Object.values(round.masses!);
            expect(round.totalMass).toBe(masses.reduce((a, b) => a + b));
          }
        }
      },
      40_000,
    );
  }
});
