// launcher: starts and supervises one process per rank (`launch`, `flodl launch`), hosts the
// coordinator's ControlServer on node 0 and turns rank deaths into one ERR_RANK_FAILED error.

export {
  CLI_USAGE,
  type CliExtensions,
  cliVersion,
  describeLost,
  type LaunchCommand,
  parseLaunchArgs,
  runCli,
  USAGE,
} from './cli.js';
export type { LaunchedRun, LaunchWatch, LaunchWatcher } from './cli-dashboard.js';
export {
  type DeathRecord,
  deathRecordPath,
  type InstallDeathRecordOptions,
  installDeathRecord,
  RECORD_DIR_ENV,
  readDeathRecord,
  writeDeathRecord,
} from './death-record.js';
export { type LaunchResult, launch } from './launch.js';
export {
  LAUNCH_DEVICES,
  LAUNCH_MODES,
  type LaunchDevice,
  type LaunchMode,
  type LaunchOptions,
  type LaunchServerLimits,
  parseCoordinator,
  type ResolvedLaunchOptions,
  resolveLaunchOptions,
} from './options.js';
export {
  KILL_GRACE_ENV,
  LAUNCHER_PID_ENV,
  ORPHAN_POLL_MS,
  orphanGuardNodeArgs,
} from './orphan-guard.js';
export {
  type LineSink,
  LineSplitter,
  type LineSplitterOptions,
  prefixLines,
  rankPrefix,
} from './output.js';
export { type RankRole, rankEnvironment } from './rank-environment.js';
export { RankFailedError } from './rank-failed.js';
export {
  type LaunchRun,
  type RankExit,
  type RankExitEvent,
  RankExitFeed,
  type RankProcessInfo,
  type RankSupervisor,
  type StopRankOptions,
} from './run.js';
export { resolveTsx, scriptCommand, TSX_ENV, type TsxLocation } from './script-command.js';
