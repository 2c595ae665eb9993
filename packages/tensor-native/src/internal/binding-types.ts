// The raw addon surface. Only src/internal/ touches it; everything else goes through Tensor.
// A handle is a number naming a slot in the addon's per-environment tensor table.
//
// NativeOpTable lists every entry the addon registers (`FLODL_REGISTER` in native/ops-*.cc) with
// the arguments its C++ body reads (call.h's readers) and what it returns. A tensor is written
// TensorHandle there: a Handle on the raw binding (NativeBinding), a Tensor through `aten.call`
// (aten.ts). test/binding-table.test.ts holds the table to the addon: the same names as the
// loaded addon's entries and the sources' registrations, and each entry as many parameters as
// its body reads arguments.

export type Handle = number;
/** A dtype code (see codes.ts); -1 means "infer / keep". */
export type DTypeCode = number;
/** -1 for the CPU, N for cuda:N. */
export type DeviceCode = number;
export type Scalar = number | boolean;
/** An argument the addon reads as absent when it is undefined, null or missing. */
export type Opt<T> = T | null | undefined;
/** A list of integers as `Call::integers` reads it: an array, a Float64Array or one integer. */
export type Integers = readonly number[] | Float64Array | number;

declare const tensorTag: unique symbol;
/** A tensor in NativeOpTable: a Handle on the raw binding, a Tensor through `aten.call`. */
export interface TensorHandle {
  readonly [tensorTag]: 'tensor';
}

/** `T` with every TensorHandle in it (in arrays and tuples too) replaced by `By`. */
export type ReplaceTensors<T, By> = T extends TensorHandle
  ? By
  : T extends readonly unknown[]
    ? { [K in keyof T]: ReplaceTensors<T[K], By> }
    : T;

type HasTensors<T> = T extends TensorHandle
  ? true
  : T extends readonly unknown[]
    ? HasTensors<T[number]>
    : false;

// An entry with no tensor anywhere keeps its own type (generic ones stay generic).
type NativeFunction<F> = F extends (...args: infer P) => infer R
  ? true extends HasTensors<P[number] | R>
    ? (...args: ReplaceTensors<P, Handle>) => ReplaceTensors<R, Handle>
    : F
  : never;

/**
 * Every native entry the addon registers, tensors as TensorHandle. Entries marked `?` are
 * registered only by some builds (foreachAdam: libtorch 2; fusedAdam, fusedAdamW: CUDA builds of
 * libtorch 2.0 and 2.1 on).
 */
export interface NativeOpTable {
  // ---- ops-runtime.cc: lifecycle, metadata, read-out, seeding, threads, CUDA queries ----
  setErrorFactory(factory: (code: string, op: string, message: string) => Error): void;
  free(h: TensorHandle): boolean;
  freeMany(handles: readonly Handle[] | Float64Array, count?: number): number;
  retire(h: TensorHandle): boolean;
  reclaim(h: TensorHandle): boolean;
  isLive(h: TensorHandle): boolean;
  liveCount(): number;
  shape(h: TensorHandle): number[];
  strides(h: TensorHandle): number[];
  dtype(h: TensorHandle): DTypeCode;
  device(h: TensorHandle): DeviceCode;
  numel(h: TensorHandle): number;
  dim(h: TensorHandle): number;
  isContiguous(h: TensorHandle): boolean;
  isPinned(h: TensorHandle): boolean;
  sameStorage(a: TensorHandle, b: TensorHandle): boolean;
  item(h: TensorHandle): number | boolean;
  toTypedArray(h: TensorHandle): Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;
  fromTypedArray(
    data: ArrayBufferView,
    shape: Integers,
    dtype?: Opt<DTypeCode>,
    device?: Opt<DeviceCode>,
  ): TensorHandle;
  fromBytes(bytes: Uint8Array, shape: Integers, dtype: DTypeCode, device?: Opt<DeviceCode>): TensorHandle;
  copyFromBytes_(target: TensorHandle, bytes: Uint8Array, dtype: DTypeCode, alpha?: Opt<number>): void;
  toBytes(h: TensorHandle, into?: Opt<Uint8Array>, scale?: Opt<number>, dtype?: Opt<DTypeCode>): Uint8Array;
  scalarTensor(value: Scalar, dtype?: Opt<DTypeCode>): TensorHandle;
  to(
    h: TensorHandle,
    dtype: Opt<DTypeCode>,
    device: Opt<DeviceCode>,
    nonBlocking?: boolean,
    copy?: boolean,
  ): TensorHandle;
  clone(h: TensorHandle): TensorHandle;
  detach(h: TensorHandle): TensorHandle;
  contiguous(h: TensorHandle): TensorHandle;
  alias(h: TensorHandle): TensorHandle;
  pinMemory(h: TensorHandle): TensorHandle;
  manualSeed(seed: number): void;
  rngState(device: Opt<DeviceCode>): Uint8Array;
  setRngState(device: Opt<DeviceCode>, state: Uint8Array): void;
  setNumThreads(threads: number): void;
  getNumThreads(): number;
  buildInfo(): { torchVersion: string; cuda: boolean; gloo: boolean; nccl: boolean };
  backendFlag(name: string): boolean;
  setBackendFlag(name: string, value: boolean): void;
  cudaDeviceCount(): number;
  cudaSynchronize(device?: Opt<number>): void;
  /** [allocated, reserved, peakAllocated, peakReserved, active] in bytes. */
  cudaMemoryStats(device?: Opt<number>): [number, number, number, number, number];
  cudaResetPeakMemoryStats(device?: Opt<number>): void;
  cudaEmptyCache(): void;
  cudaDeviceName(device?: Opt<number>): string | null;

