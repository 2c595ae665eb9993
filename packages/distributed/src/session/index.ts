// session: the rank's averaging session and the launcher-side averaging driver.
export { AveragingHost, type AveragingHostOptions } from './averaging-host.js';
export {
  CoordinatorHost,
  type CoordinatorHostObserver,
  type CoordinatorHostOptions,
  type RanksHostOptions,
} from './coordinator-host.js';
export type { HostRound } from './host-round.js';
export {
  coordinatorOptionsFor,
  encodeRunSettings,
  MAX_RUN_SETTINGS_BYTES,
  type ModelSignature,
  RUN_SETTINGS_CAPABILITY,
  type RunSettings,
  RunSettingsGate,
  runSettingsOf,
  settingsMismatch,
} from './run-settings.js';
export {
  type AveragedEvent,
  collectiveBackendFor,
  DistributedSession,
  isCollectiveMode,
  PROCESS_GROUP_PORT_ENV,
  type SessionOptions,
  type StepReport,
} from './session.js';
