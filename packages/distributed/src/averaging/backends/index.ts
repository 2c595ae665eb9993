// averaging/backends: how a rank takes part in an averaging round, one file per backend behind
// one interface (api.ts). The rank's session holds one backend, picked by the run's mode, and
// hands it the coordinator's averaging commands; the session keeps the step clock, the window
// and the messages that are not averaging's. An outer-optimizer backend goes beside these two.

export {
  type AveragedEvent,
  type AveragingBackend,
  type AveragingCommand,
  type AveragingContext,
  type AveragingWindow,
  isAveragingCommand,
} from './api.js';
export {
  CollectiveBackend,
  type CollectiveBackendOptions,
  collectiveBackendFor,
  joinGroup,
} from './collective.js';
export { HostBackend, type HostBackendOptions } from './host.js';
export { decodeRendezvous, encodeRendezvous, freePortOn, type Rendezvous } from './rendezvous.js';
