// @flodl/tensor-native: libtorch tensors for Node.js.
import './ops-math.js';
import './ops-reduce.js';
import './ops-views.js';
import './ops-indexing.js';
import './ops-sorting.js';
import './ops-linalg.js';
import './ops-inplace.js';
import './ops-autograd.js';
import './ops-print.js';
import './cuda-streams.js';

export { type AtenArgs, type AtenOp, type AtenResult, aten } from './aten.js';
export { type AutocastState, autocastState, runWithAutocast } from './autocast.js';
export { backends, type CpuBackend, type CudnnBackend, type MatmulBackend } from './backends.js';
export { shareClassIdentity } from './class-identity.js';
export {
  arange,
  copyFromBytes_,
  empty,
  emptyLike,
  eye,
  fromBytes,
  fromData,
  full,
  fullLike,
  linspace,
  ones,
  onesLike,
  rand,
  randint,
  randintLike,
  randLike,
  randn,
  randnLike,
  type TensorData,
  type TensorOptions,
  type ToBytesOptions,
  toBytes,
  zeros,
  zerosLike,
} from './creation.js';
export { type CudaMemoryStats, cuda } from './cuda.js';
export {
  type CaptureErrorMode,
  CudaGraph,
  type CudaGraphCaptureOptions,
  isCurrentStreamCapturing,
} from './cuda-graph.js';
export { CudaEvent, CudaStream, withStream } from './cuda-streams.js';
export {
  type Device,
  deviceCode,
  deviceName,
  getDefaultDevice,
  normalizeDevice,
  setDefaultDevice,
} from './device.js';
export {
  type AllReduceOptions,
  createProcessGroup,
  type DistributedBackend,
  distributed,
  ProcessGroup,
  type ProcessGroupOptions,
  type ReduceOp,
} from './distributed.js';
export { DTYPES, type DType, elementSize, isFloatingPoint, parseDType } from './dtype.js';
export {
  describeValue,
  FlodlError,
  type FlodlErrorCode,
  type FlodlErrorOptions,
  invalidArgument,
} from './errors.js';
export { add, cat, div, einsum, matmul, maximum, minimum, mul, pow, stack, sub, where } from './functions.js';
export { isInferenceModeEnabled, runInInferenceMode } from './inference-mode.js';
export { broadcastShapes } from './internal/diagnose.js';
export {
  closestName,
  didYouMean,
  type UnknownOptionDetails,
  unknownOptionError,
} from './internal/did-you-mean.js';
export {
  checkBoolean,
  checkFiniteNumber,
  checkInteger,
  checkNonNegativeInteger,
  checkNumberInRange,
  checkOneOf,
  checkOptionalFunction,
  checkOptions,
  checkOptionsObject,
  checkPositiveInteger,
  type RangeOptions,
} from './internal/validate.js';
export { autogradGrad, type BackwardOptions, isGradEnabled, setGradEnabled } from './ops-autograd.js';
export { linalg } from './ops-linalg.js';
export type { ReduceOptions, ValuesIndices } from './ops-reduce.js';
export type {
  AlongOptions,
  AmaxOptions,
  ArgmaxOptions,
  CountNonzeroOptions,
  DimOptions,
  LogsumexpOptions,
  ProdOptions,
  SpreadOptions,
  SumOptions,
  VectorNormOptions,
} from './reduce-options.js';
export {
  buildInfo,
  getNumThreads,
  getRngState,
  liveTensorCount,
  manualSeed,
  setNumThreads,
  setRngState,
} from './runtime.js';
export { beginScope, endScope, keep, type ScopeHandle, scopeDepth, tidy } from './scope.js';
export { type NestedArray, Tensor, type ToOptions } from './tensor.js';
