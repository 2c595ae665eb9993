// Reductions, scans and normalisers on Tensor. Dims are checked here, before native code.
import { type DType, parseDType } from './dtype.js';
import { dtypeCode } from './internal/codes.js';
import { diagnose } from './internal/diagnose.js';
import { dims } from './internal/dims.js';
import { call, callMany } from './internal/methods.js';
import { nativeOps } from './internal/native-ops.js';
import { checkBoolean, checkInt, checkOptions, checkScalar } from './internal/validate.js';
import {
  alongWith,
  amaxWith,
  countNonzeroWith,
  extremumWith,
  logsumexpWith,
  normWith,
  oneDimWith,
  prodWith,
  spreadWith,
  sumWith,
} from './reduce-keyword-forms.js';
import {
  type AlongOptions,
  type AmaxOptions,
  type ArgmaxOptions,
  type CountNonzeroOptions,
  type DimOptions,
  isKeywordForm,
  type LogsumexpOptions,
  type ProdOptions,
  type SpreadOptions,
  type SumOptions,
  type VectorNormOptions,
} from './reduce-options.js';
import { normalizeDim, Tensor } from './tensor.js';

// The addon entries this file calls (see internal/native-ops.ts).
const native = nativeOps(
  'sum',
  'mean',
  'prod',
  'maxAll',
  'minAll',
  'maxDim',
  'minDim',
  'maximum',
  'minimum',
  'amax',
  'amin',
  'argmax',
  'argmin',
  'norm',
  'logsumexp',
  'countNonzero',
  'std',
  'var',
  'softmax',
  'logSoftmax',
  'cumsum',
  'cumprod',
  'all',
  'any',
);

/** The result of reductions that also locate their values (`max(dim)`, `topk`, `sort`). */
export interface ValuesIndices {
  values: Tensor;
  indices: Tensor;
}

/** Keyword-only options of reductions. */
export interface ReduceOptions {
  /** Accumulate and return in this dtype. */
  dtype?: DType;
}

