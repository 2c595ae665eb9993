import type { Phase } from './el-che/phase.js';
import type { ConvergenceAction } from './guard.js';

/** Single-cycle `ΔLR / LR` drop that counts as an LR cliff (MultiStepLR's 5×/10× drops). */
export const SHARP_DROP_THRESHOLD = 0.3;
/** Nudge factor of the LR-cliff watcher (halve the anchor). */
export const LR_CLIFF_FACTOR = 0.5;
/** Clamp of every effective nudge factor. */
export const EFFECTIVE_FACTOR_RANGE = [0.1, 0.95] as const;

/** Trailing non-Stable verdicts needed per phase (more evidence in low-trust phases). */
export function sustainFor(phase: Phase): number {
  return phase === 'Mature' ? 2 : phase === 'Stable' ? 3 : 5;
}

/** Base nudge factor of the convergence watcher per phase (gentler as trust grows). */
export function baseFactorFor(phase: Phase): number {
  return phase === 'Mature' ? 0.7 : phase === 'Stable' ? 0.5 : 0.3;
}

/**
 * The LR-aware meta-controller above ElChe (floDl `LrEventMeta`): two watchers, one actuator.
 *
 * - LR cliff: a single-cycle LR drop > 30% nudges the anchor down before divergence shows.
 * - Convergence: the last K guard verdicts all non-Stable (K per phase) nudge it down.
 *
 * The factor is dampened or amplified by the anchor trend `(current − mean) / mean` so the
 * controller does not pile on while ElChe is already correcting; both firing compound.
 * Silent in Probe.
 */
export class MetaController {
  #lrs: number[] = [];
  #anchors: number[] = [];
  #verdicts: ConvergenceAction['kind'][] = [];

  /** Records one cycle and returns the nudge factor to apply, or undefined. */
  observe(
    lr: number | undefined,
    anchor: number,
    verdict: ConvergenceAction,
    phase: Phase,
  ): number | undefined {
    if (lr !== undefined && Number.isFinite(lr)) pushCapped(this.#lrs, lr, 3);
    pushCapped(this.#anchors, anchor, 5);
    pushCapped(this.#verdicts, verdict.kind, 5);
    if (phase === 'Probe') return undefined;
    const trend = this.anchorTrend();
    const cliff = this.#sharpDrop() ? effective(LR_CLIFF_FACTOR, trend) : undefined;
    const sustain = sustainFor(phase);
    const sustained =
      this.#verdicts.length >= sustain && this.#verdicts.slice(-sustain).every((kind) => kind !== 'Stable');
    const convergence = sustained ? effective(baseFactorFor(phase), trend) : undefined;
    if (cliff !== undefined && convergence !== undefined) return clampFactor(cliff * convergence);
    return cliff ?? convergence;
  }

  /** `(current − mean) / mean` over the recent anchors; 0 with fewer than two. */
  anchorTrend(): number {
    if (this.#anchors.length < 2) return 0;
    const mean = this.#anchors.reduce((sum, anchor) => sum + anchor, 0) / this.#anchors.length;
    return mean > 0 ? ((this.#anchors[this.#anchors.length - 1] ?? mean) - mean) / mean : 0;
  }

  #sharpDrop(): boolean {
    if (this.#lrs.length < 2) return false;
    const now = this.#lrs[this.#lrs.length - 1] ?? 0;
    const previous = this.#lrs[this.#lrs.length - 2] ?? 0;
    return previous > 0 && now < previous && (previous - now) / previous > SHARP_DROP_THRESHOLD;
  }
}

function effective(base: number, trend: number): number {
  return clampFactor(base - (1 - base) * trend);
}

function clampFactor(factor: number): number {
  return Math.min(EFFECTIVE_FACTOR_RANGE[1], Math.max(EFFECTIVE_FACTOR_RANGE[0], factor));
}

function pushCapped<T>(buffer: T[], value: T, capacity: number): void {
  while (buffer.length >= capacity) buffer.shift();
  buffer.push(value);
}
