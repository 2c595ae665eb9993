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
  if (inputs.roundInFlight) return { fire: false, blockedBy: 'round-in-flight' };
  if (inputs.rankExited) return { fire: false, blockedBy: 'rank-exited' };
  if (inputs.reforming) return { fire: false, blockedBy: 'nccl-reforming' };
  const ranks = inputs.live.flatMap((alive, rank) => (alive ? [rank] : []));
  const stepsOf = (rank: number) => inputs.steps[rank] ?? 0;
  if (!ranks.some((rank) => stepsOf(rank) > 0)) return { fire: false, blockedBy: 'no-steps' };
  if (inputs.flush) {
    return { fire: true };
  }
  const zeroStep = ranks.some(
    (rank) => stepsOf(rank) === 0 && (inputs.backend === 'Nccl' || !inputs.starved[rank]),
  );
  if (zeroStep) return { fire: false, blockedBy: 'zero-step-rank' };
  const met = (rank: number): boolean => {
    if (inputs.starved[rank]) return true;
    switch (inputs.policy) {
      case 'Sync':
        return stepsOf(rank) >= 1;
      case 'Cadence':
        if (inputs.calibrated && inputs.anchorWallMs > 0) {
          return (inputs.elapsedMs[rank] ?? 0) >= inputs.anchorWallMs * (1 - WALL_TOLERANCE);
        }
        return stepsOf(rank) >= (inputs.counts[rank] ?? 1);
      case 'Async':
        return stepsOf(rank) >= (inputs.counts[rank] ?? 1);
    }
  };
  return ranks.every(met) ? { fire: true } : { fire: false, blockedBy: 'trigger' };
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
  if (inputs.backend !== 'Cpu') return undefined;
  const steps = inputs.steps[inputs.rank] ?? 0;
  if (inputs.policy === 'Async' && steps >= (inputs.counts[inputs.rank] ?? 0) + inputs.overshoot)
    return 'overshoot';
  if (inputs.maxBatchDiff !== undefined) {
    let slowest = Number.POSITIVE_INFINITY;
    inputs.live.forEach((alive, rank) => {
      if (alive) slowest = Math.min(slowest, inputs.steps[rank] ?? 0);
    });
    if (Number.isFinite(slowest) && steps - slowest > inputs.maxBatchDiff) return 'batch-diff';
  }
  return undefined;
}
