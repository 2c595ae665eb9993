import type { ApplyPolicy, AverageBackend } from '../config.js';

/** Why an averaging round may not start now. */
export type AveragingGate =
  | 'not-started'
  | 'round-in-flight'
  | 'rank-exited'
  | 'nccl-reforming'
  | 'zero-step-rank'
  | 'no-steps'
  | 'trigger';

/** The state {@link shouldAverage} decides from. */
export interface TriggerInputs {
  readonly policy: ApplyPolicy;
  readonly backend: AverageBackend;
  readonly live: readonly boolean[];
  /** A rank exited (cleanly or not) and has not been removed from the cohort yet. */
  readonly rankExited: boolean;
  /** A round (CPU averaging, or an NCCL SyncNow awaiting acks) is in flight. */
  readonly roundInFlight: boolean;
  /** NCCL communicator re-formation after a death is in progress. */
  readonly reforming: boolean;
  /** Steps per rank in the open window. */
  readonly steps: readonly number[];
  /** Compute + data wall (ms) per rank in the open window. */
  readonly elapsedMs: readonly number[];
  /** ElChe's per-rank batch counts. */
  readonly counts: readonly number[];
  /** ElChe is calibrated (`anchorWallMs` is meaningful). */
  readonly calibrated: boolean;
  /** ElChe's `anchor × slowMs`. */
  readonly anchorWallMs: number;
  /**
   * Ranks waiting for the reduce: throttled, or idle with no work to take (epoch barrier, end
   * of run). They count as having met the trigger, so a window still closes when the rest of
   * the cohort gets there.
   */
  readonly starved: readonly boolean[];
  /** End-of-run flush: average whatever steps exist, ignoring the policy trigger. */
  readonly flush?: boolean;
}

/** The verdict of {@link shouldAverage}. */
export type TriggerDecision =
  | { readonly fire: true }
  | { readonly fire: false; readonly blockedBy: AveragingGate };

/** Relative slack on the wall-time comparison (floating sums of per-batch ms). */
const WALL_TOLERANCE = 1e-9;

/**
 * Whether to start an averaging round now (floDl `should_average`).
 *
 * Global gates: no round in flight (CPU averaging, or NCCL acks outstanding); no exited rank;
 * no NCCL re-formation; no live rank at 0 steps under NCCL (it would deadlock the collective;
 * on CPU a starved zero-step rank is simply left out by the mass law).
 *
 * Triggers: `Sync` — every rank ≥ 1 step; `Cadence` — every rank's window wall ≥ the anchor
 * wall (batch counts until calibrated); `Async` — every rank reached its batch count.
 */
export function shouldAverage(inputs: TriggerInputs): TriggerDecision {
  const verdict = averagingVerdict(inputs);
  return verdict.fire ? verdict : { fire: false, blockedBy: verdict.blockedBy };
}

/** {@link shouldAverage}'s verdict, naming the rank that holds the gate when one does. */
export type AveragingVerdict =
  | { readonly fire: true }
  | {
      readonly fire: false;
      readonly blockedBy: AveragingGate;
      /** `zero-step-rank` and `trigger`: the lowest live rank that holds the gate. */
      readonly rank?: number;
    };

/**
 * {@link shouldAverage} with the rank that holds the gate. Until that rank's own state
 * changes (its batches, throttle or work) or the cohort's does (a death, a round, new
 * counts), no other rank's batch can open the gate: a caller may skip re-deciding on those.
 */
export function averagingVerdict(inputs: TriggerInputs): AveragingVerdict {
  if (inputs.roundInFlight) return { fire: false, blockedBy: 'round-in-flight' };
  if (inputs.rankExited) return { fire: false, blockedBy: 'rank-exited' };
  if (inputs.reforming) return { fire: false, blockedBy: 'nccl-reforming' };
  const { live } = inputs;
  const stepsOf = (rank: number): number => inputs.steps[rank] ?? 0;
  let anySteps = false;
  for (let rank = 0; rank < live.length && !anySteps; rank += 1)
    anySteps = live[rank] === true && stepsOf(rank) > 0;
  if (!anySteps) return { fire: false, blockedBy: 'no-steps' };
  if (inputs.flush) {
    return { fire: true };
  }
  const starvedOf = (rank: number): boolean => inputs.starved[rank] === true;
  for (let rank = 0; rank < live.length; rank += 1) {
    if (live[rank] && holdsAtZeroSteps(inputs.backend, stepsOf(rank), starvedOf(rank)))
      return { fire: false, blockedBy: 'zero-step-rank', rank };
  }
  for (let rank = 0; rank < live.length; rank += 1) {
    if (!live[rank]) continue;
    const figures = {
      steps: stepsOf(rank),
      elapsedMs: inputs.elapsedMs[rank] ?? 0,
      count: inputs.counts[rank],
      starved: starvedOf(rank),
    };
    if (!meetsTrigger(inputs, figures)) return { fire: false, blockedBy: 'trigger', rank };
  }
  return { fire: true };
}

