import { FlodlError } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import {
  ClusterCoordinator,
  lrScaleFactor,
  ManualClock,
  rankFailureError,
  shouldAverage,
  type TriggerInputs,
  throttleReason,
} from '../src/coordinator/index.js';
import type { EpochPlan } from '../src/wire/messages.js';
import { Driver, trace } from './coordinator-driver.js';

const BATCH = 32;
/** Two ranks, 10 batches each per epoch, whole partitions, averaging every 10 steps. */
const WHOLE_PARTITIONS = {
  worldSize: 2,
  totalSamples: 640,
  batchSize: BATCH,
  numEpochs: 1,
  progressive: false,
  elche: { mode: 'CpuCadence' as const },
};

describe('formation and the first epoch', () => {
  it('starts epoch 0 once every rank joined: role first, then plans', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 640,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'CpuSync' },
    });
    expect(trace(driver.feed({ type: 'RankJoined', rank: 0 }))).toEqual([]);
    const output = driver.feed({ type: 'RankJoined', rank: 1 });
    expect(trace(output)).toEqual([
      '0:SetEpochCallbackRole',
      '1:SetEpochCallbackRole',
      '0:StartEpoch',
      '1:StartEpoch',
    ]);
    expect(driver.sent('SetEpochCallbackRole')[0]).toEqual({ type: 'SetEpochCallbackRole', rank: 0 });
    expect(driver.plans(0)).toEqual([{ epoch: 0, partitionOffset: 0, partitionSize: 320 }]);
    expect(driver.plans(1)).toEqual([{ epoch: 0, partitionOffset: 320, partitionSize: 320 }]);
    expect(driver.coordinator.state).toBe('running');
  });

  it('rejects a join after formation (membership only shrinks) and inputs from unknown ranks', () => {
    const driver = new Driver({ worldSize: 2, totalSamples: 640, batchSize: BATCH, numEpochs: 1 });
    driver.join();
    driver.feed({ type: 'RankJoined', rank: 1 });
    driver.feed({ type: 'Heartbeat', rank: 7, stepCount: 0 });
    driver.feed({ type: 'SyncAck', rank: 0, stepCount: 0 });
    expect(driver.noticed('InputRejected').map((notice) => notice.input)).toEqual([
      'RankJoined',
      'Heartbeat',
      'SyncAck',
    ]);
  });
});

describe('averaging triggers and gates', () => {
  const base: TriggerInputs = {
    policy: 'Cadence',
    backend: 'Cpu',
    live: [true, true],
    rankExited: false,
    roundInFlight: false,
    reforming: false,
    steps: [10, 30],
    elapsedMs: [350, 300],
    counts: [10, 30],
    calibrated: true,
    anchorWallMs: 350,
    starved: [false, false],
  };

  it('applies the global gates before any trigger', () => {
    expect(shouldAverage({ ...base, roundInFlight: true })).toEqual({
      fire: false,
      blockedBy: 'round-in-flight',
    });
    expect(shouldAverage({ ...base, rankExited: true })).toEqual({ fire: false, blockedBy: 'rank-exited' });
    expect(shouldAverage({ ...base, reforming: true })).toEqual({ fire: false, blockedBy: 'nccl-reforming' });
    expect(shouldAverage({ ...base, backend: 'Nccl', steps: [0, 30], starved: [true, false] })).toEqual({
      fire: false,
      blockedBy: 'zero-step-rank',
    });
    // On CPU a starved zero-step rank is left out by the mass law instead.
    expect(shouldAverage({ ...base, steps: [0, 30], elapsedMs: [0, 350], starved: [true, false] })).toEqual({
      fire: true,
    });
  });

  it('Sync fires once every rank has a step', () => {
    const sync = { ...base, policy: 'Sync' as const, steps: [1, 0] };
    expect(shouldAverage(sync).fire).toBe(false);
    expect(shouldAverage({ ...sync, steps: [1, 1] }).fire).toBe(true);
  });

  it('Cadence fires on wall time once calibrated, on batch counts before', () => {
    expect(shouldAverage(base).fire).toBe(false); // rank 1 has 300 of 350 ms
    expect(shouldAverage({ ...base, elapsedMs: [350, 351] }).fire).toBe(true);
    const cold = { ...base, calibrated: false, anchorWallMs: 0, counts: [10, 10] };
    expect(shouldAverage({ ...cold, steps: [9, 40] }).fire).toBe(false);
    expect(shouldAverage({ ...cold, steps: [10, 40] }).fire).toBe(true);
  });

  it('Async fires when every rank reached its count', () => {
    const async = { ...base, policy: 'Async' as const };
    expect(shouldAverage({ ...async, steps: [10, 29] }).fire).toBe(false);
    expect(shouldAverage({ ...async, steps: [10, 30] }).fire).toBe(true);
  });

  it('throttles CPU ranks past count + overshoot or leading by more than maxBatchDiff', () => {
    const inputs = {
      policy: 'Async' as const,
      backend: 'Cpu' as const,
      rank: 1,
      live: [true, true],
      steps: [3, 33],
      counts: [10, 30],
      overshoot: 3,
      maxBatchDiff: undefined,
    };
    expect(throttleReason(inputs)).toBe('overshoot');
    expect(throttleReason({ ...inputs, steps: [3, 32] })).toBeUndefined();
    expect(throttleReason({ ...inputs, policy: 'Cadence', steps: [3, 20], maxBatchDiff: 16 })).toBe(
      'batch-diff',
    );
    expect(throttleReason({ ...inputs, backend: 'Nccl' })).toBeUndefined();
  });
});

