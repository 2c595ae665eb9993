// session: the rank's averaging session and the launcher-side averaging driver.
export { CoordinatorHost, type CoordinatorHostOptions } from './coordinator-driver.js';
export { AveragingHost, type AveragingHostOptions, type HostRound } from './coordinator-host.js';
export {
  type AveragedEvent,
  DistributedSession,
  isCollectiveMode,
  PROCESS_GROUP_PORT_ENV,
  type SessionOptions,
  type StepReport,
} from './session.js';
