// Factories: Tensor.from, zeros/ones/full/empty, random tensors, ranges, eye, and *Like.
import { type Device, deviceCode, optionDeviceCode } from './device.js';
import { type DType, isFloatingPoint, parseDType } from './dtype.js';
import { FlodlError, invalidArgument } from './errors.js';
import { dtypeCode } from './internal/codes.js';
import { call, callInPlace } from './internal/methods.js';
import { nativeOps } from './internal/native-ops.js';
import {
  checkFiniteNumber,
  checkInt,
  checkNonNegativeInteger,
  checkNumber,
  checkOptions,
  checkScalar,
  checkShape,
} from './internal/validate.js';
import { Tensor, type TensorData, type TensorOptions } from './tensor.js';

// The addon entries this file calls (see internal/native-ops.ts).
const native = nativeOps(
  'fromTypedArray',
  'zeros',
  'ones',
  'empty',
  'full',
  'rand',
  'randn',
  'randint',
  'arange',
  'linspace',
  'eye',
  'zerosLike',
  'onesLike',
  'emptyLike',
  'fullLike',
  'randLike',
  'randnLike',
  'randintLike',
  'fromBytes',
  'toBytes',
  'copyFromBytes_',
);

export type { TensorData, TensorOptions } from './tensor.js';

const OPTION_KEYS = ['dtype', 'device'] as const;

function resolve(op: string, options: TensorOptions | undefined, fallback: DType | null): [number, number] {
  checkOptions(op, options, OPTION_KEYS);
  const dtype =
    options?.dtype === undefined
      ? fallback === null
        ? -1
        : dtypeCode(fallback)
      : dtypeCode(parseDType(op, options.dtype));
  const device = optionDeviceCode(op, options?.device);
  return [dtype, device];
}

function shapeArgument(op: string, shape: unknown): number[] {
  if (typeof shape === 'number') return checkShape(op, [shape]);
  return checkShape(op, shape);
}

function inferShape(data: TensorData): number[] {
  const shape: number[] = [];
  let level: unknown = data;
  while (Array.isArray(level)) {
    shape.push(level.length);
    if (level.length === 0) break;
    level = level[0];
  }
  return shape;
}

function flatten(op: string, data: TensorData, shape: readonly number[]): (number | boolean)[] {
  const out: (number | boolean)[] = [];
  const walk = (value: unknown, dim: number, path: string): void => {
    if (dim === shape.length) {
      if (typeof value !== 'number' && typeof value !== 'boolean') {
        throw invalidArgument(op, `data${path}`, 'a number or boolean', value);
      }
      out.push(value);
      return;
    }
    if (!Array.isArray(value) || value.length !== shape[dim]) {
      throw new FlodlError('ERR_SHAPE', 'nested arrays are ragged', {
        op,
        expected: `data${path} to be an array of length ${shape[dim]}`,
        got: Array.isArray(value) ? `length ${value.length}` : typeof value,
      });
    }
    for (let k = 0; k < value.length; k++) walk(value[k], dim + 1, `${path}[${k}]`);
  };
  walk(data, 0, '');
  return out;
}

function typedDtype(data: ArrayBufferView): DType | null {
  if (data instanceof Float32Array) return 'float32';
  if (data instanceof Float64Array) return 'float64';
  if (data instanceof Int32Array) return 'int32';
  if (data instanceof BigInt64Array) return 'int64';
  if (data instanceof Uint8Array) return 'uint8';
  if (data instanceof Int8Array || data instanceof Int16Array) return 'int32';
  return null;
}

/**
 * Creates a tensor from JS data (copied). Nested arrays give the shape; flat arrays and
 * TypedArrays take `shape` (default: 1-d). The dtype is inferred like `torch.tensor`:
 * booleans → bool, integers → int64, other numbers → float32; TypedArrays keep their type.
 *
 * @example
 * ```ts
 * const a = fromData([[1, 2], [3, 4]], undefined, { dtype: 'float64' });
 * const b = fromData(new Float32Array(6), [2, 3]);
 * ```
 * @throws FlodlError ERR_SHAPE when the data length does not match the shape, or arrays are ragged
 */
