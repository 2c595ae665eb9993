import { buildWindowReport } from './averaging/cycle.js';
import { MassLedger } from './averaging/mass-law.js';
import {
  type AveragingVerdict,
  averagingVerdict,
  holdsAtZeroSteps,
  meetsTrigger,
} from './averaging/triggers.js';
import type { CoordinatorCore } from './coordinator-core.js';
import type { ConvergenceAction } from './guard.js';

// The averaging rounds: when one fires, how it starts, and the feedback when it completes.

/** The averaging decision over the whole cohort; `flush` averages trailing steps at the run's end. */
export function decide(core: CoordinatorCore, flush: boolean): AveragingVerdict {
  const live = core.membership.liveMask();
  const context = core.context();
  const workLeft = core.dispatcher.hasWorkFor(context);
  return averagingVerdict({
    policy: core.policy,
    backend: core.backend,
    live,
    // An exited rank is removed from the cohort at once, so it never holds the gate.
    rankExited: false,
    roundInFlight: core.round !== undefined,
    reforming: core.ncclGenerator !== undefined,
    steps: core.ledger.stepsAll(),
    elapsedMs: core.ledger.elapsedAll(),
    counts: context.counts,
    calibrated: core.elChe.calibrated,
    anchorWallMs: core.elChe.anchorWallMs(),
    // Waiting for the reduce: throttled (it waits by definition), or idle with nothing to take.
    starved: live.map(
      (alive, rank) =>
        alive &&
        (core.throttled[rank] === true || (core.dispatcher.inFlightSamples(rank) === 0 && !workLeft)),
    ),
    flush,
  });
}

/** Starts a round when the running cohort's gates are open. */
export function maybeAverage(core: CoordinatorCore): void {
  if (core.state !== 'running') return;
  // The gates that need no per-rank state (the decision would stop at them too).
  if (core.round !== undefined || core.ncclGenerator !== undefined) return;
  if (holderStillHolds(core)) return;
  const verdict = decide(core, false);
  core.gateHolder =
    !verdict.fire && verdict.rank !== undefined ? { rank: verdict.rank, gate: verdict.blockedBy } : undefined;
  if (verdict.fire) startRound(core);
}

/** The last decision's gate holder, re-judged on its current figures exactly as `decide` would. */
function holderStillHolds(core: CoordinatorCore): boolean {
  const holder = core.gateHolder;
  if (!holder || !core.membership.isLive(holder.rank)) return false;
  const { rank } = holder;
  const steps = core.ledger.steps(rank);
  let starved: boolean | undefined;
  const isStarved = (): boolean => {
    starved ??=
      core.throttled[rank] === true ||
      (core.dispatcher.inFlightSamples(rank) === 0 && !core.dispatcher.hasWorkFor(core.context()));
    return starved;
  };
  if (holder.gate === 'zero-step-rank') return holdsAtZeroSteps(core.backend, steps, isStarved());
  if (holder.gate !== 'trigger') return false;
  const cohort = {
    policy: core.policy,
    calibrated: core.elChe.calibrated,
    anchorWallMs: core.elChe.anchorWallMs(),
  };
  const figures = {
    steps,
    elapsedMs: core.ledger.elapsed(rank),
    count: core.elChe.batchCount(rank),
    starved: isStarved(),
  };
  return !meetsTrigger(cohort, figures);
}

export function startRound(core: CoordinatorCore): void {
  const participants = new Set(core.membership.liveRanks());
  const version = core.version + 1;
  core.round = {
    version,
    backend: core.backend,
    startedAt: core.clock.now(),
    participants,
    joined: new Set(),
  };
  core.out.notices.push({ type: 'AveragingStarted', version, ranks: [...participants] });
  if (core.backend === 'Cpu') core.out.host.push({ type: 'Collect', version, ranks: [...participants] });
  for (const rank of participants) {
    if (core.backend === 'Nccl') {
      core.send(rank, { type: 'SyncNow' });
      continue;
    }
    core.send(rank, { type: 'RequestParams', version });
    // Under CPU Sync ranks hold while the consensus is computed (floDl 0.5.3).
    if (core.policy === 'Sync') {
      core.throttled[rank] = true;
      core.send(rank, { type: 'Throttle' });
    }
  }
}

/**
 * The feedback half of a reduce, in floDl's `finish_averaging_head` order: callback slack →
 * window report → (first calibration elects roles) → divergence → guard verdict →
 * meta-controller → version → apply verdict → overshoot → global step; then the tail
 * (SetGlobalStep, CPU Update, throttles released). Waking idle ranks is the caller's.
 *
 * @returns false when no round was in flight.
 */