describe('rounds through the coordinator', () => {
  it('CpuSync: RequestParams + Throttle after one step each, then SetGlobalStep and Update', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 640,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'CpuSync' },
    });
    driver.join();
    expect(trace(driver.batch(0))).toEqual([]);
    expect(trace(driver.batch(1))).toEqual([
      '0:RequestParams',
      '0:Throttle',
      '1:RequestParams',
      '1:Throttle',
    ]);
    expect(driver.sent('RequestParams')[0]).toEqual({ type: 'RequestParams', version: 1 });
    driver.feed({ type: 'SnapshotReady', rank: 0, version: 1 });
    driver.feed({ type: 'SnapshotReady', rank: 1, version: 1 });
    const output = driver.feed({ type: 'ReduceCompleted', version: 1, accepted: [0, 1] });
    expect(trace(output)).toEqual(['0:SetGlobalStep', '1:SetGlobalStep', '0:Update', '1:Update']);
    expect(driver.sent('SetGlobalStep', 0)).toEqual([{ type: 'SetGlobalStep', globalStep: 2 }]);
    expect(driver.coordinator.version).toBe(1);
  });

  it('NCCL: no second SyncNow before every ack; acks are not steps', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 6400,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'NcclCadence' },
    });
    driver.join();
    driver.batches(0, 10);
    driver.batches(1, 12); // SyncNow goes out at rank 1's 10th step; it runs two more before joining
    expect(driver.sent('SyncNow')).toHaveLength(2);
    driver.feed({ type: 'SyncAck', rank: 0, stepCount: 10, divergence: 0.01 });
    // Rank 0 is past the collective and steps on: those steps belong to the next window.
    driver.batches(0, 15);
    expect(driver.sent('SyncNow')).toHaveLength(2);
    driver.feed({ type: 'SyncAck', rank: 1, stepCount: 12, divergence: 0.01 });
    expect(driver.coordinator.globalStep).toBe(22);
    expect(driver.sent('SetGlobalStep')).toEqual([
      { type: 'SetGlobalStep', globalStep: 22 },
      { type: 'SetGlobalStep', globalStep: 22 },
    ]);
    expect(driver.coordinator.ledger.stepsAll()).toEqual([15, 0]);
    // Rank 1 has no step in the new window: the collective would deadlock, so nothing fires.
    expect(driver.noticed('AveragingStarted')).toHaveLength(1);
    driver.batches(1, 10);
    expect(driver.noticed('AveragingStarted')).toHaveLength(2);
  });

  it('Cadence: once calibrated, fires when the slowest rank spent the anchor’s wall time', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'CpuCadence' },
    });
    driver.join();
    driver.batches(0, 10, 35);
    driver.batches(1, 35, 10);
    driver.completeRound();
    expect(driver.coordinator.elChe.anchorWallMs()).toBeCloseTo(350);
    expect(driver.coordinator.elChe.batchCounts).toEqual([10, 35]);
    driver.batches(0, 9, 35); // 315 ms
    driver.batches(1, 40, 10); // 400 ms
    expect(driver.noticed('AveragingStarted')).toHaveLength(1);
    driver.batch(0, 35); // 350 ms
    expect(driver.noticed('AveragingStarted')).toHaveLength(2);
  });

  it('Async: a fast rank past count + overshoot is throttled and gets no new chunk until the reduce', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'CpuAsync', maxOvershoot: 2 },
    });
    driver.join();
    expect(driver.coordinator.overshoot.value).toBe(2);
    // Probe chunks are 100 batches; rank 1 runs 12 of them (count 10 + overshoot 2).
    driver.batches(1, 11);
    expect(driver.sent('Throttle', 1)).toHaveLength(0);
    driver.batch(1);
    expect(driver.sent('Throttle', 1)).toHaveLength(1);
    driver.batches(0, 10);
    expect(driver.sent('RequestParams')).toHaveLength(2);
    driver.completeRound();
    expect(driver.sent('Update', 1)).toHaveLength(1);
    // The reduce released rank 1: it is throttled again only past its new budget.
    driver.batches(1, 5);
    expect(driver.sent('Throttle', 1)).toHaveLength(1);
  });

  it('advances the global step by realized, accepted steps and divides by their summed mass', () => {
    const driver = new Driver({
      worldSize: 3,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'CpuCadence', gamma: 0.5 },
    });
    driver.join();
    driver.batches(0, 16);
    driver.batches(1, 25);
    driver.batches(2, 10);
    driver.feed({ type: 'SnapshotReady', rank: 0, version: 1 });
    driver.feed({ type: 'SnapshotReady', rank: 1, version: 1 });
    driver.feed({ type: 'SnapshotReady', rank: 2, version: 1 });
    // The root lost rank 1's frame: it enters neither the sum nor the divisor.
    driver.feed({ type: 'ReduceCompleted', version: 1, accepted: [0, 2] });
    const masses = driver.coordinator.lastMasses!;
    expect(masses.divisor()).toBeCloseTo(Math.sqrt(16) + Math.sqrt(10));
    expect(masses.weightOf(1)).toBe(0);
    expect(masses.weightOf(0)).toBeCloseTo(4 / (4 + Math.sqrt(10)));
    expect(driver.coordinator.globalStep).toBe(26);
    expect(driver.noticed('Averaged')[0]?.divisor).toBeCloseTo(4 + Math.sqrt(10));
  });

  it('scales the LR by 1 + (W − 1)·ratio', () => {
    expect(lrScaleFactor(4, 1)).toBe(4);
    expect(lrScaleFactor(3, 0.5)).toBe(2);
    expect(lrScaleFactor(8, 0)).toBe(1);
    expect(() => lrScaleFactor(2, -1)).toThrow(FlodlError);
    const coordinator = new ClusterCoordinator(
      { worldSize: 3, totalSamples: 640, batchSize: BATCH, numEpochs: 1, lrScaleRatio: 0.5 },
      new ManualClock(),
    );
    expect(coordinator.lrScale).toBe(2);
  });
});