export function fromData(data: TensorData, shape?: readonly number[], options?: TensorOptions): Tensor {
  const op = 'Tensor.from';
  checkOptions(op, options, OPTION_KEYS);
  const device = optionDeviceCode(op, options?.device);
  const requested = options?.dtype === undefined ? null : parseDType(op, options.dtype);
  if (ArrayBuffer.isView(data) && !(data instanceof DataView)) {
    const sourceDtype = typedDtype(data);
    if (sourceDtype === null) throw invalidArgument(op, 'data', 'a supported TypedArray', data);
    const length = (data as unknown as { length: number }).length;
    const dims = shape === undefined ? [length] : checkShape(op, shape);
    checkVolume(op, dims, length);
    return call(op, {}, () => native.fromTypedArray(data, dims, dtypeCode(requested ?? sourceDtype), device));
  }
  let dims: number[];
  let values: (number | boolean)[];
  if (typeof data === 'number' || typeof data === 'boolean') {
    dims = shape === undefined ? [] : checkShape(op, shape);
    values = [data];
    checkVolume(op, dims, 1);
  } else if (Array.isArray(data)) {
    const nested = data.some((item) => Array.isArray(item));
    if (nested || shape === undefined) {
      dims = inferShape(data);
      values = flatten(op, data, dims);
      if (shape !== undefined) {
        const wanted = checkShape(op, shape);
        checkVolume(op, wanted, values.length);
        dims = wanted;
      }
    } else {
      dims = checkShape(op, shape);
      values = flatten(op, data, [data.length]);
      checkVolume(op, dims, values.length);
    }
  } else {
    throw invalidArgument(op, 'data', 'a number, boolean, (nested) array or TypedArray', data);
  }
  const allBool = values.length > 0 && values.every((value) => typeof value === 'boolean');
  const allInt = values.every((value) => typeof value === 'number' && Number.isInteger(value));
  const dtype = requested ?? (allBool ? 'bool' : allInt && values.length > 0 ? 'int64' : 'float32');
  let buffer: Float32Array | Float64Array | Uint8Array;
  if (allBool) buffer = Uint8Array.from(values as boolean[], (value) => (value ? 1 : 0));
  else if (dtype === 'float32' || dtype === 'float16' || dtype === 'bfloat16')
    buffer = Float32Array.from(values as number[], Number);
  else buffer = Float64Array.from(values as (number | boolean)[], Number);
  return call(op, {}, () => native.fromTypedArray(buffer, dims, dtypeCode(dtype), device));
}

function checkVolume(op: string, shape: readonly number[], length: number): void {
  const volume = shape.reduce((product, size) => product * size, 1);
  if (volume !== length) {
    throw new FlodlError('ERR_SHAPE', 'data length does not match the shape', {
      op,
      expected: `${volume} values for shape [${shape.join(', ')}]`,
      got: `${length} values`,
    });
  }
}

