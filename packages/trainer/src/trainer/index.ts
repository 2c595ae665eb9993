// The managed Trainer.
export { startRun, TrainerBuilder } from './builder.js';
export {
  type EpochEndOptions,
  type EpochEndSinks,
  type EpochEvalOptions,
  endSingleEpoch,
  evaluateAfterEpoch,
} from './epoch-end.js';
export { prepareExternalRank } from './external-rank.js';
export { type TrainedRun, TrainerHandle } from './handle.js';
export { launchProgress } from './launch-progress.js';
export {
  type DashboardSetting,
  defaultDevices,
  type ElCheKnobs,
  type EpochCallbackPolicyOption,
  resolveTrainerOptions,
  TRAINER_OPTION_KEYS,
  type TrainerOptions,
} from './options.js';
export {
  type ClusterRank,
  type ClusterRankObserver,
  joinClusterRank,
  runSettingsFor,
  TRACE_DIR_ENV,
  trainedStatePath,
  writeTrainedState,
} from './rank-entry.js';
export { detectRole, firstSlurmHost, type ProcessRole, type RankRole, TRAINER_DEVICES_ENV } from './role.js';
export {
  cohortProgress,
  type MonitoredRun,
  type MonitorOptions,
  openRunMonitor,
  type RunMonitor,
} from './run-monitor.js';
export {
  ignoreInterruptsInRank,
  type RunSignalHooks,
  RunSignals,
  type StopSignal,
  signalExitCode,
  stopLine,
} from './signals.js';
export {
  createSingleRuntime,
  createWatchedSingleRuntime,
  saveFinal,
  watchSingleRunSignals,
} from './single-device.js';
export type { OptimizerFactory, RunSpec } from './spec.js';
export { Trainer } from './trainer.js';