  // ---- ops-creation.cc: factories, `dtype` -1 or absent infers, `device` absent is the CPU ----
  zeros(shape: Integers, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  ones(shape: Integers, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  empty(shape: Integers, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  rand(shape: Integers, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  randn(shape: Integers, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  full(shape: Integers, value: Scalar, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  randint(
    low: number,
    high: number,
    shape: Integers,
    dtype?: Opt<DTypeCode>,
    device?: Opt<DeviceCode>,
  ): TensorHandle;
  arange(
    start: Scalar,
    end: Scalar,
    step: Scalar,
    dtype?: Opt<DTypeCode>,
    device?: Opt<DeviceCode>,
  ): TensorHandle;
  linspace(
    start: Scalar,
    end: Scalar,
    steps: number,
    dtype?: Opt<DTypeCode>,
    device?: Opt<DeviceCode>,
  ): TensorHandle;
  eye(n: number, m?: Opt<number>, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  zerosLike(h: TensorHandle, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  onesLike(h: TensorHandle, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  emptyLike(h: TensorHandle, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  randLike(h: TensorHandle, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  randnLike(h: TensorHandle, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  fullLike(h: TensorHandle, value: Scalar, dtype?: Opt<DTypeCode>, device?: Opt<DeviceCode>): TensorHandle;
  randintLike(
    h: TensorHandle,
    low: number,
    high: number,
    dtype?: Opt<DTypeCode>,
    device?: Opt<DeviceCode>,
  ): TensorHandle;

  // ---- ops-elementwise.cc: math, activations, comparisons, logical ops ----
  neg(x: TensorHandle): TensorHandle;
  abs(x: TensorHandle): TensorHandle;
  sign(x: TensorHandle): TensorHandle;
  exp(x: TensorHandle): TensorHandle;
  expm1(x: TensorHandle): TensorHandle;
  log(x: TensorHandle): TensorHandle;
  log1p(x: TensorHandle): TensorHandle;
  log2(x: TensorHandle): TensorHandle;
  log10(x: TensorHandle): TensorHandle;
  sqrt(x: TensorHandle): TensorHandle;
  rsqrt(x: TensorHandle): TensorHandle;
  square(x: TensorHandle): TensorHandle;
  reciprocal(x: TensorHandle): TensorHandle;
  sin(x: TensorHandle): TensorHandle;
  cos(x: TensorHandle): TensorHandle;
  tan(x: TensorHandle): TensorHandle;
  asin(x: TensorHandle): TensorHandle;
  acos(x: TensorHandle): TensorHandle;
  atan(x: TensorHandle): TensorHandle;
  sinh(x: TensorHandle): TensorHandle;
  cosh(x: TensorHandle): TensorHandle;
  tanh(x: TensorHandle): TensorHandle;
  erf(x: TensorHandle): TensorHandle;
  erfinv(x: TensorHandle): TensorHandle;
  sigmoid(x: TensorHandle): TensorHandle;
  relu(x: TensorHandle): TensorHandle;
  silu(x: TensorHandle): TensorHandle;
  floor(x: TensorHandle): TensorHandle;
  ceil(x: TensorHandle): TensorHandle;
  trunc(x: TensorHandle): TensorHandle;
  frac(x: TensorHandle): TensorHandle;
  isnan(x: TensorHandle): TensorHandle;
  isinf(x: TensorHandle): TensorHandle;
  isfinite(x: TensorHandle): TensorHandle;
  logicalNot(x: TensorHandle): TensorHandle;
  bitwiseNot(x: TensorHandle): TensorHandle;
  round(x: TensorHandle, decimals?: Opt<number>): TensorHandle;
  /** `approximate`: 'none' (absent) or 'tanh'. */
  gelu(x: TensorHandle, approximate?: Opt<string>): TensorHandle;
  add(a: TensorHandle, b: TensorHandle, alpha?: Opt<Scalar>): TensorHandle;
  sub(a: TensorHandle, b: TensorHandle, alpha?: Opt<Scalar>): TensorHandle;
  addScalar(a: TensorHandle, s: Scalar, alpha?: Opt<Scalar>): TensorHandle;
  subScalar(a: TensorHandle, s: Scalar, alpha?: Opt<Scalar>): TensorHandle;
  /** s - a */
  rsubScalar(a: TensorHandle, s: Scalar): TensorHandle;
  mul(a: TensorHandle, b: TensorHandle): TensorHandle;
  mulScalar(a: TensorHandle, s: Scalar): TensorHandle;
  div(a: TensorHandle, b: TensorHandle, roundingMode?: Opt<string>): TensorHandle;
  divScalar(a: TensorHandle, s: Scalar, roundingMode?: Opt<string>): TensorHandle;
  pow(a: TensorHandle, b: TensorHandle): TensorHandle;
  powScalar(a: TensorHandle, s: Scalar): TensorHandle;
  /** s ** b */
  powScalarBase(s: Scalar, b: TensorHandle): TensorHandle;
  remainder(a: TensorHandle, b: TensorHandle): TensorHandle;
  remainderScalar(a: TensorHandle, s: Scalar): TensorHandle;
  fmod(a: TensorHandle, b: TensorHandle): TensorHandle;
  fmodScalar(a: TensorHandle, s: Scalar): TensorHandle;
  atan2(a: TensorHandle, b: TensorHandle): TensorHandle;
  maximum(a: TensorHandle, b: TensorHandle): TensorHandle;
  minimum(a: TensorHandle, b: TensorHandle): TensorHandle;
  eq(a: TensorHandle, b: TensorHandle): TensorHandle;
  ne(a: TensorHandle, b: TensorHandle): TensorHandle;
  lt(a: TensorHandle, b: TensorHandle): TensorHandle;
  le(a: TensorHandle, b: TensorHandle): TensorHandle;
  gt(a: TensorHandle, b: TensorHandle): TensorHandle;
  ge(a: TensorHandle, b: TensorHandle): TensorHandle;
  eqScalar(a: TensorHandle, s: Scalar): TensorHandle;
  neScalar(a: TensorHandle, s: Scalar): TensorHandle;
  ltScalar(a: TensorHandle, s: Scalar): TensorHandle;
  leScalar(a: TensorHandle, s: Scalar): TensorHandle;
  gtScalar(a: TensorHandle, s: Scalar): TensorHandle;
  geScalar(a: TensorHandle, s: Scalar): TensorHandle;
  logicalAnd(a: TensorHandle, b: TensorHandle): TensorHandle;
  logicalOr(a: TensorHandle, b: TensorHandle): TensorHandle;
  logicalXor(a: TensorHandle, b: TensorHandle): TensorHandle;
  allclose(a: TensorHandle, b: TensorHandle, rtol: number, atol: number, equalNan?: boolean): boolean;
  lerp(a: TensorHandle, b: TensorHandle, weight: Scalar): TensorHandle;
  /** At least one of min and max. */
  clamp(x: TensorHandle, min: Opt<Scalar>, max?: Opt<Scalar>): TensorHandle;
  clampTensor(x: TensorHandle, min: Opt<TensorHandle>, max?: Opt<TensorHandle>): TensorHandle;
  where(condition: TensorHandle, a: TensorHandle, b: TensorHandle): TensorHandle;
  leakyRelu(x: TensorHandle, negativeSlope: Scalar): TensorHandle;
  elu(x: TensorHandle, alpha: Scalar): TensorHandle;
  softplus(x: TensorHandle, beta: Scalar, threshold: Scalar): TensorHandle;

  // ---- ops-reduction.cc ----
  sum(x: TensorHandle, dims?: Opt<Integers>, keepdim?: boolean, dtype?: Opt<DTypeCode>): TensorHandle;
  mean(x: TensorHandle, dims?: Opt<Integers>, keepdim?: boolean, dtype?: Opt<DTypeCode>): TensorHandle;
  prod(x: TensorHandle, dim?: Opt<number>, keepdim?: boolean, dtype?: Opt<DTypeCode>): TensorHandle;
  maxAll(x: TensorHandle): TensorHandle;
  minAll(x: TensorHandle): TensorHandle;
  /** [values, indices] */
  maxDim(x: TensorHandle, dim: number, keepdim?: boolean): [TensorHandle, TensorHandle];
  /** [values, indices] */
  minDim(x: TensorHandle, dim: number, keepdim?: boolean): [TensorHandle, TensorHandle];
  amax(x: TensorHandle, dims: Integers, keepdim?: boolean): TensorHandle;
  amin(x: TensorHandle, dims: Integers, keepdim?: boolean): TensorHandle;
  argmax(x: TensorHandle, dim?: Opt<number>, keepdim?: boolean): TensorHandle;
  argmin(x: TensorHandle, dim?: Opt<number>, keepdim?: boolean): TensorHandle;
  /** With a correction, `unbiased` is not read. */
  std(
    x: TensorHandle,
    dims?: Opt<Integers>,
    unbiased?: boolean,
    keepdim?: boolean,
    correction?: Opt<number>,
  ): TensorHandle;
  /** With a correction, `unbiased` is not read. */
  var(
    x: TensorHandle,
    dims?: Opt<Integers>,
    unbiased?: boolean,
    keepdim?: boolean,
    correction?: Opt<number>,
  ): TensorHandle;
  norm(
    x: TensorHandle,
    p: Scalar,
    dims?: Opt<Integers>,
    keepdim?: boolean,
    dtype?: Opt<DTypeCode>,
  ): TensorHandle;
  logsumexp(x: TensorHandle, dims: Integers, keepdim?: boolean): TensorHandle;
  softmax(x: TensorHandle, dim: number, dtype?: Opt<DTypeCode>): TensorHandle;
  logSoftmax(x: TensorHandle, dim: number, dtype?: Opt<DTypeCode>): TensorHandle;
  cumsum(x: TensorHandle, dim: number, dtype?: Opt<DTypeCode>): TensorHandle;
  cumprod(x: TensorHandle, dim: number, dtype?: Opt<DTypeCode>): TensorHandle;
  all(x: TensorHandle, dim?: Opt<number>, keepdim?: boolean): TensorHandle;
  any(x: TensorHandle, dim?: Opt<number>, keepdim?: boolean): TensorHandle;
  countNonzero(x: TensorHandle, dims?: Opt<Integers>): TensorHandle;

  // ---- ops-shape.cc: views, joining, splitting, indexing, sorting ----
  /** The sizes as numbers (`reshape(h, 8, 8)`) or as one list. */
  reshape(x: TensorHandle, ...sizes: number[] | [sizes: Integers]): TensorHandle;
  /** The sizes as numbers or as one list. */
  view(x: TensorHandle, ...sizes: number[] | [sizes: Integers]): TensorHandle;
  flatten(x: TensorHandle, startDim: number, endDim: number): TensorHandle;
  unflatten(x: TensorHandle, dim: number, sizes: Integers): TensorHandle;
  squeeze(x: TensorHandle, dim?: Opt<number>): TensorHandle;
  unsqueeze(x: TensorHandle, dim: number): TensorHandle;
  transpose(x: TensorHandle, dim0: number, dim1: number): TensorHandle;
  /** The dims as numbers or as one list. */
  permute(x: TensorHandle, ...dims: number[] | [dims: Integers]): TensorHandle;
  movedim(x: TensorHandle, source: Integers, destination: Integers): TensorHandle;
  /** The sizes as numbers or as one list. */
  expand(x: TensorHandle, ...sizes: number[] | [sizes: Integers]): TensorHandle;
  broadcastTo(x: TensorHandle, shape: Integers): TensorHandle;
  narrow(x: TensorHandle, dim: number, start: number, length: number): TensorHandle;
  slice(x: TensorHandle, dim: number, start: Opt<number>, end: Opt<number>, step: number): TensorHandle;
  select(x: TensorHandle, dim: number, index: number): TensorHandle;
  indexSelect(x: TensorHandle, dim: number, index: TensorHandle): TensorHandle;
  gather(x: TensorHandle, dim: number, index: TensorHandle): TensorHandle;
  scatter(x: TensorHandle, dim: number, index: TensorHandle, source: TensorHandle): TensorHandle;
  scatterValue(x: TensorHandle, dim: number, index: TensorHandle, value: Scalar): TensorHandle;
  scatterAdd(x: TensorHandle, dim: number, index: TensorHandle, source: TensorHandle): TensorHandle;
  scatterReduce(
    x: TensorHandle,
    dim: number,
    index: TensorHandle,
    source: TensorHandle,
    reduce: string,
    includeSelf?: boolean,
  ): TensorHandle;
  maskedFill(x: TensorHandle, mask: TensorHandle, value: Scalar): TensorHandle;
  maskedFillTensor(x: TensorHandle, mask: TensorHandle, value: TensorHandle): TensorHandle;
  maskedSelect(x: TensorHandle, mask: TensorHandle): TensorHandle;
  nonzero(x: TensorHandle): TensorHandle;
  index(x: TensorHandle, indices: readonly TensorHandle[]): TensorHandle;
  cat(tensors: readonly TensorHandle[], dim: number): TensorHandle;
  stack(tensors: readonly TensorHandle[], dim: number): TensorHandle;
  chunk(x: TensorHandle, chunks: number, dim: number): TensorHandle[];
  /** One size for every piece, or the list of sizes. */
  split(x: TensorHandle, sizes: Integers, dim: number): TensorHandle[];
  unbind(x: TensorHandle, dim: number): TensorHandle[];
  repeat(x: TensorHandle, repeats: Integers): TensorHandle;
  repeatInterleave(x: TensorHandle, repeats: number, dim?: Opt<number>): TensorHandle;
  flip(x: TensorHandle, dims: Integers): TensorHandle;
  roll(x: TensorHandle, shifts: Integers, dims: Integers): TensorHandle;
  /** [values, indices] */
  sort(x: TensorHandle, dim: number, descending?: boolean, stable?: boolean): [TensorHandle, TensorHandle];
  argsort(x: TensorHandle, dim: number, descending?: boolean, stable?: boolean): TensorHandle;
  /** [values, indices] */
  topk(
    x: TensorHandle,
    k: number,
    dim: number,
    largest?: boolean,
    sorted?: boolean,
  ): [TensorHandle, TensorHandle];
  tril(x: TensorHandle, diagonal: number): TensorHandle;
  triu(x: TensorHandle, diagonal: number): TensorHandle;
  diag(x: TensorHandle, diagonal: number): TensorHandle;
  oneHot(x: TensorHandle, numClasses: number): TensorHandle;

  // ---- ops-linalg.cc ----
  matmul(a: TensorHandle, b: TensorHandle): TensorHandle;
  mm(a: TensorHandle, b: TensorHandle): TensorHandle;
  bmm(a: TensorHandle, b: TensorHandle): TensorHandle;
  mv(a: TensorHandle, b: TensorHandle): TensorHandle;
  dot(a: TensorHandle, b: TensorHandle): TensorHandle;
  outer(a: TensorHandle, b: TensorHandle): TensorHandle;
  t(x: TensorHandle): TensorHandle;
  addmm(
    input: TensorHandle,
    mat1: TensorHandle,
    mat2: TensorHandle,
    beta: Scalar,
    alpha: Scalar,
  ): TensorHandle;
  einsum(equation: string, operands: readonly TensorHandle[]): TensorHandle;
  trace(x: TensorHandle): TensorHandle;
  solve(a: TensorHandle, b: TensorHandle): TensorHandle;
  inv(x: TensorHandle): TensorHandle;
  det(x: TensorHandle): TensorHandle;
  cholesky(x: TensorHandle, upper?: boolean): TensorHandle;
  /** [q, r]; `mode` 'reduced' when absent. */
  qr(x: TensorHandle, mode?: Opt<string>): [TensorHandle, TensorHandle];
  pinv(x: TensorHandle): TensorHandle;

  // ---- ops-inplace.cc: in-place updates, nothing returned ----
  add_(self: TensorHandle, other: TensorHandle, alpha?: Opt<Scalar>): void;
  addScalar_(self: TensorHandle, s: Scalar, alpha?: Opt<Scalar>): void;
  sub_(self: TensorHandle, other: TensorHandle, alpha?: Opt<Scalar>): void;
  subScalar_(self: TensorHandle, s: Scalar): void;
  mul_(self: TensorHandle, other: TensorHandle): void;
  mulScalar_(self: TensorHandle, s: Scalar): void;
  div_(self: TensorHandle, other: TensorHandle): void;
  divScalar_(self: TensorHandle, s: Scalar): void;
  pow_(self: TensorHandle, exponent: Scalar): void;
  addcmul_(self: TensorHandle, a: TensorHandle, b: TensorHandle, value: Scalar): void;
  addcdiv_(self: TensorHandle, a: TensorHandle, b: TensorHandle, value: Scalar): void;
  lerp_(self: TensorHandle, end: TensorHandle, weight: Scalar): void;
  copy_(self: TensorHandle, source: TensorHandle, nonBlocking?: boolean): void;
  zero_(self: TensorHandle): void;
  fill_(self: TensorHandle, value: Scalar): void;
  sqrt_(self: TensorHandle): void;
  neg_(self: TensorHandle): void;
  exp_(self: TensorHandle): void;
  relu_(self: TensorHandle): void;
  erfinv_(self: TensorHandle): void;
  tanh_(self: TensorHandle): void;
  sigmoid_(self: TensorHandle): void;
  maskedFill_(self: TensorHandle, mask: TensorHandle, value: Scalar): void;
  uniform_(self: TensorHandle, low: number, high: number): void;
  normal_(self: TensorHandle, mean: number, std: number): void;
  clamp_(self: TensorHandle, min: Opt<Scalar>, max?: Opt<Scalar>): void;

  // ---- ops-autograd.cc: requires-grad flags, gradients, backward, grad and autocast modes ----
  requiresGrad(h: TensorHandle): boolean;
  setRequiresGrad(h: TensorHandle, requiresGrad: boolean): void;
  isLeaf(h: TensorHandle): boolean;
  /** The grad_fn node's name, null for a leaf. */
  gradFn(h: TensorHandle): string | null;
  /** A new handle on the accumulated gradient, null when there is none. */
  grad(h: TensorHandle): TensorHandle | null;
  setGrad(h: TensorHandle, gradient: Opt<TensorHandle>): void;
  retainGrad(h: TensorHandle): void;
  detach_(h: TensorHandle): void;
  backward(
    h: TensorHandle,
    gradOutput?: Opt<TensorHandle>,
    retainGraph?: boolean,
    createGraph?: boolean,
    sever?: boolean,
  ): void;
  /** One gradient per input, null for an unused one (with allowUnused). */
  autogradGrad(
    outputs: readonly TensorHandle[],
    inputs: readonly TensorHandle[],
    gradOutputs?: Opt<readonly TensorHandle[]>,
    retainGraph?: Opt<boolean>,
    createGraph?: boolean,
    allowUnused?: boolean,
  ): (TensorHandle | null)[];
  variableData(h: TensorHandle): TensorHandle;
  setData(h: TensorHandle, source: TensorHandle): void;
  /** [enabled, dtype code] of the CPU's or CUDA's autocast. */
  autocastState(cuda: boolean): [boolean, DTypeCode];
  autocastEnter(cuda: boolean, enabled: boolean, dtype: DTypeCode): void;
  autocastExit(cuda: boolean, enabled: boolean, dtype: DTypeCode): void;
  isGradEnabled(): boolean;
  setGradEnabled(enabled: boolean): void;
  /** Calls `fn` with libtorch's InferenceMode guard held (`enabled`), and returns its result. */
  inferenceMode<R>(fn: () => R, enabled?: boolean): R;
  isInferenceModeEnabled(): boolean;
  isInference(h: TensorHandle): boolean;
  version(h: TensorHandle): number;

  // ---- ops-nn.cc: linear maps, convolutions, pooling, normalisation, dropout, embeddings ----
  linear(input: TensorHandle, weight: TensorHandle, bias?: Opt<TensorHandle>): TensorHandle;
  bilinear(
    input1: TensorHandle,
    input2: TensorHandle,
    weight: TensorHandle,
    bias?: Opt<TensorHandle>,
  ): TensorHandle;
  /** `padding`: integers, 'same' or 'valid'; the weight's rank picks 1d, 2d or 3d. */
  conv(
    input: TensorHandle,
    weight: TensorHandle,
    bias: Opt<TensorHandle>,
    stride: Integers,
    padding: Integers | string,
    dilation: Integers,
    groups: number,
  ): TensorHandle;
  convTranspose(
    input: TensorHandle,
    weight: TensorHandle,
    bias: Opt<TensorHandle>,
    stride: Integers,
    padding: Integers,
    outputPadding: Integers,
    groups: number,
    dilation: Integers,
  ): TensorHandle;
  /** The output, or [output, indices] with `withIndices`. */
  maxPool(
    input: TensorHandle,
    kernelSize: Integers,
    stride: Integers,
    padding: Integers,
    dilation: Integers,
    ceilMode?: boolean,
    withIndices?: boolean,
  ): TensorHandle | [TensorHandle, TensorHandle];
  avgPool(
    input: TensorHandle,
    kernelSize: Integers,
    stride: Integers,
    padding: Integers,
    ceilMode?: boolean,
    countIncludePad?: boolean,
    divisorOverride?: Opt<number>,
  ): TensorHandle;
  adaptiveAvgPool(input: TensorHandle, outputSize: Integers): TensorHandle;
  /** [output, indices] */
  adaptiveMaxPool(input: TensorHandle, outputSize: Integers): [TensorHandle, TensorHandle];
  batchNorm(
    input: TensorHandle,
    weight: Opt<TensorHandle>,
    bias: Opt<TensorHandle>,
    runningMean: Opt<TensorHandle>,
    runningVar: Opt<TensorHandle>,
    training: boolean,
    momentum: number,
    eps: number,
  ): TensorHandle;
  instanceNorm(
    input: TensorHandle,
    weight: Opt<TensorHandle>,
    bias: Opt<TensorHandle>,
    runningMean: Opt<TensorHandle>,
    runningVar: Opt<TensorHandle>,
    useInputStats: boolean,
    momentum: number,
    eps: number,
  ): TensorHandle;
  layerNorm(
    input: TensorHandle,
    normalizedShape: Integers,
    weight: Opt<TensorHandle>,
    bias: Opt<TensorHandle>,
    eps: number,
  ): TensorHandle;
  groupNorm(
    input: TensorHandle,
    numGroups: number,
    weight: Opt<TensorHandle>,
    bias: Opt<TensorHandle>,
    eps: number,
  ): TensorHandle;
  rmsNorm(
    input: TensorHandle,
    normalizedShape: Integers,
    weight: Opt<TensorHandle>,
    eps: number,
  ): TensorHandle;
  dropout(input: TensorHandle, p: number, train?: boolean): TensorHandle;
  featureDropout(input: TensorHandle, p: number, train?: boolean): TensorHandle;
  alphaDropout(input: TensorHandle, p: number, train?: boolean): TensorHandle;
  /** `paddingIndex` -1: none. */
  embedding(
    weight: TensorHandle,
    indices: TensorHandle,
    paddingIndex: number,
    scaleGradByFrequency?: boolean,
    sparse?: boolean,
  ): TensorHandle;
  embeddingRenorm_(weight: TensorHandle, indices: TensorHandle, maxNorm: number, normType: number): void;
  /** `mode`: 0 sum, 1 mean, 2 max; the bags only. */
  embeddingBag(
    weight: TensorHandle,
    indices: TensorHandle,
    offsets: TensorHandle,
    scaleGradByFrequency: boolean,
    mode: number,
    sparse: boolean,
    perSampleWeights: Opt<TensorHandle>,
    includeLastOffset?: boolean,
    paddingIndex?: Opt<number>,
  ): TensorHandle;
  selu(x: TensorHandle): TensorHandle;
  mish(x: TensorHandle): TensorHandle;
  hardswish(x: TensorHandle): TensorHandle;
  hardsigmoid(x: TensorHandle): TensorHandle;
  prelu(x: TensorHandle, weight: TensorHandle): TensorHandle;
  /** `mode`: constant, reflect, replicate or circular. */
  pad(input: TensorHandle, padding: Integers, mode: string, value?: Opt<number>): TensorHandle;
  /** Exactly one of size and scaleFactors. */
  interpolate(
    input: TensorHandle,
    mode: string,
    size: Opt<Integers>,
    scaleFactors: Opt<readonly number[]>,
    alignCorners?: boolean,
  ): TensorHandle;
  pixelShuffle(x: TensorHandle, upscaleFactor: number): TensorHandle;
  pixelUnshuffle(x: TensorHandle, downscaleFactor: number): TensorHandle;
  im2col(
    input: TensorHandle,
    kernelSize: Integers,
    dilation: Integers,
    padding: Integers,
    stride: Integers,
  ): TensorHandle;
  col2im(
    input: TensorHandle,
    outputSize: Integers,
    kernelSize: Integers,
    dilation: Integers,
    padding: Integers,
    stride: Integers,
  ): TensorHandle;

  // ---- ops-loss.cc: `reduction` is 'none', 'mean' or 'sum' ----
  mseLoss(input: TensorHandle, target: TensorHandle, reduction: string): TensorHandle;
  l1Loss(input: TensorHandle, target: TensorHandle, reduction: string): TensorHandle;
  smoothL1Loss(input: TensorHandle, target: TensorHandle, reduction: string, beta: number): TensorHandle;
  huberLoss(input: TensorHandle, target: TensorHandle, reduction: string, delta: number): TensorHandle;
  crossEntropy(
    input: TensorHandle,
    target: TensorHandle,
    weight: Opt<TensorHandle>,
    reduction: string,
    ignoreIndex: number,
    labelSmoothing: number,
  ): TensorHandle;
  nllLoss(
    input: TensorHandle,
    target: TensorHandle,
    weight: Opt<TensorHandle>,
    reduction: string,
    ignoreIndex: number,
  ): TensorHandle;
  binaryCrossEntropy(
    input: TensorHandle,
    target: TensorHandle,
    weight: Opt<TensorHandle>,
    reduction: string,
  ): TensorHandle;
  binaryCrossEntropyWithLogits(
    input: TensorHandle,
    target: TensorHandle,
    weight: Opt<TensorHandle>,
    positiveWeight: Opt<TensorHandle>,
    reduction: string,
  ): TensorHandle;
  /** `reduction` may also be 'batchmean'. */
  klDiv(input: TensorHandle, target: TensorHandle, reduction: string, logTarget?: boolean): TensorHandle;
  cosineEmbeddingLoss(
    input1: TensorHandle,
    input2: TensorHandle,
    target: TensorHandle,
    margin: number,
    reduction: string,
  ): TensorHandle;
  marginRankingLoss(
    input1: TensorHandle,
    input2: TensorHandle,
    target: TensorHandle,
    margin: number,
    reduction: string,
  ): TensorHandle;
  tripletMarginLoss(
    anchor: TensorHandle,
    positive: TensorHandle,
    negative: TensorHandle,
    margin: number,
    p: number,
    eps: number,
    swap: boolean,
    reduction: string,
  ): TensorHandle;
  /** Lengths as integer lists or integer tensors (both tensors: the tensor overload). */
  ctcLoss(
    logProbs: TensorHandle,
    targets: TensorHandle,
    inputLengths: readonly number[] | TensorHandle,
    targetLengths: readonly number[] | TensorHandle,
    blank: number,
    reduction: string,
    zeroInfinity?: boolean,
  ): TensorHandle;
  poissonNllLoss(
    input: TensorHandle,
    target: TensorHandle,
    logInput: boolean,
    full: boolean,
    eps: number,
    reduction: string,
  ): TensorHandle;

  // ---- ops-rnn.cc: fused GRU / LSTM, cells, scaled dot-product attention ----
  /** [output, hN] */
  gru(
    input: TensorHandle,
    hx: Opt<TensorHandle>,
    params: readonly TensorHandle[],
    hasBiases: boolean,
    numLayers: number,
    dropout: number,
    train: boolean,
    bidirectional: boolean,
    batchFirst: boolean,
  ): [TensorHandle, TensorHandle];
  /** `hx`: [h0, c0]; -> [output, hN, cN] */
  lstm(
    input: TensorHandle,
    hx: Opt<readonly TensorHandle[]>,
    params: readonly TensorHandle[],
    hasBiases: boolean,
    numLayers: number,
    dropout: number,
    train: boolean,
    bidirectional: boolean,
    batchFirst: boolean,
  ): [TensorHandle, TensorHandle, TensorHandle];
  /** `mode` is cuDNN's: 0 RNN_RELU, 1 RNN_TANH, 2 LSTM, 3 GRU. */
  cudnnFlattenWeights(
    params: readonly TensorHandle[],
    weightStride0: number,
    inputSize: number,
    mode: number,
    hiddenSize: number,
    projSize: number,
    numLayers: number,
    batchFirst: boolean,
    bidirectional: boolean,
  ): void;
  gruCell(
    input: TensorHandle,
    hx: Opt<TensorHandle>,
    weightIh: TensorHandle,
    weightHh: TensorHandle,
    biasIh?: Opt<TensorHandle>,
    biasHh?: Opt<TensorHandle>,
  ): TensorHandle;
  /** `hx`: [h, c]; -> [h', c'] */
  lstmCell(
    input: TensorHandle,
    hx: Opt<readonly TensorHandle[]>,
    weightIh: TensorHandle,
    weightHh: TensorHandle,
    biasIh?: Opt<TensorHandle>,
    biasHh?: Opt<TensorHandle>,
  ): [TensorHandle, TensorHandle];
  scaledDotProductAttention(
    query: TensorHandle,
    key: TensorHandle,
    value: TensorHandle,
    attentionMask: Opt<TensorHandle>,
    dropoutP: number,
    isCausal: boolean,
    scale?: Opt<number>,
  ): TensorHandle;

  // ---- ops-optim.cc: whole-group optimizer steps; absent grads are the params' own ----
  foreachAdamExact(
    params: readonly TensorHandle[],
    grads: Opt<readonly TensorHandle[]>,
    expAvgs: readonly TensorHandle[],
    expAvgSqs: readonly TensorHandle[],
    maxExpAvgSqs: Opt<readonly TensorHandle[]>,
    stepSizes: readonly number[],
    biasCorrection2Sqrts: readonly number[],
    lr: number,
    beta1: number,
    beta2: number,
    weightDecay: number,
    eps: number,
    amsgrad: boolean,
    maximize: boolean,
    decoupled: boolean,
  ): void;
  /** Which one-pass CPU Adam kernel equals the op-by-op update for this dtype, or null. */
  adamOnePassKernel(h: TensorHandle): string | null;
  /** With momentum, the buffers made this step at their indices (null elsewhere). */
  foreachSgd(
    params: readonly TensorHandle[],
    grads: Opt<readonly TensorHandle[]>,
    momentumBuffers: Opt<readonly (TensorHandle | null)[]>,
    lr: number,
    momentum: number,
    dampening: number,
    weightDecay: number,
    nesterov: boolean,
    maximize: boolean,
  ): (TensorHandle | null)[] | undefined;
  foreachRmsprop(
    params: readonly TensorHandle[],
    grads: Opt<readonly TensorHandle[]>,
    squareAvgs: readonly TensorHandle[],
    momentumBuffers: Opt<readonly TensorHandle[]>,
    gradAvgs: Opt<readonly TensorHandle[]>,
    lr: number,
    alpha: number,
    eps: number,
    weightDecay: number,
    momentum: number,
    centered: boolean,
    maximize: boolean,
  ): void;
  foreachAdagrad(
    params: readonly TensorHandle[],
    grads: Opt<readonly TensorHandle[]>,
    sums: readonly TensorHandle[],
    lrs: readonly number[],
    weightDecay: number,
    eps: number,
    maximize: boolean,
  ): void;
  foreachNadam(
    params: readonly TensorHandle[],
    grads: Opt<readonly TensorHandle[]>,
    expAvgs: readonly TensorHandle[],
    expAvgSqs: readonly TensorHandle[],
    biasCorrection2s: readonly number[],
    gradSteps: readonly number[],
    averageSteps: readonly number[],
    beta1: number,
    beta2: number,
    weightDecay: number,
    eps: number,
  ): void;
  foreachRadam(
    params: readonly TensorHandle[],
    grads: Opt<readonly TensorHandle[]>,
    expAvgs: readonly TensorHandle[],
    expAvgSqs: readonly TensorHandle[],
    biasCorrection1s: readonly number[],
    biasCorrection2Sqrts: readonly number[],
    rectifications: readonly number[],
    lr: number,
    beta1: number,
    beta2: number,
    weightDecay: number,
    eps: number,
  ): void;
  hasGrads(params: readonly TensorHandle[]): boolean[];
  zeroGrads(params: readonly TensorHandle[], setToNone?: boolean): void;
  /** The total p-norm of the gradients the parameters have, null when none has one. */
  gradsNorm(params: readonly TensorHandle[], p: number): TensorHandle | null;
  clipGrads(params: readonly TensorHandle[], total: TensorHandle, maxNorm: number): void;
  foreachAdam?(
    params: readonly TensorHandle[],
    grads: Opt<readonly TensorHandle[]>,
    expAvgs: readonly TensorHandle[],
    expAvgSqs: readonly TensorHandle[],
    maxExpAvgSqs: Opt<readonly TensorHandle[]>,
    stepSizes: readonly number[],
    biasCorrection2Sqrts: readonly number[],
    lr: number,
    beta1: number,
    beta2: number,
    weightDecay: number,
    eps: number,
    amsgrad: boolean,
    maximize: boolean,
    decoupled: boolean,
  ): void;
  fusedAdam?(
    params: readonly TensorHandle[],
    grads: Opt<readonly TensorHandle[]>,
    expAvgs: readonly TensorHandle[],
    expAvgSqs: readonly TensorHandle[],
    maxExpAvgSqs: Opt<readonly TensorHandle[]>,
    steps: readonly TensorHandle[],
    lr: number,
    beta1: number,
    beta2: number,
    weightDecay: number,
    eps: number,
    amsgrad: boolean,
    maximize: boolean,
    decoupled: boolean,
  ): void;
  /** fusedAdam under a second name, where libtorch has the AdamW kernel. */
  fusedAdamW?(
    params: readonly TensorHandle[],
    grads: Opt<readonly TensorHandle[]>,
    expAvgs: readonly TensorHandle[],
    expAvgSqs: readonly TensorHandle[],
    maxExpAvgSqs: Opt<readonly TensorHandle[]>,
    steps: readonly TensorHandle[],
    lr: number,
    beta1: number,
    beta2: number,
    weightDecay: number,
    eps: number,
    amsgrad: boolean,
    maximize: boolean,
    decoupled: boolean,
  ): void;

  // ---- ops-averaging.cc: the collective round's packing loops ----
  /** flat := the tensors, in order, each times mass. */
  averagePack(tensors: readonly TensorHandle[], flat: TensorHandle, mass: number): void;
  /** Each tensor := its share of flat / divisor; with norms, [Σ pre², Σ (pre − post)², Σ post²]. */
  averageUnpack(
    tensors: readonly TensorHandle[],
    flat: TensorHandle,
    divisor: number,
    norms?: boolean,
  ): TensorHandle | undefined;

  // ---- ops-cuda.cc: streams, events, graphs (a CPU build refuses each with ERR_DEVICE) ----
  streamCreate(device: number, highPriority?: boolean): number;
  streamCurrent(device: number): number;
  /** The id of the stream it replaced on that stream's device. */
  streamSetCurrent(stream: number): number;
  streamSynchronize(stream: number): void;
  streamQuery(stream: number): boolean;
  eventCreate(enableTiming?: boolean): number;
  eventRecord(event: number, stream: number): void;
  eventWait(event: number, stream: number): void;
  eventSynchronize(event: number): void;
  eventQuery(event: number): boolean;
  /** Milliseconds. */
  eventElapsed(start: number, end: number): number;
  eventDestroy(event: number): void;
  recordStream(h: TensorHandle, stream: number): void;
  graphCreate(): number;
  /** `poolOf`: -1, or a graph whose pool this capture shares; `mode`: 0 global, 1 thread-local, 2 relaxed. */
  graphCaptureBegin(graph: number, poolOf: number, mode: number): void;
  graphCaptureEnd(graph: number): void;
  graphReplay(graph: number): void;
  graphDestroy(graph: number): void;
  graphCapturing(device: number): boolean;

  // ---- ops-distributed.cc: c10d rendezvous, process groups, blocking collectives ----
  distInfo(): { c10d: boolean; gloo: boolean; nccl: boolean };
  distLiveCount(): { stores: number; groups: number };
  distStoreCreate(
    host: string,
    port: number,
    worldSize: number,
    isServer: boolean,
    timeoutMs: number,
  ): number;
  distStoreFree(store: number): boolean;
  /** `backend`: 'gloo' or 'nccl'. */
  distGroupCreate(
    store: number,
    backend: string,
    rank: number,
    worldSize: number,
    timeoutMs: number,
    prefix: string,
    deviceIndex?: Opt<number>,
  ): number;
  /** `op`: sum, avg, min, max or product. */
  distAllReduce(group: number, tensors: readonly TensorHandle[], op: string): void;
  distBroadcast(group: number, tensors: readonly TensorHandle[], root: number): void;
  /** Every rank's tensor, in rank order. */
  distAllGather(group: number, h: TensorHandle): TensorHandle[];
  distBarrier(group: number): void;
  /** False when it was already destroyed. */
  distGroupDestroy(group: number, abort?: boolean): boolean;
}

/** The raw binding: every NativeOpTable entry with Handles for tensors. */
export type NativeBinding = { [K in keyof NativeOpTable]: NativeFunction<NativeOpTable[K]> };
