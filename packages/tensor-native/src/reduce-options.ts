// The options forms of the reductions: PyTorch's keywords in one object,
// `x.mean({ dim: 1, keepdim: true })` for `x.mean(dim=1, keepdim=True)`. Read by ops-reduce.ts.
import { type DType, parseDType } from './dtype.js';
import { FlodlError, invalidArgument } from './errors.js';
import { dtypeCode } from './internal/codes.js';
import { checkBoolean, checkOptions } from './internal/validate.js';
import { normalizeDim, type Tensor } from './tensor.js';

/** `sum` and `mean` in one options object. PyTorch: `x.sum(dim=None, keepdim=False, *, dtype=None)`. */
export interface SumOptions {
  /** The dims to reduce; every dim when absent. */
  dim?: number | number[];
  /** Keep each reduced dim as size 1 (without `dim`: every dim). Default false. */
  keepdim?: boolean;
  /** Accumulate and return in this dtype. */
  dtype?: DType;
}

/** `prod` in one options object. PyTorch: `x.prod(dim, keepdim=False, *, dtype=None)`. */
export interface ProdOptions {
  /** The one dim to reduce; every element when absent. */
  dim?: number;
  /** Keep `dim` as size 1 (needs `dim`). Default false. */
  keepdim?: boolean;
  /** Accumulate and return in this dtype. */
  dtype?: DType;
}

/** `max` and `min` along a dim in one options object. PyTorch: `x.max(dim=…, keepdim=False)`. */
export interface DimOptions {
  /** The dim to reduce (required: `max()` is the largest element). */
  dim: number;
  /** Keep `dim` as size 1. Default false. */
  keepdim?: boolean;
}

/** `amax` and `amin` in one options object. PyTorch: `x.amax(dim=(), keepdim=False)`. */
export interface AmaxOptions {
  /** The dims to reduce; every dim when absent (PyTorch's `dim=()`). */
  dim?: number | number[];
  /** Keep each reduced dim as size 1. Default false. */
  keepdim?: boolean;
}

/** `argmax`, `argmin`, `all` and `any` in one options object. PyTorch: `x.argmax(dim=None, keepdim=False)`. */
export interface ArgmaxOptions {
  /** The one dim to reduce; the flattened tensor when absent. */
  dim?: number;
  /** Keep `dim` as size 1 (argmax/argmin without `dim`: every dim; all/any need `dim`). Default false. */
  keepdim?: boolean;
}

/**
 * `std` and `var` in one options object. PyTorch: `x.std(dim=None, *, correction=1, keepdim=False)`
 * (or `unbiased=`, not both).
 */
export interface SpreadOptions {
  /** The dims to reduce; every dim when absent. */
  dim?: number | number[];
  /** Keep each reduced dim as size 1 (without `dim`: every dim). Default false. */
  keepdim?: boolean;
  /**
   * The divisor is `N - correction`: 1 (the default) is Bessel's correction, 0 the biased
   * estimate. An integer >= 0 (PyTorch 2.x also takes fractions; libtorch 1.13 does not).
   */
  correction?: number;
  /** `true` is `correction: 1`, `false` is `correction: 0`. */
  unbiased?: boolean;
}

/** `norm` in one options object. PyTorch: `x.norm(p=2, dim=None, keepdim=False, dtype=None)`. */
export interface VectorNormOptions {
  /** The order: any number, `Infinity` or `-Infinity`. Default 2. */
  p?: number;
  /** The dims to reduce; every dim when absent. */
  dim?: number | number[];
  /** Keep each reduced dim as size 1 (without `dim`: every dim). Default false. */
  keepdim?: boolean;
  /** Cast the input to this dtype first and return in it. */
  dtype?: DType;
}

/** `logsumexp` in one options object. PyTorch: `x.logsumexp(dim, keepdim=False)`. */
export interface LogsumexpOptions {
  /** The dims to reduce (required). */
  dim: number | number[];
  /** Keep each reduced dim as size 1. Default false. */
  keepdim?: boolean;
}

/** `softmax`, `logSoftmax`, `cumsum` and `cumprod` in one options object. PyTorch: `x.softmax(dim, dtype=None)`. */
export interface AlongOptions {
  /** The dim to work along (required). */
  dim: number;
  /** Compute and return in this dtype. */
  dtype?: DType;
}

/** `countNonzero` in one options object. PyTorch: `torch.count_nonzero(x, dim=None)`. */
export interface CountNonzeroOptions {
  /** The dims to count over; every dim when absent. */
  dim?: number | number[];
}

/**
 * True when a reduction's first argument is its options form: an object that is not a dim list
 * (a Tensor passes too, and is refused by {@link keywords}). A number fails the first test.
 */
export function isKeywordForm<T>(value: T): value is Exclude<T, number | readonly unknown[] | undefined> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The options object, its keys checked against `allowed`.
 * @throws FlodlError ERR_INVALID_ARGUMENT for an object that is not plain (a Tensor) or an unknown key
 */
export function keywords<T extends object>(
  op: string,
  form: object,
  allowed: readonly (keyof T & string)[],
  argument = 'dim',
): T {
  const prototype = Object.getPrototypeOf(form);
  if (prototype !== Object.prototype && prototype !== null) {
    throw invalidArgument(op, argument, 'a number, an array of integers or an options object', form);
  }
  return checkOptions<T>(op, form as T, allowed);
}

/**
 * Refuses positional arguments after an options object (`sum({ dim: 1 }, true)`): each
 * keyword goes in the object. `given` is true when one was passed.
 */
export function noArgumentsAfter(op: string, given: boolean): void {
  if (given) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'positional arguments after the options object', {
      op,
      expected: `${op}({ …every keyword… }) or ${op}(positional arguments)`,
      got: 'an options object followed by more arguments',
    });
  }
}

/** `keepdim` of an options object: a boolean, false when absent. */
export function keywordKeepdim(op: string, value: unknown): boolean {
  return checkBoolean(op, 'keepdim', value, false);
}

/** `dtype` of an options object as the addon takes it (-1 when absent). */
export function keywordDtype(op: string, value: unknown): number {
  return value === undefined ? -1 : dtypeCode(parseDType(op, value));
}

/**
 * `dim` of an options object as a checked list; when absent, undefined (the whole tensor), or
 * every dim when `everyDim` (what keepdim keeps).
 */
export function keywordDims(
  op: string,
  self: Tensor,
  value: unknown,
  everyDim: boolean,
): number[] | undefined {
  const ndim = self.ndim;
  if (value === undefined) return everyDim ? Array.from({ length: ndim }, (_, dim) => dim) : undefined;
  const list = Array.isArray(value) ? value : [value];
  for (const item of list) normalizeDim(op, item, ndim);
  return list as number[];
}
