/** One rank's accumulators for one reduce window. */
export interface RankWindow {
  /** Steps (batches) completed this window. */
  steps: number;
  /** Σ per-batch compute ms (compute-only scale). */
  wallMs: number;
  /** Σ (compute + data) ms over batches 2..n (the marginal delivered scale). */
  deliveredMs: number;
  /** Batches in `deliveredMs`. */
  deliveredBatches: number;
  /** Delivered ms of the window's first batch (the fill batch, excluded from the rate). */
  firstBatchMs: number;
  /** Σ (compute + data) ms over every batch: the rank's wall spent in the window. */
  elapsedMs: number;
  /** Σ finite per-batch losses and their count. */
  lossSum: number;
  lossCount: number;
}

/** A fresh, empty window. */
export function emptyWindow(): RankWindow {
  return {
    steps: 0,
    wallMs: 0,
    deliveredMs: 0,
    deliveredBatches: 0,
    firstBatchMs: 0,
    elapsedMs: 0,
    lossSum: 0,
    lossCount: 0,
  };
}

/** The window has a usable delivered sample (≥ 1 marginal batch with positive ms). */
export function hasDeliveredSample(window: RankWindow): boolean {
  return window.deliveredBatches > 0 && window.deliveredMs > 0;
}

/** The first batch's excess over the marginal rate: the amortisable per-window fill (0 without a sample). */
export function fillExcessMs(window: RankWindow): number {
  if (!hasDeliveredSample(window)) return 0;
  return Math.max(0, window.firstBatchMs - window.deliveredMs / window.deliveredBatches);
}

/** Mean loss this window, or undefined when nothing was reported (absent, not zero). */
export function meanLoss(window: RankWindow): number | undefined {
  return window.lossCount > 0 ? window.lossSum / window.lossCount : undefined;
}

function merge(into: RankWindow, from: RankWindow): void {
  if (into.steps === 0) into.firstBatchMs = from.firstBatchMs;
  else if (from.steps > 0) {
    // `from`'s first batch becomes a marginal batch of the merged window.
    into.deliveredMs += from.firstBatchMs;
    into.deliveredBatches += 1;
  }
  into.steps += from.steps;
  into.wallMs += from.wallMs;
  into.deliveredMs += from.deliveredMs;
  into.deliveredBatches += from.deliveredBatches;
  into.elapsedMs += from.elapsedMs;
  into.lossSum += from.lossSum;
  into.lossCount += from.lossCount;
}

/**
 * The coordinator's per-rank view of each reduce window (floDl `WindowLedger`): steps, compute
 * wall, marginal delivered cost (the first batch goes to the fill slot), callback exclusions,
 * mean loss. Advisory scheduling state: it decides when windows fire and how work is split; the
 * reduce's true divisor is the mass each contribution carries.
 *
 * A rank's window closes when it joins the reduce (its `SyncAck` or `SnapshotReady`): what it
 * reports afterwards belongs to the next window, even while peers are still joining.
 */
export class WindowLedger {
  #live: RankWindow[];
  #closed: (RankWindow | undefined)[];
  #callbackCredit: number[];

  constructor(worldSize: number) {
    this.#live = Array.from({ length: worldSize }, emptyWindow);
    this.#closed = new Array<RankWindow | undefined>(worldSize).fill(undefined);
    this.#callbackCredit = new Array<number>(worldSize).fill(0);
  }

  /** Records one batch: step, compute wall, and the delivered cost by the marginal rule. */
  recordBatch(rank: number, batchMs: number, dataMs: number, loss?: number): void {
    const window = this.#live[rank];
    if (!window) return;
    const compute = finiteOrZero(batchMs);
    // Callback time sits in the wait before the step after it: take it out here.
    const reportedWait = finiteOrZero(dataMs);
    const excluded = Math.min(reportedWait, this.#callbackCredit[rank] ?? 0);
    this.#callbackCredit[rank] = (this.#callbackCredit[rank] ?? 0) - excluded;
    const delivered = compute + reportedWait - excluded;
    window.steps += 1;
    window.wallMs += compute;
    window.elapsedMs += delivered;
    if (window.steps > 1) {
      window.deliveredMs += delivered;
      window.deliveredBatches += 1;
    } else {
      window.firstBatchMs = delivered;
    }
    if (loss !== undefined && Number.isFinite(loss)) {
      window.lossSum += loss;
      window.lossCount += 1;
    }
  }

  /**
   * Excludes a callback's wall time (eval, checkpoint, epoch callback) from `rank`'s timing, so
   * ElChe never reads callback cost as slowness. A rank's `dataMs` is the wait before each step,
   * so the callback's time arrives in the wait of the step after it, usually after its result:
   * the elapsed time becomes a credit taken off the following batches' wait. Compute-only wall
   * never contains it.
   */
  absorbCallbackCost(rank: number, elapsedMs: number): void {
    if (rank < 0 || rank >= this.#callbackCredit.length || !(elapsedMs > 0) || !Number.isFinite(elapsedMs))
      return;
    this.#callbackCredit[rank] = (this.#callbackCredit[rank] ?? 0) + elapsedMs;
  }

  /** Callback time (ms) still to be taken off `rank`'s next waits. */
  callbackCredit(rank: number): number {
    return this.#callbackCredit[rank] ?? 0;
  }

  /** `rank`'s open window (read-only view). */
  live(rank: number): Readonly<RankWindow> {
    return this.#live[rank] ?? emptyWindow();
  }

  /** Steps in `rank`'s open window. */
  steps(rank: number): number {
    return this.#live[rank]?.steps ?? 0;
  }

  /** `rank`'s elapsed (compute + data) ms in its open window. */
  elapsed(rank: number): number {
    return this.#live[rank]?.elapsedMs ?? 0;
  }

  /** Per-rank steps of the open windows. */
  stepsAll(): number[] {
    return this.#live.map((window) => window.steps);
  }

  /** Per-rank elapsed (compute + data) ms of the open windows. */
  elapsedAll(): number[] {
    return this.#live.map((window) => window.elapsedMs);
  }

  /** Closes `rank`'s window for the reduce in flight; later batches open its next window. */
  close(rank: number): void {
    if (this.#closed[rank] !== undefined || !this.#live[rank]) return;
    this.#closed[rank] = this.#live[rank];
    this.#live[rank] = emptyWindow();
  }

  /** Whether `rank`'s window is closed for the reduce in flight. */
  isClosed(rank: number): boolean {
    return this.#closed[rank] !== undefined;
  }

  /** Abandons the reduce for `rank`: its closed window merges back in front of its open one. */
  reopen(rank: number): void {
    const closed = this.#closed[rank];
    if (!closed) return;
    const open = this.#live[rank] ?? emptyWindow();
    merge(closed, open);
    this.#live[rank] = closed;
    this.#closed[rank] = undefined;
  }

  /** Ends the reduce: returns every rank's closed window (empty where not closed) and clears them. */
  takeRound(): RankWindow[] {
    const round = this.#closed.map((window) => window ?? emptyWindow());
    this.#closed.fill(undefined);
    return round;
  }

  /** Empties `rank`'s windows (membership shrink). */
  clear(rank: number): void {
    if (!this.#live[rank]) return;
    this.#live[rank] = emptyWindow();
    this.#closed[rank] = undefined;
    this.#callbackCredit[rank] = 0;
  }
}

function finiteOrZero(value: number): number {
  return Number.isFinite(value) && value > 0 ? value : 0;
}
