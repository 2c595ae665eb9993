// session: the rank's end of a distributed run (control reports, averaging, re-formation).

export { freePortOn } from './rendezvous.js';
export {
  type AveragedEvent,
  collectiveBackendFor,
  DistributedSession,
  isCollectiveMode,
  PROCESS_GROUP_PORT_ENV,
  type SessionOptions,
  type StepReport,
} from './session.js';
