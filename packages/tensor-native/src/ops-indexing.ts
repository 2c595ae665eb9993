// Indexing on Tensor: index tensors and masks, gathering and scattering.
import { FlodlError, invalidArgument } from './errors.js';
import { diagnose } from './internal/diagnose.js';
import { call } from './internal/methods.js';
import { nativeOps } from './internal/native-ops.js';
import { checkBoolean, checkScalar } from './internal/validate.js';
import { normalizeDim, Tensor } from './tensor.js';

// The addon entries this file calls (see internal/native-ops.ts).
const native = nativeOps(
  'indexSelect',
  'index',
  'gather',
  'scatter',
  'scatterValue',
  'scatterAdd',
  'scatterReduce',
  'maskedFillTensor',
  'maskedFill',
  'maskedSelect',
  'nonzero',
);

declare module './tensor.js' {
  interface Tensor {
    /** Rows of `dim` picked by an int64 `index` vector. PyTorch: `torch.index_select`. */
    indexSelect(dim: number, index: Tensor): Tensor;
    /** Advanced indexing `t[i0, i1, ...]` with integer or boolean index tensors. */
    index(indices: Tensor[]): Tensor;
    /** `out[i][j] = self[index[i][j]][j]` for dim 0 (and so on). PyTorch: `torch.gather`. */
    gather(dim: number, index: Tensor): Tensor;
    /** A copy with `src` (or a value) written at `index` along `dim`. PyTorch: `torch.scatter`. */
    scatter(dim: number, index: Tensor, src: Tensor | number): Tensor;
    /** A copy with `src` added at `index` along `dim`. PyTorch: `torch.scatter_add`. */
    scatterAdd(dim: number, index: Tensor, src: Tensor): Tensor;
    /** A copy reduced into at `index` with `sum`, `prod`, `mean`, `amax` or `amin`. PyTorch: `torch.scatter_reduce`. */
    scatterReduce(
      dim: number,
      index: Tensor,
      src: Tensor,
      reduce: 'sum' | 'prod' | 'mean' | 'amax' | 'amin',
      options?: { includeSelf?: boolean },
    ): Tensor;
    /** A copy with `value` where `mask` is true. PyTorch: `torch.masked_fill`. */
    maskedFill(mask: Tensor, value: number | boolean | Tensor): Tensor;
    /** The elements where `mask` is true, as a 1-d tensor. PyTorch: `torch.masked_select`. */
    maskedSelect(mask: Tensor): Tensor;
    /** Indices of non-zero elements, one row per element. PyTorch: `torch.nonzero`. */
    nonzero(): Tensor;
  }
}

const proto = Tensor.prototype;

function checkIndexTensor(op: string, name: string, index: unknown): Tensor {
  if (!(index instanceof Tensor)) throw invalidArgument(op, name, 'an int64 Tensor', index);
  if (index.dtype !== 'int64') {
    throw new FlodlError('ERR_DTYPE', `${name} must hold int64 indices`, {
      op,
      expected: 'int64',
      got: index.dtype,
    });
  }
  return index;
}

proto.indexSelect = function indexSelect(this: Tensor, dim: number, index: Tensor): Tensor {
  normalizeDim('indexSelect', dim, this.ndim);
  checkIndexTensor('indexSelect', 'index', index);
  try {
    return new Tensor(native.indexSelect(this._h, dim, index._h));
  } catch (error) {
    throw diagnose('indexSelect', { self: this, index }, error);
  }
};

proto.index = function index(this: Tensor, indices: Tensor[]): Tensor {
  if (!Array.isArray(indices) || !indices.every((item) => item instanceof Tensor)) {
    throw invalidArgument('index', 'indices', 'an array of Tensors', indices);
  }
  return call('index', { self: this }, () =>
    native.index(
      this._h,
      indices.map((item) => item._h),
    ),
  );
};

proto.gather = function gather(this: Tensor, dim: number, index: Tensor): Tensor {
  normalizeDim('gather', dim, this.ndim);
  checkIndexTensor('gather', 'index', index);
  return call('gather', { self: this, index }, () => native.gather(this._h, dim, index._h));
};

proto.scatter = function scatter(this: Tensor, dim: number, index: Tensor, src: Tensor | number): Tensor {
  normalizeDim('scatter', dim, this.ndim);
  checkIndexTensor('scatter', 'index', index);
  if (src instanceof Tensor)
    return call('scatter', { self: this, index, src }, () => native.scatter(this._h, dim, index._h, src._h));
  checkScalar('scatter', 'src', src);
  return call('scatter', { self: this, index }, () => native.scatterValue(this._h, dim, index._h, src));
};

proto.scatterAdd = function scatterAdd(this: Tensor, dim: number, index: Tensor, src: Tensor): Tensor {
  normalizeDim('scatterAdd', dim, this.ndim);
  checkIndexTensor('scatterAdd', 'index', index);
  return call('scatterAdd', { self: this, index, src }, () =>
    native.scatterAdd(this._h, dim, index._h, src._h),
  );
};

proto.scatterReduce = function scatterReduce(
  this: Tensor,
  dim: number,
  index: Tensor,
  src: Tensor,
  reduce: 'sum' | 'prod' | 'mean' | 'amax' | 'amin',
  options: { includeSelf?: boolean } = {},
): Tensor {
  normalizeDim('scatterReduce', dim, this.ndim);
  checkIndexTensor('scatterReduce', 'index', index);
  if (!['sum', 'prod', 'mean', 'amax', 'amin'].includes(reduce)) {
    throw invalidArgument('scatterReduce', 'reduce', "'sum', 'prod', 'mean', 'amax' or 'amin'", reduce);
  }
  const includeSelf = checkBoolean('scatterReduce', 'includeSelf', options.includeSelf, true);
  return call('scatterReduce', { self: this, index, src }, () =>
    native.scatterReduce(this._h, dim, index._h, src._h, reduce, includeSelf),
  );
};

proto.maskedFill = function maskedFill(this: Tensor, mask: Tensor, value: number | boolean | Tensor): Tensor {
  if (!(mask instanceof Tensor)) throw invalidArgument('maskedFill', 'mask', 'a bool Tensor', mask);
  if (mask.dtype !== 'bool')
    throw new FlodlError('ERR_DTYPE', 'mask must be bool', {
      op: 'maskedFill',
      expected: 'bool',
      got: mask.dtype,
    });
  if (value instanceof Tensor) {
    return call(
      'maskedFill',
      { self: this, mask, value },
      () => native.maskedFillTensor(this._h, mask._h, value._h),
      'broadcast',
    );
  }
  checkScalar('maskedFill', 'value', value);
  return call(
    'maskedFill',
    { self: this, mask },
    () => native.maskedFill(this._h, mask._h, value),
    'broadcast',
  );
};

proto.maskedSelect = function maskedSelect(this: Tensor, mask: Tensor): Tensor {
  if (!(mask instanceof Tensor)) throw invalidArgument('maskedSelect', 'mask', 'a bool Tensor', mask);
  if (mask.dtype !== 'bool')
    throw new FlodlError('ERR_DTYPE', 'mask must be bool', {
      op: 'maskedSelect',
      expected: 'bool',
      got: mask.dtype,
    });
  return call('maskedSelect', { self: this, mask }, () => native.maskedSelect(this._h, mask._h), 'broadcast');
};

proto.nonzero = function nonzero(this: Tensor): Tensor {
  return call('nonzero', { self: this }, () => native.nonzero(this._h));
};