/** A tensor of zeros. PyTorch: `torch.zeros`. */
export function zeros(shape: readonly number[] | number, options?: TensorOptions): Tensor {
  const [dtype, device] = resolve('zeros', options, 'float32');
  return call('zeros', {}, () => native.zeros(shapeArgument('zeros', shape), dtype, device));
}
/** A tensor of ones. PyTorch: `torch.ones`. */
export function ones(shape: readonly number[] | number, options?: TensorOptions): Tensor {
  const [dtype, device] = resolve('ones', options, 'float32');
  return call('ones', {}, () => native.ones(shapeArgument('ones', shape), dtype, device));
}
/** An uninitialised tensor (its values are whatever the memory held). PyTorch: `torch.empty`. */
export function empty(shape: readonly number[] | number, options?: TensorOptions): Tensor {
  const [dtype, device] = resolve('empty', options, 'float32');
  return call('empty', {}, () => native.empty(shapeArgument('empty', shape), dtype, device));
}
/** A tensor filled with `value` (dtype inferred from it unless given). PyTorch: `torch.full`. */
export function full(
  shape: readonly number[] | number,
  value: number | boolean,
  options?: TensorOptions,
): Tensor {
  const [dtype, device] = resolve('full', options, null);
  checkScalar('full', 'value', value);
  return call('full', {}, () => native.full(shapeArgument('full', shape), value, dtype, device));
}
/** Samples of U[0, 1). PyTorch: `torch.rand`. */
export function rand(shape: readonly number[] | number, options?: TensorOptions): Tensor {
  const [dtype, device] = resolve('rand', options, 'float32');
  return call('rand', {}, () => native.rand(shapeArgument('rand', shape), dtype, device));
}
/** Samples of N(0, 1). PyTorch: `torch.randn`. */
export function randn(shape: readonly number[] | number, options?: TensorOptions): Tensor {
  const [dtype, device] = resolve('randn', options, 'float32');
  return call('randn', {}, () => native.randn(shapeArgument('randn', shape), dtype, device));
}
/** Integers uniform in [low, high) (int64 by default). PyTorch: `torch.randint(low, high, size)`. */
export function randint(
  low: number,
  high: number,
  shape: readonly number[] | number,
  options?: TensorOptions,
): Tensor {
  const [dtype, device] = resolve('randint', options, 'int64');
  checkInt('randint', 'low', low);
  checkInt('randint', 'high', high);
  if (high <= low) throw invalidArgument('randint', 'high', `an integer > low (${low})`, high);
  return call('randint', {}, () => native.randint(low, high, shapeArgument('randint', shape), dtype, device));
}
/**
 * Values from `start` to `end` (exclusive) by `step`; `arange(n)` counts 0..n-1. Integer
 * arguments give int64, others float32. PyTorch: `torch.arange`.
 */
export function arange(end: number, options?: TensorOptions): Tensor;
export function arange(start: number, end: number, step?: number, options?: TensorOptions): Tensor;
export function arange(a: number, b?: number | TensorOptions, c?: number, d?: TensorOptions): Tensor {
  const [start, end, step, options] = typeof b === 'number' ? [a, b, c ?? 1, d] : [0, a, 1, b];
  checkNumber('arange', 'start', start);
  checkNumber('arange', 'end', end);
  checkNumber('arange', 'step', step);
  if (step === 0) throw invalidArgument('arange', 'step', 'a non-zero number', step);
  if ((end - start) / step < 0)
    throw invalidArgument('arange', 'step', `a step that moves from ${start} towards ${end}`, step);
  const [dtype, device] = resolve('arange', options, null);
  return call('arange', {}, () => native.arange(start, end, step, dtype, device));
}
/** `steps` evenly spaced values from `start` to `end` inclusive. PyTorch: `torch.linspace`. */
export function linspace(start: number, end: number, steps: number, options?: TensorOptions): Tensor {
  checkNumber('linspace', 'start', start);
  checkNumber('linspace', 'end', end);
  checkNonNegativeInteger('linspace', 'steps', steps);
  const [dtype, device] = resolve('linspace', options, 'float32');
  return call('linspace', {}, () => native.linspace(start, end, steps, dtype, device));
}
/** The `n × m` identity matrix (`m` defaults to `n`). PyTorch: `torch.eye`. */
export function eye(n: number, m?: number, options?: TensorOptions): Tensor {
  checkNonNegativeInteger('eye', 'n', n);
  if (m !== undefined) checkNonNegativeInteger('eye', 'm', m);
  const [dtype, device] = resolve('eye', options, 'float32');
  return call('eye', {}, () => native.eye(n, m, dtype, device));
}

