// progress: the terminal display of a training run (a bar redrawn in place on a terminal, plain
// lines every few seconds elsewhere), its text formatter and its ETA arithmetic.
export {
  type EpochView,
  type EvalView,
  formatClusterLine,
  formatDuration,
  formatEpochLine,
  formatEvalLine,
  formatRate,
  formatStepLine,
  formatValue,
  type RankView,
  type StepView,
} from './format.js';
export {
  createProgress,
  type Progress,
  type ProgressOptions,
  type ProgressSetting,
  type ProgressStream,
  stdoutIsUsers,
} from './progress.js';
export { type ProgressEpoch, type ProgressRunInfo, type ProgressStep, ProgressTracker } from './tracker.js';