describe('epochs, metrics and callbacks', () => {
  it('aggregates epochs in order and broadcasts each before the next epoch’s plans', () => {
    const driver = new Driver({ ...WHOLE_PARTITIONS, numEpochs: 2 });
    driver.join();
    driver.finishChunk(0);
    expect(driver.noticed('EpochMetrics')).toHaveLength(0);
    driver.clearLog();
    driver.finishChunk(1);
    const metrics = driver.noticed('EpochMetrics');
    expect(metrics.map((notice) => notice.metrics.epoch)).toEqual([0]);
    const order = driver.commands.map(({ rank, command }) => `${rank}:${command.type}`);
    expect(order.indexOf('0:EpochAggregated')).toBeLessThan(order.indexOf('0:StartEpoch'));
    expect(driver.plans(0)[0]?.epoch).toBe(1);
  });

  it('CpuCadence and CpuAsync stream a rank done with its share into the next epoch; NcclCadence waits', () => {
    for (const mode of ['CpuCadence', 'CpuAsync', 'NcclCadence'] as const) {
      const driver = new Driver({
        worldSize: 2,
        totalSamples: 1280,
        batchSize: BATCH,
        numEpochs: 2,
        elche: { mode, maxOvershoot: 1000, speedHint: { slowRank: 0, ratio: 8 } },
      });
      driver.join();
      // Rank 1 drains epoch 0's pool while rank 0 still holds its first chunk.
      while (driver.plans(1)[0]?.epoch === 0) driver.finishChunk(1);
      expect(driver.coordinator.dispatcher.pool(0)?.remaining()).toBe(0);
      expect(driver.plans(0)).toHaveLength(1);
      expect(driver.plans(1).map((plan) => plan.epoch)).toEqual(mode === 'NcclCadence' ? [] : [1]);
    }
  });

  it('with lookaheadBatches, sends a rank its next chunk as its chunk ends, and every sample once', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 3200,
      batchSize: BATCH,
      numEpochs: 2,
      lookaheadBatches: 2,
      elche: { mode: 'CpuCadence' },
    });
    driver.join();
    const batches = (driver.plans(0)[0]?.partitionSize ?? 0) / BATCH;
    driver.batches(0, batches - 3);
    expect(driver.plans(0)).toHaveLength(1);
    driver.batch(0); // two batches left
    expect(driver.plans(0)).toHaveLength(2);
    driver.batch(0);
    expect(driver.plans(0)).toHaveLength(2); // one ahead at most
    // The rank finishes its chunk (its last batch, then Metrics) and goes on with the one ahead.
    driver.batch(0);
    const first = (driver.plans(0) as EpochPlan[]).shift()!;
    driver.feed({
      type: 'Metrics',
      rank: 0,
      epoch: first.epoch,
      avgLoss: 1,
      batchesProcessed: batches,
      epochMs: batches * 10,
      samplesProcessed: first.partitionSize,
      shareCompleteMs: batches * 10,
      computeOnlyMs: batches * 10,
      dataStarveMs: 0,
      scalars: {},
    });
    expect(driver.plans(0)).toHaveLength(1);
    // Run everything else to the end: each epoch is trained whole, each sample once.
    for (let turn = 0; turn < 1000 && (driver.plans(0).length > 0 || driver.plans(1).length > 0); turn++) {
      const rank = turn % 2;
      if (driver.plans(rank).length > 0) driver.finishChunk(rank);
      if (driver.noticed('AveragingStarted').length > driver.noticed('Averaged').length)
        driver.completeRound();
    }
    expect(driver.noticed('EpochMetrics').map((notice) => notice.metrics.epoch)).toEqual([0, 1]);
    for (const epoch of [0, 1]) {
      const spans = [0, 1]
        .flatMap((rank) => driver.sent('StartEpoch', rank))
        .filter((command) => command.plan.epoch === epoch)
        .map(({ plan }) => [plan.partitionOffset, plan.partitionOffset + plan.partitionSize])
        .sort((left, right) => (left[0] as number) - (right[0] as number));
      let covered = 0;
      for (const [from, to] of spans) {
        expect(from).toBe(covered);
        covered = to as number;
      }
      expect(covered).toBe(3200);
    }
    expect(driver.sent('StartEpoch').length).toBeGreaterThan(4);
  });

  it('never aggregates epoch N + 1 before epoch N, even when a streamer finishes it first', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 1280,
      batchSize: BATCH,
      numEpochs: 2,
      elche: { mode: 'CpuAsync', maxOvershoot: 1000, speedHint: { slowRank: 0, ratio: 8 } },
    });
    driver.join();
    // Rank 1 drains epoch 0's pool and streams into epoch 1 while rank 0 holds its chunk.
    while (driver.plans(1)[0]?.epoch === 0) driver.finishChunk(1);
    while (driver.plans(1).length > 0) driver.finishChunk(1);
    expect(driver.noticed('EpochMetrics')).toHaveLength(0);
    driver.finishChunk(0);
    const epochs = driver.noticed('EpochMetrics').map((notice) => notice.metrics.epoch);
    expect(epochs[0]).toBe(0);
    expect([...epochs].sort()).toEqual(epochs);
  });

  it('elects Fastest roles at the first calibration and keeps them through drift', () => {
    const driver = new Driver({
      worldSize: 3,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'CpuCadence' },
    });
    driver.join();
    expect(driver.coordinator.roles.evalRole).toBe(0);
    driver.batches(0, 10, 35);
    driver.batches(1, 10, 10);
    driver.batches(2, 10, 20);
    driver.completeRound();
    expect(driver.coordinator.roles.evalRole).toBe(1);
    expect(driver.sent('SetEpochCallbackRole').at(-1)).toEqual({ type: 'SetEpochCallbackRole', rank: 1 });
    // Rank 2 becomes the fastest: the role stays put (sticky).
    for (let round = 0; round < 6; round++) {
      const counts = driver.coordinator.elChe.batchCounts;
      driver.batches(0, counts[0]!, 35);
      driver.batches(1, counts[1]!, 10);
      driver.batches(2, counts[2]!, 5);
      driver.completeRound();
    }
    expect(driver.coordinator.roles.evalRole).toBe(1);
    // …until its rank dies.
    driver.feed({ type: 'RankExited', rank: 1, exitCode: 137, signal: 'SIGKILL' });
    expect(driver.coordinator.roles.evalRole).toBe(2);
    expect(driver.sent('SetEpochCallbackRole').at(-1)).toEqual({ type: 'SetEpochCallbackRole', rank: 2 });
  });

  it('keeps a Rank(n) policy fixed', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      epochCallbackPolicy: { rank: 1 },
    });
    driver.join();
    expect(driver.sent('SetEpochCallbackRole')[0]).toEqual({ type: 'SetEpochCallbackRole', rank: 1 });
    expect(driver.coordinator.roles.checkpointRole).toBe(1);
  });

  it('folds intents into the next epoch boundary on the elected rank, and broadcasts the eval', () => {
    const driver = new Driver({ ...WHOLE_PARTITIONS, numEpochs: 2 });
    driver.join();
    driver.feed({ type: 'Intent', rank: 1, intent: 'EvalNow' });
    driver.feed({ type: 'Intent', rank: 1, intent: 'CheckpointNow' });
    driver.finishChunk(0);
    expect(driver.sent('ExecuteEvalCallback')).toHaveLength(0);
    driver.finishChunk(1);
    expect(driver.sent('Checkpoint', 0)).toEqual([{ type: 'Checkpoint', version: 1, targetRank: 0 }]);
    expect(driver.sent('ExecuteEvalCallback', 0)).toEqual([
      { type: 'ExecuteEvalCallback', scheduleId: 1, epoch: 1, targetRank: 0 },
    ]);
    expect(driver.sent('ExecuteEvalCallback', 1)).toHaveLength(0);
    driver.feed({ type: 'EvalResult', rank: 0, scheduleId: 1, epoch: 1, metric: 0.93, elapsedMs: 40 });
    expect(driver.sent('EvalBroadcast')).toEqual([
      { type: 'EvalBroadcast', epoch: 1, metric: 0.93 },
      { type: 'EvalBroadcast', epoch: 1, metric: 0.93 },
    ]);
  });

  it('excludes callback wall time from the window ledger', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'CpuCadence' },
    });
    driver.join();
    driver.batches(0, 4, 35);
    driver.feed({ type: 'EpochFnElapsed', rank: 0, epoch: 0, elapsedMs: 60 });
    expect(driver.coordinator.ledger.callbackCredit(0)).toBe(60);
    // The callback's time shows up in the wait before the next step, and is taken out there.
    driver.batch(0, 35, 62);
    expect(driver.coordinator.ledger.live(0)).toMatchObject({
      steps: 5,
      wallMs: 175,
      elapsedMs: 177,
      deliveredMs: 142,
    });
    expect(driver.coordinator.ledger.callbackCredit(0)).toBe(0);
  });

  it('retries a failed checkpoint on the next untried live rank, then gives up', () => {
    const driver = new Driver({
      ...WHOLE_PARTITIONS,
      worldSize: 3,
      totalSamples: 960,
      numEpochs: 2,
      checkpointEvery: 1,
    });
    driver.join();
    for (const rank of [0, 1, 2]) driver.finishChunk(rank);
    expect(driver.sent('Checkpoint')).toEqual([{ type: 'Checkpoint', version: 1, targetRank: 0 }]);
    driver.feed({ type: 'CheckpointResult', rank: 0, version: 1, elapsedMs: 5, error: 'disk full' });
    expect(driver.sent('Checkpoint').at(-1)).toEqual({ type: 'Checkpoint', version: 1, targetRank: 1 });
    driver.feed({ type: 'CheckpointResult', rank: 1, version: 1, elapsedMs: 5, error: 'disk full' });
    driver.feed({ type: 'CheckpointResult', rank: 2, version: 1, elapsedMs: 5, error: 'disk full' });
    expect(driver.noticed('CheckpointResult').at(-1)).toMatchObject({ rank: 2, gaveUp: true });
    expect(driver.coordinator.state).toBe('running');
  });

  it('ends with a flush reduce, the final eval broadcast before Shutdown, then Shutdown', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 640,
      batchSize: BATCH,
      numEpochs: 1,
      evalEveryEpochs: 1,
      elche: { mode: 'NcclCadence' },
    });
    driver.join();
    driver.finishChunk(0);
    driver.finishChunk(1);
    while (driver.plans(0).length > 0 || driver.plans(1).length > 0) {
      for (const rank of [0, 1]) if (driver.plans(rank).length > 0) driver.finishChunk(rank);
      if (driver.coordinator.roundInFlight) driver.completeRound();
    }
    if (driver.coordinator.roundInFlight) driver.completeRound();
    expect(driver.coordinator.state).toBe('finishing');
    expect(driver.coordinator.ledger.stepsAll()).toEqual([0, 0]);
    const evalRequest = driver.sent('ExecuteEvalCallback').at(-1)!;
    driver.clearLog();
    driver.feed({
      type: 'EvalResult',
      rank: evalRequest.targetRank,
      scheduleId: evalRequest.scheduleId,
      epoch: 1,
      metric: 0.5,
      elapsedMs: 3,
    });
    expect(driver.commands.map(({ rank, command }) => `${rank}:${command.type}`)).toEqual([
      '0:EvalBroadcast',
      '1:EvalBroadcast',
      '0:Shutdown',
      '1:Shutdown',
    ]);
    expect(driver.coordinator.finishReason).toBe('Completed');
    driver.feed({ type: 'Exiting', rank: 0 });
    expect(driver.coordinator.membership.hasExited(0)).toBe(true);
  });
});