export function finishRound(core: CoordinatorCore, accepted: readonly number[]): boolean {
  const round = core.round;
  if (!round) return false;
  core.round = undefined;
  const syncMs = core.clock.now() - round.startedAt;
  const windows = core.ledger.takeRound();
  const live = core.membership.liveMask();
  const previousAnchor = core.elChe.anchor;
  stageCallbackSlack(core);
  const report = buildWindowReport(windows, live, core.policy, syncMs);
  core.elChe.reportWindow(report);
  if (!core.rolesCalibrated && core.elChe.calibrated) {
    // The first pace measurement is the first moment "fastest" means anything.
    core.rolesCalibrated = true;
    core.roles.elect(live, (rank) => core.elChe.smoothedMs(rank));
    core.callbacks.broadcastRoleIfDirty();
  }
  const steps = windows.map((window, rank) => (round.participants.has(rank) ? window.steps : 0));
  const action = guardVerdict(core, steps);
  const nudge = core.meta?.observe(core.lastLr, core.elChe.anchor, action, core.elChe.phase);
  if (nudge !== undefined) core.elChe.applyVerdict({ kind: 'NudgeDown', factor: nudge });
  core.version = round.version;
  const relaxUp = core.policy === 'Async' && core.config.elche.relaxUp;
  core.elChe.applyVerdict(action.kind === 'Stable' ? { kind: 'Stable', relaxUp } : action);
  core.overshoot.onVerdict(action.kind);
  const masses = new MassLedger(round.version, core.config.elche.gamma);
  for (const rank of round.participants) masses.expect(rank, steps[rank] ?? 0);
  for (const rank of accepted) if (live[rank]) masses.accept(rank);
  core.lastMasses = masses;
  // Only realized, accepted work advances the LR clock; acks are not steps.
  for (const rank of masses.acceptedRanks()) core.globalStep += steps[rank] ?? 0;
  core.out.notices.push({
    type: 'Averaged',
    version: round.version,
    globalStep: core.globalStep,
    steps,
    divisor: masses.divisor(),
    verdict: action.kind,
    anchor: core.elChe.anchor,
    batchCounts: core.elChe.batchCounts,
    phase: core.elChe.phase,
    feed: report.deliveredCoherent ? 'delivered' : 'compute',
    syncMs,
  });
  if (core.elChe.anchor !== previousAnchor) {
    core.out.notices.push({ type: 'AnchorChanged', from: previousAnchor, to: core.elChe.anchor });
  }
  core.broadcast({ type: 'SetGlobalStep', globalStep: core.globalStep });
  if (round.backend === 'Cpu') core.broadcast({ type: 'Update', version: round.version });
  core.divergence.clear();
  core.throttled.fill(false);
  return true;
}

function guardVerdict(core: CoordinatorCore, steps: readonly number[]): ConvergenceAction {
  // Sync is always Stable: it has no window to grow.
  const report = core.policy === 'Sync' ? undefined : core.divergence.report();
  if (!report) return { kind: 'Stable' };
  return core.guard.report(
    report,
    steps.reduce((sum, count) => sum + count, 0),
    Math.max(0, ...steps),
  );
}

/**
 * When the next window is the epoch's last and callbacks will fire at the boundary, shrinks
 * the firing ranks' quotas by their learned callback cost, so the callback runs in freed
 * slack instead of stretching the barrier.
 */
function stageCallbackSlack(core: CoordinatorCore): void {
  if (!core.elChe.calibrated || !core.config.progressive) return;
  const epoch = core.dispatcher.activeEpoch;
  const pool = core.dispatcher.pool(epoch);
  if (!pool || epoch === core.slackEpoch) return;
  // The epoch's batches not yet run, dispatched or not: a tail chunk can hand out the pool's
  // last samples a window or more before the epoch ends.
  const left = core.dispatcher.batchesLeft(epoch);
  if (left === 0) return;
  const live = core.membership.liveMask();
  const window = core.elChe.batchCounts.reduce((sum, count, rank) => sum + (live[rank] ? count : 0), 0);
  if (left > window) return;
  const slack = core.callbacks.slackFor(epoch + 1, live);
  // floDl's floor: only slack worth a batch or two moves a quota.
  const floor = Math.max(0.05 * core.elChe.anchorWallMs(), 100);
  if (!slack.some((ms) => ms >= floor)) return;
  core.slackEpoch = epoch;
  core.elChe.applyCallbackSlack(slack.map((ms) => (ms >= floor ? ms : 0)));
}

/** A death mid-round: NCCL's collective is aborted (windows reopen); CPU continues without the rank. */
export function dropFromRound(core: CoordinatorCore, rank: number): void {
  const round = core.round;
  if (!round) return;
  round.participants.delete(rank);
  round.joined.delete(rank);
  if (round.backend !== 'Nccl') {
    core.out.host.push({ type: 'Drop', version: round.version, rank });
    return;
  }
  for (const participant of round.participants) core.ledger.reopen(participant);
  core.round = undefined;
}
