// @flodl/tensor-native: libtorch tensors for Node.js.
import './ops-math.js';
import './ops-reduce.js';
import './ops-shape.js';
import './ops-linalg.js';
import './ops-inplace.js';

export { Tensor, type NestedArray, type ToOptions } from './tensor.js';
export type { ValuesIndices, ReduceOptions } from './ops-reduce.js';
export {
  arange,
  empty,
  emptyLike,
  eye,
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
  zeros,
  zerosLike,
  type TensorData,
  type TensorOptions,
} from './creation.js';
export { add, cat, div, einsum, matmul, maximum, minimum, mul, pow, stack, sub, where } from './functions.js';
export { linalg } from './ops-linalg.js';
export { beginScope, endScope, keep, scopeDepth, tidy, type ScopeHandle } from './scope.js';
export { FlodlError, describeValue, invalidArgument, type FlodlErrorCode, type FlodlErrorOptions } from './errors.js';
export { DTYPES, elementSize, isFloatingPoint, parseDType, type DType } from './dtype.js';
export { deviceCode, deviceName, normalizeDevice, type Device } from './device.js';
export { cuda, type CudaMemoryStats } from './cuda.js';
export { buildInfo, getNumThreads, liveTensorCount, manualSeed, setNumThreads } from './runtime.js';
export { broadcastShapes } from './internal/diagnose.js';
