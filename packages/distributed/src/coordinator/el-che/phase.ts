/**
 * ElChe's lifecycle (floDl `Phase`): `Probe` (no calibration yet) → `Warmup` (first
 * calibrations; the anchor pin holds) → `Stable` (≥ 5 calibrations: anchor swaps, growth at
 * the real target, relax-up) → `Mature` (≥ 20). Monotone: a phase never goes back.
 */
export type Phase = 'Probe' | 'Warmup' | 'Stable' | 'Mature';

/** Calibrations after which Warmup becomes Stable (each rank then has a full trust window). */
export const STABLE_AFTER_CALIBRATIONS = 5;
/** Calibrations after which Stable becomes Mature. */
export const MATURE_AFTER_CALIBRATIONS = 20;

const ORDER: Readonly<Record<Phase, number>> = { Probe: 0, Warmup: 1, Stable: 2, Mature: 3 };

/** True when `phase` is `least` or later. */
export function phaseAtLeast(phase: Phase, least: Phase): boolean {
  return ORDER[phase] >= ORDER[least];
}

/** The phase after a calibration, given the calibration count including it. One step at most. */
export function nextPhase(phase: Phase, calibrations: number): Phase {
  switch (phase) {
    case 'Probe':
      return 'Warmup';
    case 'Warmup':
      return calibrations >= STABLE_AFTER_CALIBRATIONS ? 'Stable' : 'Warmup';
    case 'Stable':
      return calibrations >= MATURE_AFTER_CALIBRATIONS ? 'Mature' : 'Stable';
    case 'Mature':
      return 'Mature';
  }
}
