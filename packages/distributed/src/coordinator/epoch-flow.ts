import type { CoordinatorCore } from './coordinator-core.js';
import type { DispatchContext } from './dispatch/dispatcher.js';
import { aggregateEpochMetrics } from './metrics.js';
import { maybeAverage } from './round-lifecycle.js';
import { advanceTail } from './run-tail.js';

// Formation and epochs: the cohort forms, epochs open, chunks go out, epochs aggregate.

export function onJoined(core: CoordinatorCore, rank: number): void {
  if (core.state !== 'forming') {
    core.reject('RankJoined', 'membership only shrinks after formation');
    return;
  }
  if (!core.membership.join(rank, core.clock.now()) || !core.membership.formed) return;
  core.state = 'running';
  core.out.notices.push({ type: 'Formed', worldSize: core.config.worldSize });
  // A resumed run starts at its saved epoch; that boundary's callbacks ran before the save.
  // Every rank hears the saved LR clock first (and so forms even when the epoch's few
  // remaining samples leave it without a first chunk).
  if (core.config.resume) core.broadcast({ type: 'SetGlobalStep', globalStep: core.globalStep });
  const start = core.dispatcher.activeEpoch;
  if (start >= core.config.numEpochs) {
    core.state = 'finishing';
    advanceTail(core);
    return;
  }
  openEpoch(core, start, core.config.resume !== undefined);
}

/** The epoch boundary, in floDl's order: the role, the checkpoint, the eval, then the plans. */
function openEpoch(core: CoordinatorCore, epoch: number, resumed = false): void {
  core.callbacks.broadcastRoleIfDirty();
  if (!resumed) core.callbacks.dispatchBoundary(epoch);
  const context = core.context();
  for (const { rank, plan } of core.dispatcher.startEpoch(epoch, context)) {
    core.send(rank, { type: 'StartEpoch', plan });
  }
  // Whole partitions: a resumed epoch's scattered leftovers are shared out at once.
  if (!core.config.progressive) {
    for (const { rank, offset, size } of core.dispatcher.distributeReclaimed(context)) {
      core.send(rank, { type: 'ExtendPartition', epoch, offset, size });
    }
  }
  maybeAverage(core);
}

/** Aggregates every epoch whose chunks are all reported, lowest first, and opens the next. */
export function tryAggregate(core: CoordinatorCore): void {
  for (
    let epoch = core.dispatcher.nextAggregatable();
    epoch !== undefined;
    epoch = core.dispatcher.nextAggregatable()
  ) {
    const pool = core.dispatcher.pool(epoch);
    const metrics = aggregateEpochMetrics(epoch, core.metrics.take(epoch), {
      worldSize: core.config.worldSize,
      batchShare: core.elChe.recentBatchShare(),
      deviceIndices: core.config.deviceIndices,
      ...(core.config.progressive && pool ? { epochMs: core.clock.now() - pool.startedAt } : {}),
    });
    core.dispatcher.markAggregated(epoch);
    core.broadcast({ type: 'EpochAggregated', metrics });
    core.out.notices.push({ type: 'EpochMetrics', metrics });
    if (epoch + 1 < core.config.numEpochs) openEpoch(core, epoch + 1);
    else {
      core.state = 'finishing';
      advanceTail(core);
    }
  }
}

/**
 * Hands a chunk to every live rank that is not held and has none in flight, or (with
 * `lookaheadBatches`) whose one chunk is about to end.
 */
export function pump(core: CoordinatorCore): void {
  if (core.state !== 'running') return;
  const context = core.context();
  // A rank busy with its chunk gets nothing: only the ready ones are visited.
  for (const rank of core.dispatcher.readyRanks()) handOut(core, rank, context);
}

/** A step report of `rank` came in: with `lookaheadBatches`, its next chunk may go out ahead. */
export function pumpAhead(core: CoordinatorCore, rank: number): void {
  if (core.state !== 'running' || !core.dispatcher.endsSoon(rank)) return;
  handOut(core, rank, core.context());
}

function handOut(core: CoordinatorCore, rank: number, context: DispatchContext): void {
  if (!core.membership.isLive(rank) || core.throttled[rank] || core.heldAtReduce(rank)) return;
  const plan = core.dispatcher.nextChunk(rank, context);
  if (plan) core.send(rank, { type: 'StartEpoch', plan });
}
