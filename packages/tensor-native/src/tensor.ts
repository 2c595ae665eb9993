// The Tensor handle: owns one native libtorch tensor. Its op methods are attached by the
// files named ops-*.ts, `Tensor.from` by creation.ts and `toString` by ops-print.ts
// (declaration merging keeps each family in its own small file, and this one imports none).

import { shareClassIdentity } from './class-identity.js';
import { type Device, deviceCode, deviceName } from './device.js';
import { type DType, parseDType } from './dtype.js';
import { FlodlError, invalidArgument } from './errors.js';
import { dtypeCode, dtypeFromCode } from './internal/codes.js';
import { isLiveHandle } from './internal/handle-table.js';
import * as storage from './internal/tensor-storage.js';
import { checkOptions } from './internal/validate.js';
import { release, track } from './scope.js';

/** Where and as what a factory creates its tensor. */
export interface TensorOptions {
  /** Default: float32 for floating factories; inferred from the data for `Tensor.from`. */
  dtype?: DType;
  /** Default: {@link getDefaultDevice} (`'cpu'` unless changed). */
  device?: Device;
}

/** Data accepted by `Tensor.from`. */
export type TensorData =
  | number
  | boolean
  | readonly TensorData[]
  | Float32Array
  | Float64Array
  | Int32Array
  | BigInt64Array
  | Uint8Array
  | Int8Array
  | Int16Array;

/** Nested arrays of numbers or booleans, as `toArray()` returns them. */
export type NestedArray = number | boolean | NestedArray[];

/**
 * A multi-dimensional array in libtorch, on the CPU or a CUDA device.
 *
 * A Tensor owns native memory. Free it deterministically: `dispose()`, a `using` declaration,
 * or create it inside `tidy(fn)`. Ops never mutate their inputs unless their name ends in `_`.
 *
 * PyTorch equivalent: `torch.Tensor`.
 */
export class Tensor {
  /** @internal native handle; -1 once disposed */
  _h: number;
  /** @internal survives enclosing scopes */
  _kept = false;
  /** @internal watched by the garbage-collection safety net */
  _netted = false;
  /** @internal cached metadata (shape and dtype never change for a live tensor) */
  _shape: readonly number[] | undefined = undefined;
  /** @internal */
  _dtype: DType | undefined = undefined;

  /** @internal Tensors come from factories (`Tensor.from`, `zeros`, …) and ops, never from `new`. */
  constructor(handle: number) {
    this._h = handle;
    track(this);
  }

  /** The size of each dimension. PyTorch: `t.shape`. */
  get shape(): readonly number[] {
    if (this._shape === undefined) this._shape = Object.freeze(storage.shapeOf(this._h));
    return this._shape;
  }

  /** The element type. PyTorch: `t.dtype`. */
  get dtype(): DType {
    if (this._dtype === undefined) this._dtype = dtypeFromCode(storage.dtypeCodeOf(this._h));
    return this._dtype;
  }

  /** Where the data lives: `'cpu'` or `'cuda:N'`. PyTorch: `t.device`. */
  get device(): Device {
    return deviceName(storage.deviceCodeOf(this._h));
  }

  /** The number of elements. PyTorch: `t.numel()`. */
  get numel(): number {
    return storage.numelOf(this._h);
  }

  /** The number of dimensions. PyTorch: `t.ndim`. */
  get ndim(): number {
    return this._shape !== undefined ? this._shape.length : storage.dimOf(this._h);
  }

  /** True when the elements are laid out densely in row-major order. */
  get isContiguous(): boolean {
    return storage.isContiguous(this._h);
  }

  /** True when this CPU tensor is in page-locked memory. */
  get isPinned(): boolean {
    return storage.isPinned(this._h);
  }

  /** The element step of each dimension. PyTorch: `t.stride()`. */
  get strides(): readonly number[] {
    return storage.stridesOf(this._h);
  }

  /** False once the tensor was disposed (directly or by its scope). */
  get isLive(): boolean {
    return this._h >= 0 && isLiveHandle(this._h);
  }

  /** `shape[dim]`, with negative dims counting from the end. PyTorch: `t.size(dim)`. */
  size(dim: number): number {
    const shape = this.shape;
    return shape[normalizeDim('size', dim, shape.length)]!;
  }

  /** The value of a one-element tensor. PyTorch: `t.item()`. @throws FlodlError ERR_SHAPE */
  item(): number;
  item(): number | boolean;
  item(): number | boolean {
    return storage.itemOf(this._h);
  }

  /**
   * A flat copy of the values in row-major order: Float32Array for float32/float16/bfloat16,
   * Float64Array, Int32Array, BigInt64Array for int64, Uint8Array for uint8 and bool.
   */
  toTypedArray(): Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array {
    return storage.typedArrayOf(this._h);
  }

  /**
   * The values as nested JS arrays, one level per dim; a plain number (or boolean) for a 0-d
   * tensor. Floating and integer dtypes give numbers, bool gives booleans. int64 values come
   * as numbers, as `item()` and `toArray()` give them: exact up to 2^53 in magnitude (past
   * that, read `toTypedArray()`, a BigInt64Array). A CUDA tensor is copied to the host;
   * views (transposed, sliced, expanded) are read in their logical order.
   *
   * @throws FlodlError ERR_DISPOSED on a freed tensor
   * @example
   * ```ts fragment
   * Tensor.from([[1, 2], [3, 4]]).T.tolist(); // [[1, 3], [2, 4]]
   * Tensor.from(5).tolist(); // 5
   * ```
   * PyTorch: `Tensor.tolist()`.
   */
  tolist(): NestedArray {
    return this.toArray();
  }