declare module './tensor.js' {
  // Each reduction that takes `dim`/`keepdim` also takes one options object with PyTorch's
  // keywords instead of its positional arguments: `mean({ dim: 1, keepdim: true })` is
  // `x.mean(dim=1, keepdim=True)`. An unknown key or a value of the wrong type is
  // ERR_INVALID_ARGUMENT naming the key.
  interface Tensor {
    /** Sum of all elements, or over `dim`. PyTorch: `torch.sum`. **Shape**: drops `dim` unless `keepdim`. */
    sum(dim?: number | number[], keepdim?: boolean, options?: ReduceOptions): Tensor;
    /**
     * Sum over `dim` (all dims when absent; with `keepdim` they stay as size-1 dims), in `dtype`
     * when given. PyTorch: `x.sum(dim=…, keepdim=…, dtype=…)`.
     * @example x.sum({ dim: 1, keepdim: true })
     */
    sum(options: SumOptions): Tensor;
    /** Mean of all elements, or over `dim`. PyTorch: `torch.mean`. */
    mean(dim?: number | number[], keepdim?: boolean, options?: ReduceOptions): Tensor;
    /** Mean over `dim` (all dims when absent). PyTorch: `x.mean(dim=…, keepdim=…, dtype=…)`. @example x.mean({ dim: 1, keepdim: true }) */
    mean(options: SumOptions): Tensor;
    /** Product of all elements, or over one `dim`. PyTorch: `torch.prod`. */
    prod(dim?: number, keepdim?: boolean, options?: ReduceOptions): Tensor;
    /** Product over one `dim` (all elements when absent). PyTorch: `x.prod(dim=…, keepdim=…, dtype=…)`. */
    prod(options: ProdOptions): Tensor;
    /** Largest element; with `dim`, `{values, indices}`; with a Tensor, the element-wise maximum. */
    max(): Tensor;
    max(dim: number, keepdim?: boolean): ValuesIndices;
    /** Largest values along `dim` and their indices. PyTorch: `x.max(dim=…, keepdim=…)`. */
    max(options: DimOptions): ValuesIndices;
    max(other: Tensor): Tensor;
    /** Smallest element; with `dim`, `{values, indices}`; with a Tensor, the element-wise minimum. */
    min(): Tensor;
    min(dim: number, keepdim?: boolean): ValuesIndices;
    /** Smallest values along `dim` and their indices. PyTorch: `x.min(dim=…, keepdim=…)`. */
    min(options: DimOptions): ValuesIndices;
    min(other: Tensor): Tensor;
    /** Maximum over dims (values only). PyTorch: `torch.amax`. */
    amax(dim: number | number[], keepdim?: boolean): Tensor;
    /** Maximum over `dim` (all dims when absent, PyTorch's `dim=()`). PyTorch: `x.amax(dim=…, keepdim=…)`. */
    amax(options: AmaxOptions): Tensor;
    /** Minimum over dims (values only). PyTorch: `torch.amin`. */
    amin(dim: number | number[], keepdim?: boolean): Tensor;
    /** Minimum over `dim` (all dims when absent). PyTorch: `x.amin(dim=…, keepdim=…)`. */
    amin(options: AmaxOptions): Tensor;
    /** Index of the largest element (flattened), or along `dim`. PyTorch: `torch.argmax`. */
    argmax(dim?: number, keepdim?: boolean): Tensor;
    /** PyTorch: `x.argmax(dim=…, keepdim=…)`. */
    argmax(options: ArgmaxOptions): Tensor;
    /** Index of the smallest element (flattened), or along `dim`. PyTorch: `torch.argmin`. */
    argmin(dim?: number, keepdim?: boolean): Tensor;
    /** PyTorch: `x.argmin(dim=…, keepdim=…)`. */
    argmin(options: ArgmaxOptions): Tensor;
    /** Standard deviation (Bessel-corrected unless `unbiased` is false). PyTorch: `torch.std`. */
    std(dim?: number | number[], unbiased?: boolean, keepdim?: boolean): Tensor;
    /**
     * Standard deviation over `dim` (all dims when absent) with `correction` (default 1, or
     * `unbiased`). PyTorch: `x.std(dim=…, correction=…, keepdim=…)`.
     * @example x.std({ dim: 0, correction: 0 })
     */
    std(options: SpreadOptions): Tensor;
    /** Variance (Bessel-corrected unless `unbiased` is false). PyTorch: `torch.var`. */
    var(dim?: number | number[], unbiased?: boolean, keepdim?: boolean): Tensor;
    /** Variance over `dim` with `correction` (default 1). PyTorch: `x.var(dim=…, correction=…, keepdim=…)`. */
    var(options: SpreadOptions): Tensor;
    /** Vector p-norm over all elements or `dim` (`p` may be `Infinity`). PyTorch: `torch.norm`. */
    norm(p?: number, dim?: number | number[], keepdim?: boolean): Tensor;
    /** Vector `p`-norm (default 2) over `dim`, in `dtype` when given. PyTorch: `x.norm(p=…, dim=…, keepdim=…, dtype=…)`. */
    norm(options: VectorNormOptions): Tensor;
    /** `log(sum(exp(x)))` over `dim`, computed stably. PyTorch: `torch.logsumexp`. */
    logsumexp(dim: number | number[], keepdim?: boolean): Tensor;
    /** PyTorch: `x.logsumexp(dim=…, keepdim=…)`. */
    logsumexp(options: LogsumexpOptions): Tensor;
    /** `exp(x) / sum(exp(x))` along `dim`. PyTorch: `torch.softmax`. */
    softmax(dim: number, options?: ReduceOptions): Tensor;
    /** PyTorch: `x.softmax(dim=…, dtype=…)`. */
    softmax(options: AlongOptions): Tensor;
    /** `log(softmax(x))` along `dim`, computed stably. PyTorch: `torch.log_softmax`. */
    logSoftmax(dim: number, options?: ReduceOptions): Tensor;
    /** PyTorch: `x.log_softmax(dim=…, dtype=…)`. */
    logSoftmax(options: AlongOptions): Tensor;
    /** Running sum along `dim`. PyTorch: `torch.cumsum`. */
    cumsum(dim: number, options?: ReduceOptions): Tensor;
    /** PyTorch: `x.cumsum(dim=…, dtype=…)`. */
    cumsum(options: AlongOptions): Tensor;
    /** Running product along `dim`. PyTorch: `torch.cumprod`. */
    cumprod(dim: number, options?: ReduceOptions): Tensor;
    /** PyTorch: `x.cumprod(dim=…, dtype=…)`. */
    cumprod(options: AlongOptions): Tensor;
    /** True when every element is non-zero (over `dim` if given). PyTorch: `torch.all`. */
    all(dim?: number, keepdim?: boolean): Tensor;
    /** PyTorch: `x.all(dim=…, keepdim=…)`. */
    all(options: ArgmaxOptions): Tensor;
    /** True when any element is non-zero (over `dim` if given). PyTorch: `torch.any`. */
    any(dim?: number, keepdim?: boolean): Tensor;
    /** PyTorch: `x.any(dim=…, keepdim=…)`. */
    any(options: ArgmaxOptions): Tensor;
    /** Number of non-zero elements (over `dim` if given). */
    countNonzero(dim?: number | number[]): Tensor;
    /** PyTorch: `torch.count_nonzero(x, dim=…)`. */
    countNonzero(options: CountNonzeroOptions): Tensor;
  }
}

