/**
 * Divergence measured at one reduce (floDl `DivergenceReport`): per rank
 * `‖params_before − params_after‖ / ‖params_after‖`, with optional norms from which the cosine
 * and magnitude shift follow for free.
 */
export interface DivergenceReport {
  readonly deltas: readonly number[];
  readonly preNorms?: readonly number[];
  readonly postNorm?: number;
}

/** The worst replica drift of a report (0 when empty). */
export function maxRelativeDelta(report: DivergenceReport): number {
  let worst = 0;
  for (const delta of report.deltas) if (Number.isFinite(delta) && delta > worst) worst = delta;
  return worst;
}

/**
 * Per-rank cosine between pre- and post-sync parameters,
 * `(‖pre‖² + ‖post‖² − (δ·‖post‖)²) / (2‖pre‖‖post‖)`; undefined without norms.
 */
export function cosineSimilarities(report: DivergenceReport): number[] | undefined {
  const { preNorms, postNorm } = report;
  if (!preNorms || postNorm === undefined || postNorm < 1e-10) return undefined;
  return report.deltas.map((delta, rank) => {
    const pre = preNorms[rank] ?? 0;
    if (pre < 1e-10) return 0;
    const cosine = (pre * pre + postNorm * postNorm - (delta * postNorm) ** 2) / (2 * pre * postNorm);
    return Math.min(1, Math.max(-1, cosine));
  });
}

/**
 * A guard's recommendation for the anchor (floDl `ConvergenceAction`): `Stable` (growth may
 * land), `SuppressGrowth` (hold), `NudgeDown` (shrink the anchor by `factor`).
 */
export type ConvergenceAction =
  | { readonly kind: 'Stable' }
  | { readonly kind: 'SuppressGrowth' }
  | { readonly kind: 'NudgeDown'; readonly factor: number };

/**
 * A pluggable convergence guard (floDl `ConvergenceGuard`): observes each reduce's divergence
 * with the cadence interval (`kUsed` = Σ steps, `kMax` = max per-rank steps) and recommends.
 */
export interface ConvergenceGuard {
  report(report: DivergenceReport, kUsed: number, kMax: number): ConvergenceAction;
  /** Checkpointable history (the level guard's ring), if any. */
  history(): readonly number[] | undefined;
  reset(): void;
}

/** The always-Stable guard (floDl `NoGuard`): the unconditioned baseline. */
export class NoGuard implements ConvergenceGuard {
  report(): ConvergenceAction {
    return { kind: 'Stable' };
  }
  history(): undefined {
    return undefined;
  }
  reset(): void {}
}

/** Values the level guard keeps. */
export const GUARD_HISTORY_CAPACITY = 5;
/** Consecutive rising values (the last one above threshold) that trip the level guard. */
export const RISING_VALUES = 3;

/**
 * The production guard (floDl `TrendGuard`, later `LevelGuard`): a ring of the last 5
 * max-deltas; when the last {@link RISING_VALUES} rise strictly and the latest exceeds the
 * threshold (0.05; 0.3 under EASGD), growth is suppressed. Sustained suppression becomes a
 * nudge through the meta-controller.
 *
 * @example
 * ```ts
 * const guard = new LevelGuard(0.05);
 * guard.report({ deltas: [0.06] }, 8, 4); // Stable
 * guard.report({ deltas: [0.07] }, 8, 4); // Stable
 * guard.report({ deltas: [0.08] }, 8, 4); // SuppressGrowth
 * ```
 */
export class LevelGuard implements ConvergenceGuard {
  readonly threshold: number;
  #history: number[] = [];

  constructor(threshold = 0.05, history: readonly number[] = []) {
    this.threshold = threshold;
    this.#history = history.slice(-GUARD_HISTORY_CAPACITY);
  }

  report(report: DivergenceReport): ConvergenceAction {
    if (this.#history.length >= GUARD_HISTORY_CAPACITY) this.#history.shift();
    this.#history.push(maxRelativeDelta(report));
    const length = this.#history.length;
    if (length < RISING_VALUES) return { kind: 'Stable' };
    const tail = this.#history.slice(-RISING_VALUES);
    const rising = tail.every((value, index) => index === 0 || value > (tail[index - 1] ?? 0));
    return rising && (tail[RISING_VALUES - 1] ?? 0) > this.threshold
      ? { kind: 'SuppressGrowth' }
      : { kind: 'Stable' };
  }

  history(): readonly number[] {
    return [...this.#history];
  }

  reset(): void {
    this.#history = [];
  }
}
