// @flodl/distributed: what a user of distributed training calls, by name. Launch a run
// (`launch`, the `flodl` CLI), the rank's session and control client, the launcher-side hosts,
// death records, the errors and the configuration types. The wire protocol and the
// coordinator's internals (frames, codecs, tuning constants, the state machine) are at
// `@flodl/distributed/wire` and `@flodl/distributed/coordinator`.

export type { ElCheConfigOptions, ElCheMode, SpeedHint } from './coordinator/config.js';
export { isChunkedMode } from './coordinator/config.js';
export type { CoordinatorOptions } from './coordinator/coordinator-config.js';
export type { ElCheState } from './coordinator/el-che/el-che.js';
export type {
  DeathCause,
  MaxFailureThreshold,
  RankDeathRecord,
} from './coordinator/membership.js';
export type { CoordinatorNotice } from './coordinator/messages.js';
export type { CoordinatorResume } from './coordinator/resume.js';
export type { EpochCallbackPolicy } from './coordinator/roles.js';
export { AveragingHost, type AveragingHostOptions } from './host/averaging-host.js';
export {
  CoordinatorHost,
  type CoordinatorHostOptions,
  type RanksHostOptions,
} from './host/coordinator-host.js';
export { HOST_HISTORY_LIMIT, type HostRound } from './host/host-round.js';
export {
  coordinatorOptionsFor,
  encodeRunSettings,
  type ModelSignature,
  type RunSettings,
  RunSettingsGate,
  runSettingsOf,
  settingsMismatch,
} from './host/run-settings.js';
export { type CliExtensions, runCli } from './launcher/cli.js';
export type { LaunchedRun, LaunchWatch, LaunchWatcher } from './launcher/cli-dashboard.js';
export {
  type DeathRecord,
  deathRecordPath,
  type InstallDeathRecordOptions,
  installDeathRecord,
  RECORD_DIR_ENV,
  readDeathRecord,
  writeDeathRecord,
} from './launcher/death-record.js';
export { type LaunchResult, launch } from './launcher/launch.js';
export {
  LAUNCH_DEVICES,
  LAUNCH_MODES,
  type LaunchDevice,
  type LaunchMode,
  type LaunchOptions,
  type LaunchServerLimits,
} from './launcher/options.js';
export { RankFailedError } from './launcher/rank-failed.js';
export type {
  LaunchRun,
  RankExit,
  RankExitEvent,
  RankProcessInfo,
  StopRankOptions,
} from './launcher/run.js';
export * from './monitor/index.js';
export { RankClient, type RankClientOptions, type WaitForOptions } from './rank/client.js';
export { freePortOn } from './session/rendezvous.js';
export {
  type AveragedEvent,
  collectiveBackendFor,
  DistributedSession,
  isCollectiveMode,
  PROCESS_GROUP_PORT_ENV,
  type SessionOptions,
  type StepReport,
} from './session/session.js';
export { WireError, type WireErrorOptions, type WireRejection } from './wire/errors.js';
export {
  DEFAULT_LIVENESS_MS,
  LIVENESS_ENV,
  type LivenessTimeouts,
  livenessFromEnv,
  livenessTimeouts,
} from './wire/liveness.js';
export {
  type CoordinatorMessage,
  type EpochMetrics,
  type EpochPlan,
  INTENTS,
  type IntentKind,
  SAVE_REASONS,
  type SaveReason,
} from './wire/messages.js';
