import type { SaveReason } from '../wire/messages.js';
import type { CoordinatorCore } from './coordinator-core.js';
import { pump, tryAggregate } from './epoch-flow.js';
import { type DeathCause, failureLimit, type RankDeathRecord } from './membership.js';
import type { CoordinatorInput } from './messages.js';
import { creditedReport } from './metrics.js';
import { dropFromRound, maybeAverage } from './round-lifecycle.js';
import { advanceTail, finish, saveAndExit } from './run-tail.js';

// Membership: exits, deaths, stalls and liveness, and how the cohort re-forms without a rank.

export function onExiting(core: CoordinatorCore, rank: number): void {
  if (core.isFinished()) core.membership.markExited(rank);
  else if (core.membership.isLive(rank)) {
    declareDead(core, rank, 'exited-early', { message: 'rank exited before Shutdown' });
  }
}

export function onRankExited(
  core: CoordinatorCore,
  input: Extract<CoordinatorInput, { type: 'RankExited' }>,
): void {
  const status = input.signal ?? `exit code ${input.exitCode ?? 'unknown'}`;
  const exit = {
    ...(input.exitCode === undefined ? {} : { exitCode: input.exitCode }),
    ...(input.signal === undefined ? {} : { signal: input.signal }),
    ...(input.pid === undefined ? {} : { pid: input.pid }),
    ...(input.stack === undefined ? {} : { stack: input.stack }),
  };
  // Declared dead earlier (its connection dropped first, or it went silent): the record
  // keeps that cause and gains the exit status.
  if (core.membership.isDead(input.rank)) {
    core.membership.mergeExit(input.rank, {
      ...exit,
      message: input.message ?? `process ended (${status})`,
    });
    return;
  }
  if (!core.inCohortOrSuspected(input.rank) || core.isFinished()) return;
  declareDead(core, input.rank, 'process-exit', {
    message: input.message ?? `process ended (${status})`,
    ...exit,
  });
}

/**
 * Shrinks the cohort (floDl `dead_ranks`): records the death, drops the rank from the reduce
 * in flight, from ElChe and from the roles, returns its data to the survivors, and either
 * continues (NCCL: after re-forming the communicator) or saves and exits when the failure
 * threshold is crossed.
 */
export function declareDead(
  core: CoordinatorCore,
  rank: number,
  cause: DeathCause,
  details: Pick<RankDeathRecord, 'message'> & Partial<RankDeathRecord>,
) {
  const suspected = core.membership.isSuspected(rank);
  if (!core.recordDeath(rank, cause, details)) return;
  if (!suspected) {
    shrink(core, rank);
    return;
  }
  // A suspected rank left the cohort already: only the failure threshold can change now.
  const breach = failureBreach(core);
  if (breach === 'AllRanksLost') finish(core, breach);
  else if (breach) saveAndExit(core, breach);
}

/**
 * Takes a rank out of the cohort (a death, or a suspected stall): drops it from the round in
 * flight, from ElChe and the roles, returns its data to the others, and either continues
 * (NCCL: after re-forming the communicator) or saves and exits when a threshold is crossed.
 */
function shrink(core: CoordinatorCore, rank: number): void {
  core.throttled[rank] = false;
  core.divergence.drop(rank);
  dropFromRound(core, rank);
  core.ledger.clear(rank);
  core.elChe.removeRank(rank);
  core.roles.onDeath(rank, core.membership.liveMask(), (candidate) => core.elChe.smoothedMs(candidate));
  if (core.config.progressive) core.dispatcher.forfeit(rank);
  else {
    // A whole partition was out: credit what the rank ran (in the epoch's metrics too, so
    // they count every sample once), hand the rest to the survivors.
    core.dispatcher.forfeit(rank, core.dispatcher.doneInFlightBatches(rank), (epoch, samples) =>
      core.metrics.add(creditedReport(rank, epoch, samples)),
    );
    for (const { rank: target, epoch, offset, size } of core.dispatcher.distributeReclaimed(core.context())) {
      core.send(target, { type: 'ExtendPartition', epoch, offset, size });
    }
  }
  const breach = failureBreach(core);
  if (breach === 'AllRanksLost') {
    finish(core, breach);
    return;
  }
  if (breach) {
    saveAndExit(core, breach);
    return;
  }
  core.callbacks.broadcastRoleIfDirty();
  if (core.backend === 'Nccl') {
    // Survivors abort the communicator; the lowest survivor generates the new session id.
    // They leave a collective with the dead rank only once its process is ended: their
    // clocks start again from this new work, not from the round they waited in.
    const now = core.clock.now();
    const survivors = core.membership.liveRanks();
    for (const survivor of survivors) core.stalls.progress(survivor, now);
    core.broadcast({ type: 'DeclareDead', rank });
    core.ncclGenerator = survivors[0];
    if (core.ncclGenerator !== undefined) core.send(core.ncclGenerator, { type: 'RequestNewNcclId' });
  }
  core.callbacks.onDeath(rank);
  tryAggregate(core);
  pump(core);
  maybeAverage(core);
  advanceTail(core);
}

function failureBreach(core: CoordinatorCore): SaveReason | undefined {
  const live = core.membership.liveCount;
  if (live === 0) return 'AllRanksLost';
  const { maxFailure, worldSize } = core.config;
  if (maxFailure && core.membership.deadCount >= failureLimit(maxFailure, worldSize))
    return 'MaxFailureExceeded';
  if (core.backend === 'Nccl' && worldSize >= 2 && live < 2) return 'SingleSurvivor';
  return undefined;
}

