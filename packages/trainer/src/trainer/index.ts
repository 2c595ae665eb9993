// The managed Trainer.
export { TrainerBuilder } from './builder.js';
export { type TrainedRun, TrainerHandle } from './handle.js';
export {
  defaultDevices,
  type ElCheKnobs,
  type EpochCallbackPolicyOption,
  resolveTrainerOptions,
  TRAINER_OPTION_KEYS,
  type TrainerOptions,
} from './options.js';
export { runSettingsFor, TRACE_DIR_ENV, trainedStatePath, writeTrainedState } from './rank-entry.js';
export { detectRole, firstSlurmHost, type ProcessRole, type RankRole, TRAINER_DEVICES_ENV } from './role.js';
export type { OptimizerFactory } from './spec.js';
export { Trainer } from './trainer.js';
