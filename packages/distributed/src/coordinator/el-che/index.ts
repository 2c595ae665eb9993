export { COHORT_BAND, DOMINANCE_MARGIN, electAnchor, slowCohort } from './cohort.js';
export {
  type AnchorVerdict,
  BATCH_COUNTS_HISTORY,
  DEAD_ZONE,
  ElChe,
  type ElCheOptions,
  type ElCheState,
  MAX_SPEED_RATIO,
} from './el-che.js';
export {
  MATURE_AFTER_CALIBRATIONS,
  nextPhase,
  type Phase,
  phaseAtLeast,
  STABLE_AFTER_CALIBRATIONS,
} from './phase.js';
export { TRUST_WINDOW_CAPACITY, TrustWindow } from './trust-window.js';
export {
  type AnchorProposal,
  GROWTH_REARM_STABLE,
  GROWTH_STEP_CAP,
  proposeGrowth,
  proposeShrink,
  SHRINK_BAND,
  SHRINK_PATIENCE,
  WARMUP_GROWTH_MARGIN,
  windowOverhead,
} from './window-pressure.js';
export { selectFeed, type TimingFeed, type WindowReport } from './window-report.js';
