/**
 * When each rank last made progress, and which ranks are overdue. Heartbeats come from a
 * rank's worker thread, so they prove the process lives, not that it trains: a rank whose
 * main thread is stuck keeps heartbeating while every survivor waits on its work. Progress
 * is what the rank does (a batch, a chunk's metrics, a snapshot, an ack, a callback result)
 * and what it was given to do (a chunk, a round): a rank owing work for far longer than its
 * own smoothed step time is overdue. Pure bookkeeping: the coordinator feeds it the clock.
 */
export class StallWatch {
  readonly #lastProgress: number[];
  /** The allowance each suspected rank had when it was suspected. */
  readonly #suspectedAllowance = new Map<number, number>();

  /**
   * @param factor  a rank is overdue past `factor ×` its smoothed ms per batch (0: never)
   * @param floorMs and never before this long without progress
   */
  constructor(
    worldSize: number,
    readonly factor: number,
    readonly floorMs: number,
  ) {
    this.#lastProgress = new Array<number>(worldSize).fill(0);
  }

  /** Notes that `rank` was suspected with `allowanceMs` (its smoothed speed is dropped with it). */
  suspected(rank: number, allowanceMs: number): void {
    this.#suspectedAllowance.set(rank, allowanceMs);
  }

  /**
   * Whether `rank` has gone long enough without progress to be declared dead: the heartbeat
   * timeout, or its own allowance when that is longer (a rank whose steps take minutes).
   */
  deathDue(rank: number, now: number, timeoutMs: number, allowanceMs?: number): boolean {
    const allowance = allowanceMs ?? this.#suspectedAllowance.get(rank) ?? 0;
    return now - this.lastProgress(rank) > Math.max(timeoutMs, allowance);
  }

  /** False when `factor` is 0: no suspicion and no stall deaths (heartbeat staleness only). */
  get enabled(): boolean {
    return this.factor > 0;
  }

  /** `rank` did something, or was given something to do, at `now`. */
  progress(rank: number, now: number): void {
    this.#lastProgress[rank] = now;
  }

  /** When `rank` last made progress. */
  lastProgress(rank: number): number {
    return this.#lastProgress[rank] ?? 0;
  }

  /** How long `rank` may owe work without progress: `max(floorMs, factor × smoothedMs)`. */
  allowanceMs(smoothedMs: number): number {
    return Math.max(this.floorMs, this.factor * smoothedMs);
  }

  /**
   * Whether `rank`, which owes work, is overdue at `now`. A rank without a smoothed step time
   * (not measured yet: warm-up, compilation) never is, nor is any rank when `factor` is 0.
   */
  overdue(rank: number, now: number, smoothedMs: number | undefined): boolean {
    if (!this.enabled || smoothedMs === undefined || !(smoothedMs > 0)) return false;
    return now - this.lastProgress(rank) > this.allowanceMs(smoothedMs);
  }
}
