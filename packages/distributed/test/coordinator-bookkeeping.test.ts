import { describe, expect, it } from 'vitest';
import {
  aggregateEpochMetrics,
  CallbackCost,
  CallbackRoles,
  contributionMass,
  failureLimit,
  foldContributions,
  MassLedger,
  OvershootBudget,
  prescale,
  type RankMetrics,
  resolveFastest,
  rootAverage,
  WindowLedger,
} from '../src/coordinator/index.js';

describe('mass law', () => {
  it('weighs a contribution by its realized steps shaped by gamma; zero steps weigh nothing', () => {
    expect(contributionMass(16, 1)).toBe(16);
    expect(contributionMass(16, 0.5)).toBe(4);
    expect(contributionMass(16, 0)).toBe(1);
    expect(contributionMass(0, 1)).toBe(0);
  });

  it('pre-scales at the source, folds by summing, and divides once at the root', () => {
    const rank0 = prescale(0, [1, 2], contributionMass(10, 1));
    const rank1 = prescale(1, [3, 6], contributionMass(30, 1));
    const rank2 = prescale(2, [5, 5], contributionMass(20, 1));
    // A relay folds two local ranks; the root folds the relay with the third.
    const relay = foldContributions(rank0, rank1);
    expect(relay.mass).toBe(40);
    expect(relay.sum).toEqual([10 + 90, 20 + 180]);
    const root = foldContributions(relay, rank2);
    expect(root.ranks).toEqual([0, 1, 2]);
    const average = rootAverage(root)!;
    expect(average[0]).toBeCloseTo((1 * 10 + 3 * 30 + 5 * 20) / 60);
    expect(average[1]).toBeCloseTo((2 * 10 + 6 * 30 + 5 * 20) / 60);
    expect(rootAverage(prescale(0, [1], 0))).toBeUndefined();
  });

  it('keeps sum and divisor on exactly the accepted set', () => {
    const ledger = new MassLedger(7, 1);
    ledger.expect(0, 10);
    ledger.expect(1, 30);
    ledger.expect(2, 0); // zero-step: excluded
    ledger.expect(3, 20);
    for (const rank of [0, 1, 2, 3]) ledger.accept(rank);
    expect(ledger.expectedRanks()).toEqual([0, 1, 3]);
    expect(ledger.divisor()).toBe(60);
    ledger.drop(1); // died before the root folded it
    expect(ledger.acceptedRanks()).toEqual([0, 3]);
    expect(ledger.divisor()).toBe(30);
    expect(ledger.weightOf(0) + ledger.weightOf(3)).toBeCloseTo(1);
    expect(ledger.weightOf(1)).toBe(0);
  });
});

describe('window ledger', () => {
  it('routes the first batch to the fill slot and the rest to the marginal rate', () => {
    const ledger = new WindowLedger(2);
    ledger.recordBatch(0, 10, 5, 0.5);
    ledger.recordBatch(0, 8, 2, 0.7);
    ledger.recordBatch(0, 8, 2, Number.NaN);
    const window = ledger.live(0);
    expect(window).toMatchObject({
      steps: 3,
      wallMs: 26,
      deliveredMs: 20,
      deliveredBatches: 2,
      firstBatchMs: 15,
    });
    expect(window.elapsedMs).toBe(35);
    expect(window.lossCount).toBe(2);
  });

  it('takes callback time off the following waits, across a window boundary', () => {
    const ledger = new WindowLedger(1);
    ledger.recordBatch(0, 10, 0);
    ledger.absorbCallbackCost(0, 500);
    ledger.close(0);
    ledger.takeRound();
    ledger.recordBatch(0, 10, 300);
    ledger.recordBatch(0, 10, 250);
    expect(ledger.live(0)).toMatchObject({ firstBatchMs: 10, deliveredMs: 60, elapsedMs: 70 });
    expect(ledger.callbackCredit(0)).toBe(0);
  });

  it('closes a rank’s window at the reduce and reopens it if the reduce is abandoned', () => {
    const ledger = new WindowLedger(2);
    ledger.recordBatch(0, 10, 0);
    ledger.recordBatch(0, 10, 0);
    ledger.close(0);
    ledger.recordBatch(0, 30, 0);
    expect(ledger.steps(0)).toBe(1);
    ledger.reopen(0);
    expect(ledger.live(0)).toMatchObject({ steps: 3, wallMs: 50, deliveredBatches: 2 });
    ledger.close(0);
    ledger.close(1);
    const [rank0, rank1] = ledger.takeRound();
    expect(rank0?.steps).toBe(3);
    expect(rank1?.steps).toBe(0);
    expect(ledger.isClosed(0)).toBe(false);
  });
});

