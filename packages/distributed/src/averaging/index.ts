// averaging: the mass law over tensors (host root and collective paths) and EASGD.

export { type CollectiveResult, collectiveAverage, releaseCollectiveBuffers } from './collective.js';
export {
  bufferWeight,
  ConsensusBuffers,
  checkAlpha,
  easgdBlendHost,
  HOST_AVERAGE_DTYPES,
  type HostTensor,
  MassAccumulator,
  prescaleHost,
  readFloats,
  windowMass,
  writeFloats,
} from './host.js';
export {
  type ApplyConsensusOptions,
  type AveragedState,
  applyConsensus,
  averagedState,
  BUFFER_PREFIX,
  hostDtype,
  PARAM_PREFIX,
  releaseSnapshotBuffers,
  snapshotContribution,
} from './model.js';