const proto = Tensor.prototype;

function optionDtype(op: string, options: ReduceOptions | undefined): number {
  checkOptions(op, options, ['dtype']);
  return options?.dtype === undefined ? -1 : dtypeCode(parseDType(op, options.dtype));
}

// Each method below is its positional form as it was, plus one test for the options form after
// its hot path (a number dim fails its first `typeof`); the options forms live in their own
// functions further down, so the positional calls keep their code and their type feedback.

proto.sum = function sum(
  this: Tensor,
  dim?: number | number[] | SumOptions,
  keepdim: boolean = false,
  options?: ReduceOptions,
): Tensor {
  if (dim === undefined && options === undefined) {
    // Hot path: no closure or object is allocated unless the call fails.
    try {
      return new Tensor(native.sum(this._h));
    } catch (error) {
      throw diagnose('sum', { self: this }, error);
    }
  }
  if (isKeywordForm(dim)) return sumWith('sum', this, dim, keepdim !== false || options !== undefined);
  const dtype = optionDtype('sum', options);
  const list = dim === undefined ? undefined : dims('sum', this, dim);
  checkBoolean('sum', 'keepdim', keepdim, false);
  return call('sum', { self: this }, () => native.sum(this._h, list, keepdim, dtype));
};

proto.mean = function mean(
  this: Tensor,
  dim?: number | number[] | SumOptions,
  keepdim: boolean = false,
  options?: ReduceOptions,
): Tensor {
  if (isKeywordForm(dim)) return sumWith('mean', this, dim, keepdim !== false || options !== undefined);
  const dtype = optionDtype('mean', options);
  const list = dim === undefined ? undefined : dims('mean', this, dim);
  checkBoolean('mean', 'keepdim', keepdim, false);
  return call('mean', { self: this }, () => native.mean(this._h, list, keepdim, dtype));
};

proto.prod = function prod(
  this: Tensor,
  dim?: number | ProdOptions,
  keepdim: boolean = false,
  options?: ReduceOptions,
): Tensor {
  if (isKeywordForm(dim)) return prodWith(this, dim, keepdim !== false || options !== undefined);
  const dtype = optionDtype('prod', options);
  if (dim !== undefined) normalizeDim('prod', dim, this.ndim);
  return call('prod', { self: this }, () => native.prod(this._h, dim, keepdim, dtype));
};

function extremum(op: 'max' | 'min') {
  const all = op === 'max' ? native.maxAll : native.minAll;
  const along = op === 'max' ? native.maxDim : native.minDim;
  const pairwise = op === 'max' ? native.maximum : native.minimum;
  return function (this: Tensor, dimOrOther?: number | Tensor | DimOptions, keepdim = false): any {
    if (dimOrOther === undefined) return call(op, { self: this }, () => all(this._h));
    if (dimOrOther instanceof Tensor) {
      return call(op, { self: this, other: dimOrOther }, () => pairwise(this._h, dimOrOther._h), 'broadcast');
    }
    if (isKeywordForm(dimOrOther)) return extremumWith(op, this, dimOrOther, keepdim !== false);
    normalizeDim(op, dimOrOther, this.ndim);
    checkBoolean(op, 'keepdim', keepdim, false);
    const [values, indices] = callMany(op, { self: this }, () => along(this._h, dimOrOther, keepdim));
    return { values: values!, indices: indices! };
  };
}
proto.max = extremum('max');
proto.min = extremum('min');

