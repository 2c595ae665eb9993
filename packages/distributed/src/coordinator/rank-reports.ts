import { throttleReasonOf } from './averaging/triggers.js';
import type { CoordinatorCore } from './coordinator-core.js';
import { pump, pumpAhead, tryAggregate } from './epoch-flow.js';
import type { RankReport } from './messages.js';
import { finishRound, maybeAverage } from './round-lifecycle.js';
import { advanceTail } from './run-tail.js';

// Rank reports: batches, epoch metrics, and the acks and snapshots that complete a round.

type Report<T extends RankReport['type']> = Extract<RankReport, { type: T }>;

export function onBatch(core: CoordinatorCore, input: Report<'Batch'>): void {
  if (!core.admit(input.rank, 'Batch')) return;
  const { rank } = input;
  core.lastStepCount[rank] = input.stepCount;
  core.ledger.recordBatch(rank, input.batchMs, input.dataMs, input.batchLoss);
  core.dispatcher.noteBatch(rank);
  // CPU ranks report the divergence of the consensus they applied on their next batch.
  core.divergence.record(rank, input.syncDivergence);
  maybeThrottle(core, rank);
  pumpAhead(core, rank);
  maybeAverage(core);
}

export function onMetrics(core: CoordinatorCore, input: Report<'Metrics'>): void {
  if (!core.admit(input.rank, 'Metrics')) return;
  if (
    !Number.isInteger(input.samplesProcessed) ||
    input.samplesProcessed < 0 ||
    !(input.batchesProcessed >= 0)
  ) {
    core.reject('Metrics', 'samplesProcessed and batchesProcessed must be counts >= 0');
    return;
  }
  if (!core.dispatcher.complete(input.rank, input.epoch, input.samplesProcessed)) {
    core.reject('Metrics', `epoch ${input.epoch} is not open`);
    return;
  }
  const { type: _type, ...report } = input;
  core.metrics.add(report);
  tryAggregate(core);
  pump(core);
  maybeAverage(core);
}

function maybeThrottle(core: CoordinatorCore, rank: number): void {
  if (core.throttled[rank] || core.state !== 'running') return;
  const reason = throttleReasonOf({
    policy: core.policy,
    backend: core.backend,
    steps: core.ledger.steps(rank),
    count: core.elChe.batchCount(rank),
    overshoot: core.overshoot.value,
    maxBatchDiff: core.config.elche.maxBatchDiff,
    slowestSteps: () => {
      let slowest = Number.POSITIVE_INFINITY;
      for (const live of core.membership.liveRanks()) slowest = Math.min(slowest, core.ledger.steps(live));
      return slowest;
    },
  });
  if (!reason) return;
  core.throttled[rank] = true;
  core.send(rank, { type: 'Throttle' });
}

export function onSyncAck(core: CoordinatorCore, input: Report<'SyncAck'>): void {
  if (!core.admit(input.rank, 'SyncAck')) return;
  const round = core.round;
  if (round?.backend !== 'Nccl' || !round.participants.has(input.rank) || round.joined.has(input.rank)) {
    core.reject('SyncAck', 'no SyncNow awaits this rank');
    return;
  }
  // Acks are not steps: the count only proves the rank is past the collective.
  core.lastStepCount[input.rank] = input.stepCount;
  core.ledger.close(input.rank);
  round.joined.add(input.rank);
  core.divergence.record(input.rank, input.divergence, input.preNorm, input.postNorm);
  // Only participants join (checked above): the round is complete when the counts meet.
  if (round.joined.size === round.participants.size) completeRound(core, [...round.joined]);
}

export function onSnapshotReady(core: CoordinatorCore, rank: number, version: number): void {
  if (!core.admit(rank, 'SnapshotReady')) return;
  const round = core.round;
  if (round?.backend !== 'Cpu' || round.version !== version || !round.participants.has(rank)) {
    core.reject('SnapshotReady', 'no RequestParams awaits this rank');
    return;
  }
  // The snapshot froze this rank's contribution: later steps belong to the next window.
  core.ledger.close(rank);
  round.joined.add(rank);
}

export function onReduceCompleted(core: CoordinatorCore, version: number, accepted: readonly number[]): void {
  const round = core.round;
  if (round?.backend !== 'Cpu' || round.version !== version) {
    core.reject('ReduceCompleted', `no CPU round ${version} in flight`);
    return;
  }
  for (const rank of round.participants) core.ledger.close(rank);
  completeRound(
    core,
    accepted.filter((rank) => round.participants.has(rank)),
  );
}

/** Finishes the round in flight, then goes on: the run's tail when finishing, else idle ranks are woken. */
function completeRound(core: CoordinatorCore, accepted: readonly number[]): void {
  if (!finishRound(core, accepted)) return;
  if (core.state === 'finishing') {
    advanceTail(core);
    return;
  }
  pump(core);
  maybeAverage(core);
}