describe('membership and failures', () => {
  it('declares a silent rank dead after the heartbeat timeout, with a structured record', () => {
    const driver = new Driver({
      worldSize: 3,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      heartbeatTimeoutMs: 5000,
    });
    driver.join();
    driver.clock.advance(3000);
    driver.feed({ type: 'Heartbeat', rank: 0, stepCount: 0 });
    driver.feed({ type: 'Heartbeat', rank: 1, stepCount: 0 });
    driver.feed({ type: 'Tick' });
    expect(driver.noticed('RankDead')).toHaveLength(0);
    driver.clock.advance(2500);
    driver.feed({ type: 'Tick' });
    const [dead] = driver.noticed('RankDead');
    expect(dead?.record).toMatchObject({
      rank: 2,
      cause: 'heartbeat-timeout',
      timeMs: 5500,
      lastStepCount: 0,
    });
    expect(driver.coordinator.membership.liveRanks()).toEqual([0, 1]);
    expect(driver.sent('CoordHeartbeat').length).toBeGreaterThan(0);
  });

  it('NCCL: declares the death, re-forms the communicator among survivors, then averages again', () => {
    const driver = new Driver({
      worldSize: 3,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'NcclCadence' },
    });
    driver.join();
    driver.batches(0, 10);
    driver.batches(1, 10);
    driver.feed({
      type: 'RankExited',
      rank: 2,
      exitCode: 1,
      pid: 4242,
      message: 'CUDA error: an illegal memory access',
    });
    expect(driver.sent('DeclareDead', 0)).toEqual([{ type: 'DeclareDead', rank: 2 }]);
    expect(driver.sent('RequestNewNcclId', 0)).toHaveLength(1);
    expect(driver.sent('SyncNow')).toHaveLength(0); // re-forming
    driver.feed({ type: 'NewNcclIdGenerated', rank: 0, uidBytes: new Uint8Array(128) });
    expect(driver.sent('NewNcclSession', 1)).toEqual([
      { type: 'NewNcclSession', uidBytes: new Uint8Array(128), newRank: 1, newWorldSize: 2 },
    ]);
    expect(driver.sent('SyncNow')).toHaveLength(2);
  });

  it('saves through the freshest rank and stops when the failure threshold is reached', () => {
    const driver = new Driver({
      worldSize: 4,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      maxFailure: { absolute: 2 },
      elche: { mode: 'CpuCadence' },
    });
    driver.join();
    driver.batches(1, 3);
    driver.batches(3, 7);
    driver.feed({ type: 'RankExited', rank: 0, exitCode: 1 });
    expect(driver.coordinator.state).toBe('running');
    driver.clock.advance(10);
    driver.clearLog();
    driver.feed({ type: 'ConnectionLost', rank: 2 });
    expect(trace({ commands: driver.commands, notices: [], host: [] })).toEqual([
      '1:Shutdown',
      '3:ShutdownWithSave',
    ]);
    expect(driver.sent('ShutdownWithSave')[0]).toEqual({
      type: 'ShutdownWithSave',
      reason: 'MaxFailureExceeded',
    });
    expect(driver.coordinator.finishReason).toBe('MaxFailureExceeded');
    const error = driver.coordinator.failure()!;
    expect(error.code).toBe('ERR_RANK_FAILED');
    expect(error.message).toContain('root cause: rank 0');
  });

  it('NCCL with a single survivor saves and exits (SingleSurvivor)', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'NcclSync' },
    });
    driver.join();
    driver.feed({ type: 'Exiting', rank: 1 });
    expect(driver.sent('ShutdownWithSave')).toEqual([{ type: 'ShutdownWithSave', reason: 'SingleSurvivor' }]);
    expect(driver.noticed('RankDead')[0]?.record.cause).toBe('exited-early');
  });

  it('names the earliest death as the root cause', () => {
    const error = rankFailureError([
      { rank: 3, cause: 'heartbeat-timeout', timeMs: 900, message: 'silent' },
      { rank: 1, cause: 'process-exit', timeMs: 100, exitCode: 139, signal: 'SIGSEGV', message: 'segfault' },
    ]);
    expect(error.message).toMatchInlineSnapshot(`
      "ClusterCoordinator: 2 rank(s) failed; root cause: rank 1 (segfault)
        rank 1 (process-exit, exit 139, SIGSEGV) at 100 ms: segfault
        rank 3 (heartbeat-timeout) at 900 ms: silent
        expected: every rank to finish
        got: 2 dead"
    `);
  });

  it('ignores late traffic from a dead rank', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'CpuCadence' },
    });
    driver.join();
    driver.feed({ type: 'RankExited', rank: 1, exitCode: 1 });
    driver.batch(1);
    expect(driver.noticed('InputRejected').at(-1)).toMatchObject({ input: 'Batch' });
    expect(driver.coordinator.ledger.steps(1)).toBe(0);
  });
});

describe('throttled ranks and the trigger', () => {
  it('CpuCadence + maxBatchDiff: a throttled leader never stalls the window', () => {
    const driver = new Driver({
      worldSize: 2,
      totalSamples: 64_000,
      batchSize: BATCH,
      numEpochs: 1,
      elche: { mode: 'CpuCadence', maxBatchDiff: 16 },
    });
    driver.join();
    driver.batches(0, 10, 35);
    driver.batches(1, 35, 10);
    driver.completeRound();
    driver.clearLog();
    // Calibrated: the window is 350 ms. Rank 1 leads by more than 16 and is throttled at 200 ms.
    driver.batches(0, 3, 35);
    driver.batches(1, 20, 10);
    expect(driver.sent('Throttle', 1)).toHaveLength(1);
    driver.batches(0, 7, 35);
    expect(driver.noticed('AveragingStarted')).toHaveLength(1);
  });
});