function likeResolve(
  op: string,
  source: Tensor,
  options: TensorOptions | undefined,
): [number, number | undefined] {
  if (!(source instanceof Tensor)) throw invalidArgument(op, 'input', 'a Tensor', source);
  checkOptions(op, options, OPTION_KEYS);
  const dtype = options?.dtype === undefined ? -1 : dtypeCode(parseDType(op, options.dtype));
  const device = options?.device === undefined ? undefined : deviceCode(op, options.device);
  return [dtype, device];
}

/** Zeros shaped like `input`. PyTorch: `torch.zeros_like`. */
export function zerosLike(input: Tensor, options?: TensorOptions): Tensor {
  const [dtype, device] = likeResolve('zerosLike', input, options);
  return call('zerosLike', { input }, () => native.zerosLike(input._h, dtype, device));
}
/** Ones shaped like `input`. PyTorch: `torch.ones_like`. */
export function onesLike(input: Tensor, options?: TensorOptions): Tensor {
  const [dtype, device] = likeResolve('onesLike', input, options);
  return call('onesLike', { input }, () => native.onesLike(input._h, dtype, device));
}
/** Uninitialised, shaped like `input`. PyTorch: `torch.empty_like`. */
export function emptyLike(input: Tensor, options?: TensorOptions): Tensor {
  const [dtype, device] = likeResolve('emptyLike', input, options);
  return call('emptyLike', { input }, () => native.emptyLike(input._h, dtype, device));
}
/** `value` everywhere, shaped like `input`. PyTorch: `torch.full_like`. */
export function fullLike(input: Tensor, value: number | boolean, options?: TensorOptions): Tensor {
  const [dtype, device] = likeResolve('fullLike', input, options);
  checkScalar('fullLike', 'value', value);
  return call('fullLike', { input }, () => native.fullLike(input._h, value, dtype, device));
}
/** U[0, 1) samples shaped like `input`. PyTorch: `torch.rand_like`. */
export function randLike(input: Tensor, options?: TensorOptions): Tensor {
  const [dtype, device] = likeResolve('randLike', input, options);
  return call('randLike', { input }, () => native.randLike(input._h, dtype, device));
}
/** N(0, 1) samples shaped like `input`. PyTorch: `torch.randn_like`. */
export function randnLike(input: Tensor, options?: TensorOptions): Tensor {
  const [dtype, device] = likeResolve('randnLike', input, options);
  return call('randnLike', { input }, () => native.randnLike(input._h, dtype, device));
}
/** Integers in [low, high) shaped like `input`. PyTorch: `torch.randint_like`. */
export function randintLike(input: Tensor, low: number, high: number, options?: TensorOptions): Tensor {
  const [dtype, device] = likeResolve('randintLike', input, options);
  checkInt('randintLike', 'low', low);
  checkInt('randintLike', 'high', high);
  if (high <= low) throw invalidArgument('randintLike', 'high', `an integer > low (${low})`, high);
  return call('randintLike', { input }, () => native.randintLike(input._h, low, high, dtype, device));
}

declare module './tensor.js' {
  namespace Tensor {
    /**
     * Creates a tensor from JS data (copied): nested arrays, flat arrays with `shape`, or
     * TypedArrays. The dtype is inferred like `torch.tensor` unless given.
     * PyTorch: `torch.tensor(data, dtype=..., device=...)`.
     * @example Tensor.from([[1, 2], [3, 4]], undefined, { dtype: 'float32' })
     * @throws FlodlError ERR_SHAPE when the data does not fill the shape exactly
     */
    function from(data: TensorData, shape?: readonly number[], options?: TensorOptions): Tensor;
  }
}

Tensor.from = fromData;

/**
 * A tensor from raw little-endian element bytes (any dtype, float16/bfloat16 included),
 * as stored by safetensors and numpy. The bytes are copied.
 * @throws FlodlError ERR_SHAPE when the byte count does not match shape × element size
 */
