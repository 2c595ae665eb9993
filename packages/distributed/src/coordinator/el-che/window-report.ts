/**
 * One reduce window's observations, the event ElChe is fed once per averaging cycle (floDl
 * `WindowReport`). It carries both timing scales so that the choice between them, the
 * mixed-scale inversion guard, lives next to the allocation model it protects:
 *
 * - compute-only `(wallMs, steps)`: Σ per-batch compute, always coherent across ranks;
 * - delivered `(deliveredMs, deliveredBatches)`: Σ (compute + data wait) over batches 2..n of
 *   the window (the first batch is the "fill" and is excluded from the rate).
 */
export interface WindowReport {
  /** Per-rank compute-only wall (ms) this window. */
  readonly wallMs: readonly number[];
  /** Per-rank steps this window (divisor of `wallMs`). */
  readonly steps: readonly number[];
  /** Per-rank marginal delivered wall (ms): batches 2..n, compute + data. */
  readonly deliveredMs: readonly number[];
  /** Per-rank marginal delivered batch count (divisor of `deliveredMs`). */
  readonly deliveredBatches: readonly number[];
  /** Per-rank first-batch excess over the marginal rate (ms): the window-pressure signal. */
  readonly fillMs: readonly number[];
  /**
   * The caller's attestation that the delivered scale may be used: the mode rides it and every
   * live stepping rank has a delivered sample this window (all-or-none coherence gate).
   */
  readonly deliveredCoherent: boolean;
  /** Duration (ms) of the reduce that closed the window. */
  readonly syncMs: number;
}

/** The `(ms, batches)` pair ElChe schedules on, and which scale it came from. */
export interface TimingFeed {
  readonly ms: number[];
  readonly batches: number[];
  readonly scale: 'delivered' | 'compute';
}

/**
 * Scale selection. ElChe's allocation is relative, so the scale must be uniform within a
 * window: unless the delivered scale is coherent every rank feeds compute-only. When coherent,
 * a rank without a delivered sample is a non-mover and feeds its (empty) compute pair.
 */
export function selectFeed(report: WindowReport): TimingFeed {
  if (!report.deliveredCoherent) {
    return { ms: [...report.wallMs], batches: [...report.steps], scale: 'compute' };
  }
  const ms: number[] = [];
  const batches: number[] = [];
  for (let rank = 0; rank < report.wallMs.length; rank++) {
    const delivered = report.deliveredMs[rank] ?? 0;
    const deliveredBatches = report.deliveredBatches[rank] ?? 0;
    if (deliveredBatches > 0 && delivered > 0) {
      ms.push(delivered);
      batches.push(deliveredBatches);
    } else {
      ms.push(report.wallMs[rank] ?? 0);
      batches.push(report.steps[rank] ?? 0);
    }
  }
  return { ms, batches, scale: 'delivered' };
}
