// The raw addon surface. Only src/internal/ touches it; everything else goes through Tensor.
// A handle is a number naming a slot in the addon's per-environment tensor table.

export type Handle = number;
/** A dtype code (see codes.ts); -1 means "infer / keep". */
export type DTypeCode = number;
/** -1 for the CPU, N for cuda:N. */
export type DeviceCode = number;
export type Scalar = number | boolean;
type Opt<T> = T | undefined;

type Unary = (x: Handle) => Handle;
type Binary = (a: Handle, b: Handle) => Handle;
type WithScalar = (a: Handle, s: Scalar) => Handle;
type InPlace = (self: Handle, ...args: any[]) => void;

export interface NativeBinding {
  setErrorFactory(factory: (code: string, op: string, message: string) => Error): void;
  free(h: Handle): boolean;
  freeMany(handles: Handle[] | Float64Array, count?: number): number;
  retire(h: Handle): boolean;
  reclaim(h: Handle): boolean;
  isLive(h: Handle): boolean;
  liveCount(): number;
  shape(h: Handle): number[];
  strides(h: Handle): number[];
  dtype(h: Handle): DTypeCode;
  device(h: Handle): DeviceCode;
  numel(h: Handle): number;
  dim(h: Handle): number;
  isContiguous(h: Handle): boolean;
  isPinned(h: Handle): boolean;
  sameStorage(a: Handle, b: Handle): boolean;
  item(h: Handle): number | boolean;
  toTypedArray(h: Handle): Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array;
  fromTypedArray(data: ArrayBufferView, shape: number[], dtype: DTypeCode, device: DeviceCode): Handle;
  scalarTensor(value: Scalar, dtype: Opt<DTypeCode>): Handle;
  to(h: Handle, dtype: DTypeCode, device: Opt<DeviceCode>, nonBlocking: boolean, copy: boolean): Handle;
  clone: Unary;
  detach: Unary;
  contiguous: Unary;
  alias: Unary;
  pinMemory: Unary;
  manualSeed(seed: number): void;
  rngState(device: DeviceCode): Uint8Array;
  setRngState(device: DeviceCode, state: Uint8Array): void;
  setNumThreads(threads: number): void;
  getNumThreads(): number;
  buildInfo(): { torchVersion: string; cuda: boolean; gloo: boolean; nccl: boolean };
  backendFlag(name: string): boolean;
  setBackendFlag(name: string, value: boolean): void;
  cudaDeviceCount(): number;
  cudaSynchronize(device: Opt<number>): void;
  cudaMemoryStats(device: Opt<number>): [number, number, number, number, number];
  cudaResetPeakMemoryStats(device: Opt<number>): void;
  cudaEmptyCache(): void;
  cudaDeviceName(device: Opt<number>): string | null;

  zeros(shape: number[], dtype: DTypeCode, device: DeviceCode): Handle;
  ones(shape: number[], dtype: DTypeCode, device: DeviceCode): Handle;
  empty(shape: number[], dtype: DTypeCode, device: DeviceCode): Handle;
  rand(shape: number[], dtype: DTypeCode, device: DeviceCode): Handle;
  randn(shape: number[], dtype: DTypeCode, device: DeviceCode): Handle;
  full(shape: number[], value: Scalar, dtype: DTypeCode, device: DeviceCode): Handle;
  randint(low: number, high: number, shape: number[], dtype: DTypeCode, device: DeviceCode): Handle;
  arange(start: number, end: number, step: number, dtype: DTypeCode, device: DeviceCode): Handle;
  linspace(start: number, end: number, steps: number, dtype: DTypeCode, device: DeviceCode): Handle;
  eye(n: number, m: Opt<number>, dtype: DTypeCode, device: DeviceCode): Handle;
  zerosLike(h: Handle, dtype: DTypeCode, device: Opt<DeviceCode>): Handle;
  onesLike(h: Handle, dtype: DTypeCode, device: Opt<DeviceCode>): Handle;
  emptyLike(h: Handle, dtype: DTypeCode, device: Opt<DeviceCode>): Handle;
  randLike(h: Handle, dtype: DTypeCode, device: Opt<DeviceCode>): Handle;
  randnLike(h: Handle, dtype: DTypeCode, device: Opt<DeviceCode>): Handle;
  fullLike(h: Handle, value: Scalar, dtype: DTypeCode, device: Opt<DeviceCode>): Handle;
  randintLike(h: Handle, low: number, high: number, dtype: DTypeCode, device: Opt<DeviceCode>): Handle;
  copyFromBytes_(target: Handle, bytes: Uint8Array, dtype: DTypeCode, alpha: Opt<number>): void;
  toBytes(h: Handle, into: Opt<Uint8Array>, scale: Opt<number>, dtype: Opt<DTypeCode>): Uint8Array;

  [unary: string]: any;

  add(a: Handle, b: Handle, alpha?: Scalar): Handle;
  sub(a: Handle, b: Handle, alpha?: Scalar): Handle;
  addScalar(a: Handle, s: Scalar, alpha?: Scalar): Handle;
  subScalar(a: Handle, s: Scalar, alpha?: Scalar): Handle;
  rsubScalar: WithScalar;
  mul: Binary;
  mulScalar: WithScalar;
  div(a: Handle, b: Handle, roundingMode?: string): Handle;
  divScalar(a: Handle, s: Scalar, roundingMode?: string): Handle;
  matmul: Binary;
  relu: Unary;
  add_: InPlace;
}