export function onNcclId(core: CoordinatorCore, rank: number, uidBytes: Uint8Array): void {
  if (core.ncclGenerator !== rank) {
    core.reject('NewNcclIdGenerated', 'this rank was not asked for a session id');
    return;
  }
  core.ncclGenerator = undefined;
  const survivors = core.membership.liveRanks();
  survivors.forEach((survivor, newRank) => {
    core.send(survivor, { type: 'NewNcclSession', uidBytes, newRank, newWorldSize: survivors.length });
  });
  maybeAverage(core);
  advanceTail(core);
}

export function onTick(core: CoordinatorCore): void {
  const now = core.clock.now();
  if (core.state === 'forming' || core.isFinished()) return;
  for (const rank of core.membership.staleRanks(now, core.config.heartbeatTimeoutMs)) {
    if (core.isFinished()) return;
    declareDead(core, rank, 'heartbeat-timeout', {
      message: `no heartbeat for more than ${core.config.heartbeatTimeoutMs} ms`,
    });
  }
  if (core.isFinished()) return;
  watchStalls(core, now);
  if (core.isFinished()) return;
  if (core.round && now - core.round.startedAt > core.config.reduceStallMs) {
    saveAndExit(core, 'ReduceStall');
    return;
  }
  if (now - core.lastBeacon >= core.config.coordHeartbeatMs) {
    core.lastBeacon = now;
    core.broadcast({ type: 'CoordHeartbeat' });
  }
  if (core.state === 'finishing' && core.callbacks.expire(now)) advanceTail(core);
}

/**
 * Stall suspicion: a live rank that owes work and made no progress for far longer than its
 * own smoothed step time leaves the cohort (its work goes to the others); a rank without
 * progress for the whole heartbeat timeout (or its allowance, when longer) is declared dead,
 * suspected or not. A rank is never suspected when its leaving would end the run (the last
 * live rank, NCCL's last pair): it is declared dead at the timeout instead. Before a rank has
 * a smoothed step time, only heartbeat staleness applies.
 */
function watchStalls(core: CoordinatorCore, now: number): void {
  const timeoutMs = core.config.heartbeatTimeoutMs;
  if (!core.stalls.enabled) return;
  const stalled = (rank: number, allowanceMs?: number): boolean => {
    if (!core.stalls.deathDue(rank, now, timeoutMs, allowanceMs)) return false;
    const silentMs = now - core.stalls.lastProgress(rank);
    declareDead(core, rank, 'stalled', { message: `owed work and made no progress for ${silentMs} ms` });
    return true;
  };
  for (const rank of core.membership.suspectedRanks()) {
    if (stalled(rank) && core.isFinished()) return;
  }
  if (core.state !== 'running') return;
  // A rank that still heartbeats while a silent one owes work is most likely waiting on that
  // one (in its collective, or for its step in lockstep): the silent rank is suspected first,
  // and the others wait until it has been dealt with. Silence counts from the rank's last
  // message, which may come after a waiting peer's last progress (a rank frozen inside the
  // collective it entered last): it is told apart before the least allowance (a third of the
  // timeout) runs out.
  const silentAfterMs = timeoutMs / 4;
  const silent = (rank: number): boolean => now - core.membership.lastSeen(rank) > silentAfterMs;
  const silentOwing = core.membership.liveRanks().some((rank) => silent(rank) && owesWork(core, rank));
  for (const rank of core.membership.liveRanks()) {
    // Owing nothing keeps the clock current: the allowance starts when work is owed.
    if (!owesWork(core, rank)) {
      core.stalls.progress(rank, now);
      continue;
    }
    // Before its first smoothed reading (warm-up, compilation) nothing says how long a step
    // may take: only heartbeat staleness applies.
    const smoothedMs = core.elChe.smoothedMs(rank);
    if (smoothedMs === undefined) continue;
    // Waiting on a silent rank that owes work is not a stall of its own: the silent one is
    // dealt with first (heartbeat staleness bounds that wait).
    if (silentOwing && !silent(rank)) continue;
    const allowanceMs = core.stalls.allowanceMs(smoothedMs);
    if (stalled(rank, allowanceMs)) {
      if (core.state !== 'running') return;
      continue;
    }
    if (!core.stalls.overdue(rank, now, smoothedMs)) continue;
    if (!canSuspect(core)) continue;
    core.membership.suspect(rank);
    core.stalls.suspected(rank, allowanceMs);
    core.out.notices.push({
      type: 'RankSuspected',
      rank,
      overdueMs: now - core.stalls.lastProgress(rank),
      allowanceMs,
    });
    shrink(core, rank);
    if (core.state !== 'running') return;
  }
}

/** `rank` has work to run or a round to join, and nothing (a throttle, a callback, the reduce) excuses a pause. */
function owesWork(core: CoordinatorCore, rank: number): boolean {
  if (core.throttled[rank] || core.callbacks.busyWith(rank) || core.heldAtReduce(rank)) return false;
  // In the NCCL modes the peers of a suspected rank sit in the collective with it until it is
  // declared dead (and ended): waiting on it is not a stall of their own.
  if (core.backend === 'Nccl' && core.membership.suspectedRanks().some((other) => other !== rank))
    return false;
  const round = core.round;
  if (round?.participants.has(rank)) return !round.joined.has(rank);
  return core.dispatcher.inFlightBatches(rank) > 0;
}

/** Whether one more rank can leave without ending the run. */
function canSuspect(core: CoordinatorCore): boolean {
  const left = core.membership.liveCount - 1;
  return left >= 1 && !(core.backend === 'Nccl' && core.config.worldSize >= 2 && left < 2);
}