  /** The values as nested arrays (int64 as numbers, bool as booleans); the same as {@link Tensor.tolist}. */
  toArray(): NestedArray {
    const flat = this.toTypedArray();
    const isBool = this.dtype === 'bool';
    const values: (number | boolean)[] = new Array(flat.length);
    for (let k = 0; k < flat.length; k++) {
      const value = flat[k]!;
      values[k] = isBool ? value !== 0 : Number(value);
    }
    return nest(values, this.shape, 0, { offset: 0 });
  }

  /** A one-line summary: `Tensor(shape=[2, 3], dtype=float32, device=cpu)`. */
  describe(): string {
    if (this._h < 0) return 'Tensor(disposed)';
    return `Tensor(shape=[${this.shape.join(', ')}], dtype=${this.dtype}, device=${this.device})`;
  }

  /** Frees the native tensor now. Safe to call twice. */
  dispose(): void {
    if (this._h >= 0) release(this);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /**
   * A copy converted to `dtype` and/or moved to `device`; returns a new handle to the same
   * data when nothing changes. PyTorch: `t.to(...)`.
   * @example t.to('float64'); t.to('cuda'); t.to({ device: 'cuda', dtype: 'float16', nonBlocking: true })
   */
  to(target: DType | Device | ToOptions): Tensor {
    if (typeof target !== 'string' && (typeof target !== 'object' || target === null)) {
      throw invalidArgument('to', 'target', 'a dtype, a device or { dtype, device }', target);
    }
    const options: ToOptions = typeof target === 'string' ? toTarget(target) : target;
    checkOptions('to', options, ['dtype', 'device', 'nonBlocking', 'copy']);
    const dtype = options.dtype === undefined ? -1 : dtypeCode(parseDType('to', options.dtype));
    const device = options.device === undefined ? undefined : deviceCode('to', options.device);
    return new Tensor(
      storage.convert(this._h, dtype, device, options.nonBlocking === true, options.copy === true),
    );
  }

  /** The same data on the CPU. */
  cpu(): Tensor {
    return this.to({ device: 'cpu' });
  }
  /** The same data on a CUDA device (`cuda:0` by default). */
  cuda(index = 0): Tensor {
    return this.to({ device: `cuda:${index}` });
  }
  /** Casts to float32. */
  float(): Tensor {
    return this.to({ dtype: 'float32' });
  }
  /** Casts to float64. */
  double(): Tensor {
    return this.to({ dtype: 'float64' });
  }
  /** Casts to float16. */
  half(): Tensor {
    return this.to({ dtype: 'float16' });
  }
  /** Casts to bfloat16. */
  bfloat16(): Tensor {
    return this.to({ dtype: 'bfloat16' });
  }
  /** Casts to int32. */
  int(): Tensor {
    return this.to({ dtype: 'int32' });
  }
  /** Casts to int64. */
  long(): Tensor {
    return this.to({ dtype: 'int64' });
  }
  /** Casts to bool. */
  bool(): Tensor {
    return this.to({ dtype: 'bool' });
  }

  /** A copy with its own memory. PyTorch: `t.clone()`. */
  clone(): Tensor {
    return new Tensor(storage.cloneOf(this._h));
  }
  /** The same data, cut from the autograd graph. PyTorch: `t.detach()`. */
  detach(): Tensor {
    return new Tensor(storage.detachedOf(this._h));
  }
  /** The data in contiguous memory (the same data when it already is). */
  contiguous(): Tensor {
    return new Tensor(storage.contiguousOf(this._h));
  }
  /** A copy in page-locked memory for fast, asynchronous host→device copies; without CUDA, the same data. */
  pinMemory(): Tensor {
    return new Tensor(storage.pinnedOf(this._h));
  }
  /** True when both tensors view the same memory. */
  sharesMemoryWith(other: Tensor): boolean {
    if (!(other instanceof Tensor)) throw invalidArgument('sharesMemoryWith', 'other', 'a Tensor', other);
    return storage.sameStorage(this._h, other._h);
  }
}

/** Options of `Tensor.to`. */
export interface ToOptions {
  dtype?: DType;
  device?: Device;
  /** Asynchronous copy from pinned memory (CUDA). Default false. */
  nonBlocking?: boolean;
  /** Always copy, even when nothing changes. Default false. */
  copy?: boolean;
}

function toTarget(target: string): ToOptions {
  return target === 'cpu' || target.startsWith('cuda')
    ? { device: target as Device }
    : { dtype: target as DType };
}

function nest(
  values: (number | boolean)[],
  shape: readonly number[],
  dim: number,
  cursor: { offset: number },
): NestedArray {
  if (dim === shape.length) return values[cursor.offset++]!;
  const size = shape[dim]!;
  const out: NestedArray[] = new Array(size);
  for (let k = 0; k < size; k++) out[k] = nest(values, shape, dim + 1, cursor);
  return out;
}

/** Wraps a dim into [0, ndim) or throws a clear error. */
export function normalizeDim(op: string, dim: unknown, ndim: number, name = 'dim'): number {
  const span = Math.max(ndim, 1);
  if (typeof dim !== 'number' || !Number.isInteger(dim) || dim < -span || dim >= span) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `${name} out of range`, {
      op,
      expected: `an integer in [${-span}, ${span - 1}] for a ${ndim}-d tensor`,
      got: String(dim),
    });
  }
  return dim < 0 ? dim + span : dim;
}

shareClassIdentity(Tensor, 'flodl.Tensor');