/** A live rank at 0 steps holds every round under NCCL (the collective would hang), and on CPU unless starved. */
export function holdsAtZeroSteps(backend: AverageBackend, steps: number, starved: boolean): boolean {
  return steps === 0 && (backend === 'Nccl' || !starved);
}

/**
 * One live rank's part of the trigger: starved, or (Sync) a step, (Cadence) its window's wall
 * at the anchor wall (its batch count until calibrated), (Async) its batch count.
 */
export function meetsTrigger(
  cohort: Pick<TriggerInputs, 'policy' | 'calibrated' | 'anchorWallMs'>,
  rank: {
    readonly steps: number;
    readonly elapsedMs: number;
    readonly count: number | undefined;
    readonly starved: boolean;
  },
): boolean {
  if (rank.starved) return true;
  switch (cohort.policy) {
    case 'Sync':
      return rank.steps >= 1;
    case 'Cadence':
      if (cohort.calibrated && cohort.anchorWallMs > 0) {
        return rank.elapsedMs >= cohort.anchorWallMs * (1 - WALL_TOLERANCE);
      }
      return rank.steps >= (rank.count ?? 1);
    case 'Async':
      return rank.steps >= (rank.count ?? 1);
  }
}

/** Why a CPU rank must pause until the next reduce. */
export type ThrottleReason = 'overshoot' | 'batch-diff';

/** Inputs of {@link throttleReason}. */
export interface ThrottleInputs {
  readonly policy: ApplyPolicy;
  readonly backend: AverageBackend;
  readonly rank: number;
  readonly live: readonly boolean[];
  readonly steps: readonly number[];
  readonly counts: readonly number[];
  /** Async overshoot allowance (batches beyond the count). */
  readonly overshoot: number;
  readonly maxBatchDiff: number | undefined;
}

/**
 * Whether `rank` must be throttled (wire `Throttle`: block until the next SyncNow / Update /
 * Shutdown). CPU backend only (an NCCL rank is paced by its collective): under Async a rank
 * that reached `count + overshoot`; with `maxBatchDiff` a rank leading the slowest live rank by
 * more than it.
 */
export function throttleReason(inputs: ThrottleInputs): ThrottleReason | undefined {
  return throttleReasonOf({
    policy: inputs.policy,
    backend: inputs.backend,
    steps: inputs.steps[inputs.rank] ?? 0,
    count: inputs.counts[inputs.rank] ?? 0,
    overshoot: inputs.overshoot,
    maxBatchDiff: inputs.maxBatchDiff,
    slowestSteps: () => {
      let slowest = Number.POSITIVE_INFINITY;
      inputs.live.forEach((alive, rank) => {
        if (alive) slowest = Math.min(slowest, inputs.steps[rank] ?? 0);
      });
      return slowest;
    },
  });
}

/**
 * {@link throttleReason} for one rank from its own figures; the cohort's slowest step count is
 * asked for only when `maxBatchDiff` is set (the one case that needs every rank).
 */
export function throttleReasonOf(inputs: {
  readonly policy: ApplyPolicy;
  readonly backend: AverageBackend;
  /** The rank's steps in its open window. */
  readonly steps: number;
  /** The rank's ElChe batch count. */
  readonly count: number;
  readonly overshoot: number;
  readonly maxBatchDiff: number | undefined;
  /** The fewest steps of a live rank (infinite for none). */
  readonly slowestSteps: () => number;
}): ThrottleReason | undefined {
  if (inputs.backend !== 'Cpu') return undefined;
  const { steps } = inputs;
  if (inputs.policy === 'Async' && steps >= inputs.count + inputs.overshoot) return 'overshoot';
  if (inputs.maxBatchDiff !== undefined) {
    const slowest = inputs.slowestSteps();
    if (Number.isFinite(slowest) && steps - slowest > inputs.maxBatchDiff) return 'batch-diff';
  }
  return undefined;
}