export function fromBytes(
  bytes: Uint8Array,
  shape: readonly number[],
  dtype: DType,
  options: { device?: Device } = {},
): Tensor {
  if (!(bytes instanceof Uint8Array)) throw invalidArgument('fromBytes', 'bytes', 'a Uint8Array', bytes);
  checkOptions('fromBytes', options, ['device']);
  const dims = checkShape('fromBytes', shape);
  const code = dtypeCode(parseDType('fromBytes', dtype));
  const device = optionDeviceCode('fromBytes', options.device);
  return call('fromBytes', {}, () => native.fromBytes(bytes, dims, code, device));
}

/**
 * Writes raw little-endian element bytes of `dtype` (the target's shape, row-major) into
 * `target` in place, cast to its dtype and copied to its device in the same pass, without a
 * tensor in between; with `lerp: α`, blends instead: `target := (1 − α)·target + α·values`.
 * Not recorded by autograd (a parameter can be the target). Returns `target`.
 *
 * @example copyFromBytes_(param, consensus.bytes, 'float32')
 * @throws FlodlError ERR_SHAPE when the byte count does not match the target's element count ×
 *   the dtype's size; ERR_INVALID_ARGUMENT for bad arguments
 */
export function copyFromBytes_<T extends Tensor>(
  target: T,
  bytes: Uint8Array,
  dtype: DType,
  options: { lerp?: number } = {},
): T {
  const op = 'copyFromBytes_';
  if (!(target instanceof Tensor)) throw invalidArgument(op, 'target', 'a Tensor', target);
  if (!(bytes instanceof Uint8Array)) throw invalidArgument(op, 'bytes', 'a Uint8Array', bytes);
  checkOptions(op, options, ['lerp']);
  const alpha = options.lerp === undefined ? undefined : checkFiniteNumber(op, 'lerp', options.lerp);
  const code = dtypeCode(parseDType(op, dtype));
  callInPlace(op, target, {}, () => native.copyFromBytes_(target._h, bytes, code, alpha));
  return target;
}

/** Options of {@link toBytes}. */
export interface ToBytesOptions {
  /**
   * Write into these bytes instead of a new Uint8Array (exactly the element count × the
   * element size): a buffer kept across calls costs no fresh memory.
   */
  into?: Uint8Array;
  /** Multiply by this number first (floating dtypes): the bytes of `tensor.mul(scale)`. */
  scale?: number;
  /** Cast to this dtype first: the bytes of `tensor.to({ dtype })`. */
  dtype?: DType;
}

/**
 * The raw little-endian element bytes of a tensor (row-major), copied to the CPU; with `dtype`
 * and `scale`, those of `tensor.to({ dtype }).mul(scale)` bit for bit, computed without a tensor
 * in between on the CPU (written straight into the bytes). Returns `into` when given.
 *
 * @example toBytes(param, { into: kept, scale: mass }) // a mass-scaled snapshot, no allocation
 * @throws FlodlError ERR_SHAPE when `into` does not hold exactly the tensor's bytes;
 *   ERR_INVALID_ARGUMENT for bad arguments, or `scale` on a non-floating dtype
 */
export function toBytes(tensor: Tensor, options: ToBytesOptions = {}): Uint8Array {
  const op = 'toBytes';
  if (!(tensor instanceof Tensor)) throw invalidArgument(op, 'tensor', 'a Tensor', tensor);
  checkOptions(op, options, ['into', 'scale', 'dtype']);
  const { into } = options;
  if (into !== undefined && !(into instanceof Uint8Array))
    throw invalidArgument(op, 'into', 'a Uint8Array', into);
  const dtype = options.dtype === undefined ? undefined : parseDType(op, options.dtype);
  const scale = options.scale === undefined ? undefined : checkFiniteNumber(op, 'scale', options.scale);
  if (scale !== undefined && !isFloatingPoint(dtype ?? tensor.dtype)) {
    throw invalidArgument(
      op,
      'scale',
      'a floating dtype to scale (cast with dtype first)',
      dtype ?? tensor.dtype,
    );
  }
  const code = dtype === undefined ? undefined : dtypeCode(dtype);
  return native.toBytes(tensor._h, into, scale, code);
}