describe('epoch metrics aggregation', () => {
  const report = (overrides: Partial<RankMetrics> & Pick<RankMetrics, 'rank'>): RankMetrics => ({
    epoch: 4,
    avgLoss: 0,
    batchesProcessed: 0,
    epochMs: 0,
    samplesProcessed: 0,
    shareCompleteMs: 0,
    computeOnlyMs: 0,
    dataStarveMs: 0,
    scalars: {},
    ...overrides,
  });

  it('weighs loss and scalars by batches, sums chunk durations, and keeps absent ranks null', () => {
    const metrics = aggregateEpochMetrics(
      4,
      [
        report({
          rank: 0,
          avgLoss: 0.1,
          batchesProcessed: 3,
          samplesProcessed: 96,
          epochMs: 30,
          shareCompleteMs: 30,
          computeOnlyMs: 25,
          dataStarveMs: 5,
          scalars: { accuracy: { sum: 2.7, count: 3 } },
        }),
        report({
          rank: 0,
          avgLoss: 0.3,
          batchesProcessed: 1,
          samplesProcessed: 32,
          epochMs: 10,
          shareCompleteMs: 10,
          computeOnlyMs: 9,
          dataStarveMs: 1,
          scalars: { accuracy: { sum: 0.5, count: 1 } },
        }),
        report({
          rank: 1,
          avgLoss: 0.2,
          batchesProcessed: 12,
          samplesProcessed: 384,
          epochMs: 60,
          shareCompleteMs: 48,
          computeOnlyMs: 40,
          dataStarveMs: 8,
          scalars: { accuracy: { sum: 6, count: 12 } },
        }),
      ],
      { worldSize: 3, batchShare: [0.2, 0.8, 0], deviceIndices: [0, 1, 1] },
    );
    expect(metrics.epoch).toBe(4);
    expect(metrics.avgLoss).toBeCloseTo((0.1 * 3 + 0.3 + 0.2 * 12) / 16);
    // Rank 0's accuracy mean is 3.2/4 = 0.8; rank 1's 0.5; weighted by 4 and 12 batches.
    expect(metrics.perRank[0]?.accuracy).toBeCloseTo(0.8);
    expect(metrics.scalars.accuracy).toBeCloseTo((0.8 * 4 + 0.5 * 12) / 16);
    expect(metrics.perRankLoss).toEqual([expect.closeTo(0.15), expect.closeTo(0.2), null]);
    expect(metrics.perRankSamples).toEqual([128, 384, 0]);
    expect(metrics.perRankShareCompleteMs).toEqual([40, 48, 0]);
    expect(metrics.perRankComputeOnlyMs).toEqual([34, 40, 0]);
    expect(metrics.perRankDataStarveMs).toEqual([6, 8, 0]);
    expect(metrics.perRankThroughput).toEqual([128 / 40, 384 / 48, 0]);
    expect(metrics.epochMs).toBe(60);
    expect(metrics.perRankBatchShare).toEqual([0.2, 0.8, 0]);
    expect(metrics.deviceIndices).toEqual([0, 1, 1]);
  });

  it('uses the pool’s wall time under progressive dispatch and equal shares without a balancer view', () => {
    const metrics = aggregateEpochMetrics(0, [report({ rank: 0, batchesProcessed: 1, epochMs: 5 })], {
      worldSize: 2,
      epochMs: 1234,
    });
    expect(metrics.epochMs).toBe(1234);
    expect(metrics.perRankBatchShare).toEqual([0.5, 0.5]);
  });
});

describe('callback roles', () => {
  it('picks the live rank with the lowest smoothed ms, or the lowest live rank before any reading', () => {
    const speeds = [35, 10, 17.5];
    expect(resolveFastest([true, true, true], (rank) => speeds[rank])).toBe(1);
    expect(resolveFastest([true, false, true], (rank) => speeds[rank])).toBe(2);
    expect(resolveFastest([false, true, true], () => undefined)).toBe(1);
    expect(resolveFastest([false, false], () => undefined)).toBeUndefined();
  });

  it('moves a dead rank’s roles only under Fastest, and marks the epoch role for broadcast', () => {
    const roles = new CallbackRoles('Fastest', [true, true, true]);
    expect(roles.takeDirtyEpochRole()).toBe(0);
    expect(roles.takeDirtyEpochRole()).toBeUndefined();
    roles.onDeath(0, [false, true, true], (rank) => [0, 20, 10][rank]);
    expect([roles.checkpointRole, roles.evalRole, roles.epochCallbackRole]).toEqual([2, 2, 2]);
    expect(roles.takeDirtyEpochRole()).toBe(2);
    const fixed = new CallbackRoles({ rank: 1 }, [true, true]);
    fixed.onDeath(1, [true, false], () => undefined);
    expect(fixed.evalRole).toBe(1);
  });

  it('learns callback cost as an EWMA with α = 0.3', () => {
    const cost = new CallbackCost();
    cost.add(100);
    cost.add(200);
    expect(cost.value).toBeCloseTo(130);
  });
});

describe('overshoot budget and failure threshold', () => {
  it('auto-tunes the Async overshoot: start, +1 per Stable up to the cap, reset on NudgeDown', () => {
    const budget = new OvershootBudget(600);
    expect([budget.initial, budget.cap]).toEqual([5, 10]);
    for (let cycle = 0; cycle < 8; cycle++) budget.onVerdict('Stable');
    expect(budget.value).toBe(10);
    budget.onVerdict('SuppressGrowth');
    expect(budget.value).toBe(10);
    budget.onVerdict('NudgeDown');
    expect(budget.value).toBe(5);
    expect(new OvershootBudget(50).initial).toBe(2);
    const fixed = new OvershootBudget(600, 7);
    fixed.onVerdict('Stable');
    expect(fixed.value).toBe(7);
  });

  it('computes the failure limit from an absolute count or a fraction of the world', () => {
    expect(failureLimit({ absolute: 3 }, 10)).toBe(3);
    expect(failureLimit({ percent: 0.2 }, 11)).toBe(3);
    expect(failureLimit({ percent: 2 }, 4)).toBe(4);
  });
});
