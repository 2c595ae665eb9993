// host: the launcher-side drivers of a run: the coordinator host (the real ClusterCoordinator
// over the control server, and the CPU reduce root of the host modes), the fixed-cadence
// averaging host, and the run settings ranks announce and the launcher forms the run from.
export { AveragingHost, type AveragingHostOptions } from './averaging-host.js';
export {
  CoordinatorHost,
  type CoordinatorHostObserver,
  type CoordinatorHostOptions,
  type RanksHostOptions,
} from './coordinator-host.js';
export { HOST_HISTORY_LIMIT, type HostRound } from './host-round.js';
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
