import { type Phase, phaseAtLeast } from './phase.js';

/** Largest multiplicative anchor growth in one cycle (floDl `GROWTH_STEP_CAP`). */
export const GROWTH_STEP_CAP = 2;
/**
 * Before Stable a growth proposal must clear the target by this factor (floDl
 * `WARMUP_GROWTH_MARGIN` = the step cap): early proposals act only where noise cannot flip them.
 */
export const WARMUP_GROWTH_MARGIN = GROWTH_STEP_CAP;
/** Consecutive Stable verdicts that re-arm growth after a SuppressGrowth / NudgeDown (floDl `GROWTH_REARM_STABLE`). */
export const GROWTH_REARM_STABLE = 5;
/** Overhead below `target × SHRINK_BAND` counts toward a shrink (the hysteresis band). */
export const SHRINK_BAND = 0.5;
/** Consecutive under-band windows needed before a shrink is proposed. */
export const SHRINK_PATIENCE = 3;

/** A staged anchor change awaiting the convergence guard's verdict. */
export type AnchorProposal =
  | { readonly kind: 'grow'; readonly anchor: number }
  | { readonly kind: 'shrink'; readonly anchor: number };

/**
 * The anchor rank's per-window fixed overhead as a fraction of its window wall:
 *
 * `overhead = (reduceMs + fillMs) / (anchor · marginalMs + reduceMs + fillMs)`
 *
 * Both terms of the numerator are fixed per window, so the fraction falls as the window grows.
 * `undefined` when there is no signal (no speed yet, or no fixed cost measured).
 */
export function windowOverhead(
  anchor: number,
  marginalMs: number,
  reduceMs: number,
  fillMs: number,
): number | undefined {
  if (!(marginalMs > 0)) return undefined;
  const fixed = Math.max(0, reduceMs) + Math.max(0, fillMs);
  if (!(fixed > 0)) return undefined;
  return fixed / (anchor * marginalMs + fixed);
}

/** Inputs of {@link proposeGrowth}. */
export interface GrowthInputs {
  readonly anchor: number;
  readonly overhead: number;
  readonly target: number;
  readonly phase: Phase;
  readonly minAnchor: number;
  readonly maxAnchor: number;
}

/**
 * Growth proposal: when the overhead exceeds the target (by {@link WARMUP_GROWTH_MARGIN}
 * before Stable), scale the anchor by `overhead / target`, at most ×{@link GROWTH_STEP_CAP},
 * rounded up and clamped to `[minAnchor, maxAnchor]`. `undefined` when no growth applies.
 */
export function proposeGrowth(inputs: GrowthInputs): number | undefined {
  const fireAt = phaseAtLeast(inputs.phase, 'Stable') ? inputs.target : inputs.target * WARMUP_GROWTH_MARGIN;
  if (!(inputs.overhead > fireAt)) return undefined;
  const scale = Math.min(inputs.overhead / inputs.target, GROWTH_STEP_CAP);
  const grown = Math.min(inputs.maxAnchor, Math.max(inputs.minAnchor, Math.ceil(inputs.anchor * scale)));
  return grown > inputs.anchor ? grown : undefined;
}

/**
 * Shrink step once the overhead has sat under `target × SHRINK_BAND` for
 * {@link SHRINK_PATIENCE} windows: scale toward the band (at most halving), at least one batch,
 * never below `minAnchor`. `undefined` when already at the floor.
 */
export function proposeShrink(
  anchor: number,
  overhead: number,
  target: number,
  minAnchor: number,
): number | undefined {
  const factor = Math.max(0.5, overhead / (target * SHRINK_BAND));
  const shrunk = Math.max(minAnchor, Math.min(anchor - 1, Math.floor(anchor * factor)));
  return shrunk < anchor ? shrunk : undefined;
}
