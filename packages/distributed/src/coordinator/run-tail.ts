import type { SaveReason } from '../wire/messages.js';
import type { CoordinatorCore } from './coordinator-core.js';
import { decide, startRound } from './round-lifecycle.js';

// The end of the run: the tail after the last epoch, and the two ways a run finishes.

/** Walks the run's tail: flush (average trailing steps), final eval (broadcast before Shutdown), final checkpoint, Shutdown. */
export function advanceTail(core: CoordinatorCore): void {
  if (core.state !== 'finishing') return;
  if (core.tail === 'flush') {
    if (core.round) return;
    const decision = decide(core, true);
    if (decision.fire) {
      startRound(core);
      return;
    }
    if (decision.blockedBy === 'nccl-reforming') return;
    core.tail = 'eval';
    // The final canonical eval runs whenever evals are configured or asked for.
    const finalEval =
      core.config.evalEveryEpochs !== undefined || core.callbacks.dueAt(core.config.numEpochs).eval;
    if (finalEval && core.callbacks.dispatchEval(core.config.numEpochs)) return;
  }
  if (core.tail === 'eval') {
    if (core.callbacks.pendingEval) return;
    core.tail = 'checkpoint';
    const due = core.callbacks.dueAt(core.config.numEpochs).checkpoint;
    if (due && core.callbacks.dispatchCheckpoint(core.config.numEpochs)) return;
  }
  if (core.tail === 'checkpoint' && core.callbacks.pendingCheckpoint) return;
  core.tail = 'shutdown';
  core.broadcast({ type: 'Shutdown' });
  finish(core, 'Completed');
}

export function finish(core: CoordinatorCore, reason: 'Completed' | SaveReason): void {
  core.state = 'finished';
  // A rank still suspected when the run ends never made its work: it is dead (and ended).
  for (const rank of core.membership.suspectedRanks()) {
    core.recordDeath(rank, 'stalled', { message: 'stalled (work overdue) when the run finished' });
  }
  if (core.round?.backend === 'Cpu') core.out.host.push({ type: 'Abandon', version: core.round.version });
  core.round = undefined;
  core.finishReason = reason;
  const failedRanks = core.membership.records().map((record) => record.rank);
  core.out.notices.push({ type: 'Finished', reason, failedRanks });
}

/** Drives one final save through the rank with the freshest state, then every survivor exits. */
export function saveAndExit(core: CoordinatorCore, reason: SaveReason): void {
  const survivors = core.membership.liveRanks();
  const saver = survivors.reduce<number | undefined>(
    (best, rank) =>
      best === undefined || (core.lastStepCount[rank] ?? 0) > (core.lastStepCount[best] ?? 0) ? rank : best,
    undefined,
  );
  for (const rank of survivors) {
    core.send(rank, rank === saver ? { type: 'ShutdownWithSave', reason } : { type: 'Shutdown' });
  }
  finish(core, reason);
}