proto.amax = function amax(
  this: Tensor,
  dim: number | number[] | AmaxOptions,
  keepdim: boolean = false,
): Tensor {
  if (isKeywordForm(dim)) return amaxWith('amax', this, dim, keepdim !== false);
  const list = dims('amax', this, dim);
  return call('amax', { self: this }, () => native.amax(this._h, list, keepdim));
};
proto.amin = function amin(
  this: Tensor,
  dim: number | number[] | AmaxOptions,
  keepdim: boolean = false,
): Tensor {
  if (isKeywordForm(dim)) return amaxWith('amin', this, dim, keepdim !== false);
  const list = dims('amin', this, dim);
  return call('amin', { self: this }, () => native.amin(this._h, list, keepdim));
};

proto.argmax = function argmax(this: Tensor, dim?: number | ArgmaxOptions, keepdim: boolean = false): Tensor {
  if (isKeywordForm(dim)) return oneDimWith('argmax', this, dim, keepdim !== false);
  if (dim !== undefined) normalizeDim('argmax', dim, this.ndim);
  return call('argmax', { self: this }, () => native.argmax(this._h, dim, keepdim));
};
proto.argmin = function argmin(this: Tensor, dim?: number | ArgmaxOptions, keepdim: boolean = false): Tensor {
  if (isKeywordForm(dim)) return oneDimWith('argmin', this, dim, keepdim !== false);
  if (dim !== undefined) normalizeDim('argmin', dim, this.ndim);
  return call('argmin', { self: this }, () => native.argmin(this._h, dim, keepdim));
};

function spread(op: 'std' | 'var') {
  const run = native[op];
  return function (
    this: Tensor,
    dim?: number | number[] | SpreadOptions,
    unbiased = true,
    keepdim: boolean = false,
  ): Tensor {
    if (isKeywordForm(dim)) return spreadWith(op, this, dim, unbiased !== true || keepdim !== false);
    checkBoolean(op, 'unbiased', unbiased, true);
    checkBoolean(op, 'keepdim', keepdim, false);
    const list = dim === undefined ? undefined : dims(op, this, dim);
    return call(op, { self: this }, () => run(this._h, list, unbiased, keepdim));
  };
}
proto.std = spread('std');
proto.var = spread('var');

proto.norm = function norm(
  this: Tensor,
  p: number | VectorNormOptions = 2,
  dim?: number | number[],
  keepdim: boolean = false,
): Tensor {
  if (isKeywordForm(p)) return normWith(this, p, dim !== undefined || keepdim !== false);
  checkScalar('norm', 'p', p);
  const list = dim === undefined ? undefined : dims('norm', this, dim);
  return call('norm', { self: this }, () => native.norm(this._h, p, list, keepdim));
};

proto.logsumexp = function logsumexp(
  this: Tensor,
  dim: number | number[] | LogsumexpOptions,
  keepdim: boolean = false,
): Tensor {
  if (isKeywordForm(dim)) return logsumexpWith(this, dim, keepdim !== false);
  const list = dims('logsumexp', this, dim);
  return call('logsumexp', { self: this }, () => native.logsumexp(this._h, list, keepdim));
};

function along(op: 'softmax' | 'logSoftmax' | 'cumsum' | 'cumprod') {
  const run = native[op];
  return function (this: Tensor, dim: number | AlongOptions, options?: ReduceOptions): Tensor {
    if (isKeywordForm(dim)) return alongWith(op, this, dim, options !== undefined);
    checkInt(op, 'dim', dim);
    normalizeDim(op, dim, this.ndim);
    const dtype = optionDtype(op, options);
    return call(op, { self: this }, () => run(this._h, dim, dtype));
  };
}
proto.softmax = along('softmax');
proto.logSoftmax = along('logSoftmax');
proto.cumsum = along('cumsum');
proto.cumprod = along('cumprod');

function truth(op: 'all' | 'any') {
  const run = native[op];
  return function (this: Tensor, dim?: number | ArgmaxOptions, keepdim = false): Tensor {
    if (isKeywordForm(dim)) return oneDimWith(op, this, dim, keepdim !== false);
    if (dim !== undefined) normalizeDim(op, dim, this.ndim);
    return call(op, { self: this }, () => run(this._h, dim, keepdim));
  };
}
proto.all = truth('all');
proto.any = truth('any');

proto.countNonzero = function countNonzero(
  this: Tensor,
  dim?: number | number[] | CountNonzeroOptions,
): Tensor {
  if (isKeywordForm(dim)) return countNonzeroWith(this, dim);
  const list = dim === undefined ? undefined : dims('countNonzero', this, dim);
  return call('countNonzero', { self: this }, () => native.countNonzero(this._h, list));
};
