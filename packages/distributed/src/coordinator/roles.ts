/**
 * Who runs the single-rank callbacks (floDl `EpochCallbackPolicy`): `'Fastest'` (default since
 * 0.6: on a heterogeneous rig the fastest device idles most at the barrier, so eval and saves
 * are free there) or a fixed `{ rank }`.
 */
export type EpochCallbackPolicy = 'Fastest' | { readonly rank: number };

/** EWMA weight of a new callback-cost sample (floDl's α = 0.3). */
export const CALLBACK_COST_ALPHA = 0.3;

/**
 * The live rank with the lowest smoothed ms/batch; before any reading, the lowest live rank
 * (floDl `resolve_fastest_role`). Undefined when no rank is live.
 */
export function resolveFastest(
  live: readonly boolean[],
  smoothedMs: (rank: number) => number | undefined,
): number | undefined {
  let best: number | undefined;
  let bestMs = Number.POSITIVE_INFINITY;
  live.forEach((alive, rank) => {
    if (!alive) return;
    const ms = smoothedMs(rank);
    if (ms !== undefined && ms < bestMs) {
      best = rank;
      bestMs = ms;
    }
  });
  if (best !== undefined) return best;
  const first = live.indexOf(true);
  return first < 0 ? undefined : first;
}

/** An exponentially weighted mean of callback wall times (ms). */
export class CallbackCost {
  #value: number | undefined;

  /** Blends in one sample: `α · sample + (1 − α) · previous` (the first sample is taken raw). */
  add(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    this.#value =
      this.#value === undefined ? ms : CALLBACK_COST_ALPHA * ms + (1 - CALLBACK_COST_ALPHA) * this.#value;
  }

  get value(): number | undefined {
    return this.#value;
  }
}

/**
 * The three callback roles (checkpoint, eval, epoch callback) and their election.
 *
 * `Fastest` is sticky: resolved at start (lowest live rank), again at the first calibration (the
 * first moment "fastest" means anything) and when a role's rank dies, never on drift, because
 * callbacks may keep per-rank state. `{ rank }` never moves. A failed checkpoint is retried on
 * the next untried live rank, then given up.
 */
export class CallbackRoles {
  readonly policy: EpochCallbackPolicy;
  checkpointRole: number | undefined;
  evalRole: number | undefined;
  epochCallbackRole: number | undefined;
  readonly evalCost = new CallbackCost();
  readonly checkpointCost = new CallbackCost();
  readonly epochCallbackCost = new CallbackCost();
  #epochRoleDirty = true;
  #checkpointTried = new Map<number, Set<number>>();

  constructor(policy: EpochCallbackPolicy, live: readonly boolean[]) {
    this.policy = policy;
    this.elect(live, () => undefined);
  }

  /** Re-resolves all three roles (start, first calibration). */
  elect(live: readonly boolean[], smoothedMs: (rank: number) => number | undefined): void {
    const previous = this.epochCallbackRole;
    const role = this.policy === 'Fastest' ? resolveFastest(live, smoothedMs) : this.policy.rank;
    this.checkpointRole = role;
    this.evalRole = role;
    this.epochCallbackRole = role;
    if (role !== previous) this.#epochRoleDirty = true;
  }

  /** Re-resolves the roles held by a dead rank (Fastest only). */
  onDeath(rank: number, live: readonly boolean[], smoothedMs: (rank: number) => number | undefined): void {
    if (this.policy !== 'Fastest') return;
    const replacement = resolveFastest(live, smoothedMs);
    if (this.checkpointRole === rank) this.checkpointRole = replacement;
    if (this.evalRole === rank) this.evalRole = replacement;
    if (this.epochCallbackRole === rank) {
      this.epochCallbackRole = replacement;
      this.#epochRoleDirty = true;
    }
  }

  /** The epoch-callback role when it changed since last taken (to send `SetEpochCallbackRole`). */
  takeDirtyEpochRole(): number | undefined {
    if (!this.#epochRoleDirty || this.epochCallbackRole === undefined) return undefined;
    this.#epochRoleDirty = false;
    return this.epochCallbackRole;
  }

  /** A checkpoint succeeded on `rank`: it becomes the checkpoint role; the version's retries end. */
  checkpointSucceeded(version: number, rank: number, elapsedMs: number): void {
    this.checkpointCost.add(elapsedMs);
    this.#checkpointTried.delete(version);
    this.checkpointRole = rank;
  }

  /** A checkpoint failed on `rank`: the next untried live rank to retry on, or undefined (give up). */
  checkpointFailed(
    version: number,
    rank: number,
    live: readonly boolean[],
    elapsedMs: number,
  ): number | undefined {
    this.checkpointCost.add(elapsedMs);
    const tried = this.#checkpointTried.get(version) ?? new Set<number>();
    tried.add(rank);
    this.#checkpointTried.set(version, tried);
    const next = live.findIndex((alive, candidate) => alive && candidate !== rank && !tried.has(candidate));
    if (next < 0) {
      this.#checkpointTried.delete(version);
      return undefined;
    }
    this.checkpointRole = next;
    return next;
  }
}
