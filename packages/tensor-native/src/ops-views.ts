// Views and layout on Tensor: reshaping, dims, slicing, splitting, tiling, triangles.
import { FlodlError, invalidArgument } from './errors.js';
import { diagnose } from './internal/diagnose.js';
import { call, callMany } from './internal/methods.js';
import { integerList, nativeOps } from './internal/native-ops.js';
import { checkInt, checkIntList, checkNonNegativeInteger } from './internal/validate.js';
import { normalizeDim, Tensor } from './tensor.js';

// The addon entries this file calls (see internal/native-ops.ts).
const native = nativeOps(
  'reshape',
  'view',
  'flatten',
  'unflatten',
  'squeeze',
  'unsqueeze',
  'transpose',
  'permute',
  'movedim',
  'expand',
  'broadcastTo',
  'narrow',
  'slice',
  'select',
  'chunk',
  'split',
  'unbind',
  'repeat',
  'repeatInterleave',
  'flip',
  'roll',
  'tril',
  'triu',
  'diag',
);

declare module './tensor.js' {
  interface Tensor {
    /** The same data with a new shape (one size may be -1); a view when possible. PyTorch: `torch.reshape`. */
    reshape(...shape: number[] | [number[]]): Tensor;
    /** A view with a new shape; fails on incompatible strides. PyTorch: `Tensor.view`. */
    view(...shape: number[] | [number[]]): Tensor;
    /** Merges dims `startDim..endDim` into one. PyTorch: `torch.flatten`. */
    flatten(startDim?: number, endDim?: number): Tensor;
    /** Splits `dim` into `sizes`. PyTorch: `Tensor.unflatten`. */
    unflatten(dim: number, sizes: number[]): Tensor;
    /** Drops size-1 dims (only `dim` when given). PyTorch: `torch.squeeze`. */
    squeeze(dim?: number): Tensor;
    /** Inserts a size-1 dim at `dim`. PyTorch: `torch.unsqueeze`. */
    unsqueeze(dim: number): Tensor;
    /** Swaps two dims (a view). PyTorch: `torch.transpose`. */
    transpose(dim0: number, dim1: number): Tensor;
    /** Reorders the dims (a view). PyTorch: `torch.permute`. */
    permute(...dims: number[] | [number[]]): Tensor;
    /**
     * The tensor with all its dims reversed (a view, differentiable): `permute(n-1, …, 1, 0)`;
     * a matrix's transpose, and a new handle on the same data for 0-d and 1-d tensors. Each
     * read is a new handle, freed like any op result.
     *
     * As PyTorch does (1.13 and 2.x), reading it on a tensor that is neither 0-d nor 2-d still
     * reverses the dims but warns once per process (`console.warn`): PyTorch deprecates that use
     * and means to make it an error. Use {@link Tensor.mT} for batches of matrices, or
     * `permute` to reverse the dims on purpose.
     *
     * **Shape**: `[a, b]` → `[b, a]`; `[a, b, c]` → `[c, b, a]`.
     * @throws FlodlError ERR_DISPOSED on a freed tensor
     * @example
     * ```ts fragment
     * const m = arange(6).reshape(2, 3);
     * m.T.shape; // [3, 2]
     * ```
     * PyTorch: `Tensor.T`.
     */
    readonly T: Tensor;
    /**
     * The last two dims swapped (a view, differentiable): the transpose of each matrix of a
     * batch, `transpose(-2, -1)`. Each read is a new handle, freed like any op result.
     *
     * **Shape**: `[*, m, n]` → `[*, n, m]`.
     * @throws FlodlError ERR_SHAPE for a tensor of fewer than 2 dims
     * @example
     * ```ts fragment
     * const batch = zeros([4, 2, 3]);
     * batch.mT.shape; // [4, 3, 2]
     * ```
     * PyTorch: `Tensor.mT`.
     */
    readonly mT: Tensor;
    /** Moves dims to new positions. PyTorch: `torch.movedim`. */
    movedim(source: number | number[], destination: number | number[]): Tensor;
    /** Repeats size-1 dims without copying (-1 keeps a size). PyTorch: `Tensor.expand`. */
    expand(...sizes: number[] | [number[]]): Tensor;
    /** Expands to `other`'s shape. PyTorch: `Tensor.expand_as`. */
    expandAs(other: Tensor): Tensor;
    /** Broadcasts to `shape`. PyTorch: `torch.broadcast_to`. */
    broadcastTo(shape: number[]): Tensor;
    /** `length` elements of `dim` from `start` (a view). PyTorch: `torch.narrow`. */
    narrow(dim: number, start: number, length: number): Tensor;
    /** Python's `t[start:end:step]` along `dim` (a view; negative bounds count from the end). */
    slice(dim: number, start?: number, end?: number, step?: number): Tensor;
    /** Python's `t[index]` along `dim`, dropping that dim (a view). PyTorch: `torch.select`. */
    select(dim: number, index: number): Tensor;
    /** `chunks` nearly equal pieces along `dim`. PyTorch: `torch.chunk`. */
    chunk(chunks: number, dim?: number): Tensor[];
    /** Pieces of `size` (or the listed sizes) along `dim`. PyTorch: `torch.split`. */
    split(sizeOrSizes: number | number[], dim?: number): Tensor[];
    /** Every slice along `dim`, without the dim. PyTorch: `torch.unbind`. */
    unbind(dim?: number): Tensor[];
    /** Tiles the tensor. PyTorch: `Tensor.repeat`. */
    repeat(...sizes: number[] | [number[]]): Tensor;
    /** Repeats each element `repeats` times along `dim` (flattened when omitted). */
    repeatInterleave(repeats: number, dim?: number): Tensor;
    /** Reverses the order along `dims`. PyTorch: `torch.flip`. */
    flip(dims: number | number[]): Tensor;
    /** Rotates elements along `dims` by `shifts`. PyTorch: `torch.roll`. */
    roll(shifts: number | number[], dims: number | number[]): Tensor;
    /** Lower triangle (below `diagonal`). PyTorch: `torch.tril`. */
    tril(diagonal?: number): Tensor;
    /** Upper triangle (above `diagonal`). PyTorch: `torch.triu`. */
    triu(diagonal?: number): Tensor;
    /** The diagonal of a matrix, or a diagonal matrix from a vector. PyTorch: `torch.diag`. */
    diag(diagonal?: number): Tensor;
  }
}

const proto = Tensor.prototype;

function sizesOf(op: string, args: number[] | [number[]]): number[] {
  const list = (args.length === 1 && Array.isArray(args[0]) ? args[0] : args) as number[];
  for (let k = 0; k < list.length; k++) {
    if (!Number.isSafeInteger(list[k])) return checkIntList(op, 'shape', list);
  }
  return list;
}

function checkShapeVolume(op: string, self: Tensor, shape: number[]): void {
  let known = 1;
  let inferred = 0;
  for (const size of shape) {
    if (size === -1) inferred++;
    else if (size < 0) throw invalidArgument(op, 'shape', 'sizes >= 0 (and at most one -1)', shape);
    else known *= size;
  }
  const numel = self.numel;
  const ok =
    inferred > 1
      ? false
      : inferred === 1
        ? known === 0
          ? numel === 0
          : numel % known === 0
        : known === numel;
  if (!ok) {
    throw new FlodlError('ERR_SHAPE', 'the new shape does not hold the same number of elements', {
      op,
      expected: `a shape with ${numel} elements (at most one -1)`,
      got: `[${shape.join(', ')}] for a tensor of shape [${self.shape.join(', ')}]`,
    });
  }
}

// A size list of up to four entries goes to the addon as plain number arguments: reading a
// list costs a native round trip per query (is it a typed array, which one, where), numbers
// one read each.
type SizesNative = (h: number, ...sizes: number[] | [Float64Array | readonly number[]]) => number;

function withSizes(run: SizesNative, h: number, sizes: readonly number[]): number {
  switch (sizes.length) {
    case 1:
      return run(h, sizes[0]!);
    case 2:
      return run(h, sizes[0]!, sizes[1]!);
    case 3:
      return run(h, sizes[0]!, sizes[1]!, sizes[2]!);
    case 4:
      return run(h, sizes[0]!, sizes[1]!, sizes[2]!, sizes[3]!);
    default:
      return run(h, integerList(sizes));
  }
}

function reshaping(op: 'reshape' | 'view', run: SizesNative) {
  return function (this: Tensor, ...args: number[] | [number[]]): Tensor {
    const shape = sizesOf(op, args);
    try {
      return new Tensor(withSizes(run, this._h, shape));
    } catch (error) {
      const diagnosed = diagnose(op, { self: this }, error, 'none');
      if (diagnosed === error) checkShapeVolume(op, this, shape);
      throw diagnosed;
    }
  };
}
proto.reshape = reshaping('reshape', native.reshape);
proto.view = reshaping('view', native.view);

proto.flatten = function flatten(this: Tensor, startDim = 0, endDim = -1): Tensor {
  const ndim = this.ndim;
  const start = normalizeDim('flatten', startDim, ndim, 'startDim');
  const end = normalizeDim('flatten', endDim, ndim, 'endDim');
  if (start > end) throw invalidArgument('flatten', 'startDim', `a dim <= endDim (${end})`, startDim);
  return call('flatten', { self: this }, () => native.flatten(this._h, startDim, endDim));
};

proto.unflatten = function unflatten(this: Tensor, dim: number, sizes: number[]): Tensor {
  normalizeDim('unflatten', dim, this.ndim);
  checkIntList('unflatten', 'sizes', sizes);
  return call('unflatten', { self: this }, () => native.unflatten(this._h, dim, sizes));
};

proto.squeeze = function squeeze(this: Tensor, dim?: number): Tensor {
  if (dim !== undefined) normalizeDim('squeeze', dim, this.ndim);
  return call('squeeze', { self: this }, () => native.squeeze(this._h, dim));
};

proto.unsqueeze = function unsqueeze(this: Tensor, dim: number): Tensor {
  normalizeDim('unsqueeze', dim, this.ndim + 1);
  return call('unsqueeze', { self: this }, () => native.unsqueeze(this._h, dim));
};

proto.transpose = function transpose(this: Tensor, dim0: number, dim1: number): Tensor {
  const ndim = this.ndim;
  normalizeDim('transpose', dim0, ndim, 'dim0');
  normalizeDim('transpose', dim1, ndim, 'dim1');
  return call('transpose', { self: this }, () => native.transpose(this._h, dim0, dim1));
};

proto.permute = function permute(this: Tensor, ...args: number[] | [number[]]): Tensor {
  const order = sizesOf('permute', args);
  const ndim = this.ndim;
  const seen = new Set(order.map((dim) => normalizeDim('permute', dim, ndim)));
  if (order.length !== ndim || seen.size !== ndim) {
    throw invalidArgument('permute', 'dims', `a permutation of the ${ndim} dims`, order);
  }
  return call('permute', { self: this }, () => withSizes(native.permute, this._h, order));
};

// PyTorch warns once per process on a T of neither 0 nor 2 dims (TORCH_WARN_ONCE).
let warnedReversedT = false;

Object.defineProperty(proto, 'T', {
  get(this: Tensor): Tensor {
    const ndim = this.ndim;
    if (ndim !== 2 && ndim !== 0 && !warnedReversedT) {
      warnedReversedT = true;
      console.warn(
        `[flodl] Tensor.T on a ${ndim}-d tensor reverses all its dims; PyTorch deprecates T on ` +
          'tensors other than 0-d and 2-d. Use mT to transpose batches of matrices, or ' +
          'permute(...) to reverse the dims.',
      );
    }
    const order: number[] = new Array(ndim);
    for (let k = 0; k < ndim; k++) order[k] = ndim - 1 - k;
    return call('T', { self: this }, () => withSizes(native.permute, this._h, order));
  },
});

Object.defineProperty(proto, 'mT', {
  get(this: Tensor): Tensor {
    const ndim = this.ndim;
    if (ndim < 2) {
      throw new FlodlError('ERR_SHAPE', 'mT transposes matrices: the tensor needs at least 2 dims', {
        op: 'mT',
        expected: 'a matrix or a batch of matrices (2 dims or more)',
        got: `a ${ndim}-d tensor of shape [${this.shape.join(', ')}]`,
      });
    }
    return call('mT', { self: this }, () => native.transpose(this._h, -2, -1));
  },
});

proto.movedim = function movedim(
  this: Tensor,
  source: number | number[],
  destination: number | number[],
): Tensor {
  const from = checkIntList('movedim', 'source', source);
  const to = checkIntList('movedim', 'destination', destination);
  return call('movedim', { self: this }, () => native.movedim(this._h, from, to));
};

proto.expand = function expand(this: Tensor, ...args: number[] | [number[]]): Tensor {
  const sizes = sizesOf('expand', args);
  return call(
    'expand',
    { self: this },
    () => withSizes(native.expand, this._h, sizes),
    'none',
    () => {
      const shape = this.shape;
      const offset = sizes.length - shape.length;
      const ok =
        offset >= 0 &&
        shape.every((size, k) => size === 1 || sizes[k + offset] === -1 || sizes[k + offset] === size);
      if (!ok) {
        throw new FlodlError('ERR_SHAPE', 'cannot expand: only size-1 dims can grow', {
          op: 'expand',
          expected: `a shape whose trailing dims match [${shape.join(', ')}] or are 1 there`,
          got: `[${sizes.join(', ')}]`,
        });
      }
    },
  );
};

proto.expandAs = function expandAs(this: Tensor, other: Tensor): Tensor {
  if (!(other instanceof Tensor)) throw invalidArgument('expandAs', 'other', 'a Tensor', other);
  return this.expand([...other.shape]);
};

proto.broadcastTo = function broadcastTo(this: Tensor, shape: number[]): Tensor {
  const sizes = checkIntList('broadcastTo', 'shape', shape);
  return call('broadcastTo', { self: this }, () => native.broadcastTo(this._h, sizes));
};

proto.narrow = function narrow(this: Tensor, dim: number, start: number, length: number): Tensor {
  const shape = this.shape;
  const d = normalizeDim('narrow', dim, shape.length);
  const size = shape[d] ?? 1;
  checkInt('narrow', 'start', start);
  checkNonNegativeInteger('narrow', 'length', length);
  const begin = start < 0 ? start + size : start;
  if (begin < 0 || begin + length > size) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'range out of bounds', {
      op: 'narrow',
      expected: `start + length <= ${size} (the size of dim ${dim})`,
      got: `start ${start}, length ${length}`,
    });
  }
  try {
    return new Tensor(native.narrow(this._h, dim, start, length));
  } catch (error) {
    throw diagnose('narrow', { self: this }, error);
  }
};

proto.slice = function slice(this: Tensor, dim: number, start?: number, end?: number, step = 1): Tensor {
  normalizeDim('slice', dim, this.ndim);
  if (start !== undefined) checkInt('slice', 'start', start);
  if (end !== undefined) checkInt('slice', 'end', end);
  if (!Number.isSafeInteger(step) || step <= 0)
    throw invalidArgument('slice', 'step', 'a positive integer', step);
  return call('slice', { self: this }, () => native.slice(this._h, dim, start, end, step));
};

proto.select = function select(this: Tensor, dim: number, index: number): Tensor {
  const shape = this.shape;
  const d = normalizeDim('select', dim, shape.length);
  const size = shape[d] ?? 0;
  if (!Number.isSafeInteger(index) || index < -size || index >= size) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'index out of range', {
      op: 'select',
      expected: `an integer in [${-size}, ${size - 1}] for dim ${dim} of shape [${shape.join(', ')}]`,
      got: String(index),
    });
  }
  try {
    return new Tensor(native.select(this._h, dim, index));
  } catch (error) {
    throw diagnose('select', { self: this }, error);
  }
};

proto.chunk = function chunk(this: Tensor, chunks: number, dim = 0): Tensor[] {
  if (!Number.isSafeInteger(chunks) || chunks < 1)
    throw invalidArgument('chunk', 'chunks', 'a positive integer', chunks);
  normalizeDim('chunk', dim, this.ndim);
  return callMany('chunk', { self: this }, () => native.chunk(this._h, chunks, dim));
};

proto.split = function split(this: Tensor, sizeOrSizes: number | number[], dim = 0): Tensor[] {
  const shape = this.shape;
  const d = normalizeDim('split', dim, shape.length);
  if (typeof sizeOrSizes === 'number') {
    if (!Number.isSafeInteger(sizeOrSizes) || sizeOrSizes < 1)
      throw invalidArgument('split', 'size', 'a positive integer', sizeOrSizes);
  } else {
    const sizes = checkIntList('split', 'sizes', sizeOrSizes);
    const total = sizes.reduce((sum, size) => sum + size, 0);
    if (total !== shape[d]) {
      throw new FlodlError('ERR_SHAPE', 'split sizes must add up to the size of dim', {
        op: 'split',
        expected: `sizes summing to ${shape[d]}`,
        got: `[${sizes.join(', ')}] (sum ${total})`,
      });
    }
  }
  return callMany('split', { self: this }, () => native.split(this._h, sizeOrSizes, dim));
};

proto.unbind = function unbind(this: Tensor, dim = 0): Tensor[] {
  normalizeDim('unbind', dim, this.ndim);
  return callMany('unbind', { self: this }, () => native.unbind(this._h, dim));
};

proto.repeat = function repeat(this: Tensor, ...args: number[] | [number[]]): Tensor {
  const sizes = sizesOf('repeat', args);
  if (sizes.length < this.ndim) {
    throw invalidArgument('repeat', 'sizes', `at least ${this.ndim} repeat counts (one per dim)`, sizes);
  }
  return call('repeat', { self: this }, () => native.repeat(this._h, sizes));
};

proto.repeatInterleave = function repeatInterleave(this: Tensor, repeats: number, dim?: number): Tensor {
  checkNonNegativeInteger('repeatInterleave', 'repeats', repeats);
  if (dim !== undefined) normalizeDim('repeatInterleave', dim, this.ndim);
  return call('repeatInterleave', { self: this }, () => native.repeatInterleave(this._h, repeats, dim));
};

proto.flip = function flip(this: Tensor, dims: number | number[]): Tensor {
  const list = checkIntList('flip', 'dims', dims);
  for (const dim of list) normalizeDim('flip', dim, this.ndim);
  return call('flip', { self: this }, () => native.flip(this._h, list));
};

proto.roll = function roll(this: Tensor, shifts: number | number[], dims: number | number[]): Tensor {
  const shiftList = checkIntList('roll', 'shifts', shifts);
  const dimList = checkIntList('roll', 'dims', dims);
  if (shiftList.length !== dimList.length)
    throw invalidArgument('roll', 'dims', `${shiftList.length} dims (one per shift)`, dims);
  for (const dim of dimList) normalizeDim('roll', dim, this.ndim);
  return call('roll', { self: this }, () => native.roll(this._h, shiftList, dimList));
};

proto.tril = function tril(this: Tensor, diagonal = 0): Tensor {
  checkInt('tril', 'diagonal', diagonal);
  return call('tril', { self: this }, () => native.tril(this._h, diagonal));
};
proto.triu = function triu(this: Tensor, diagonal = 0): Tensor {
  checkInt('triu', 'diagonal', diagonal);
  return call('triu', { self: this }, () => native.triu(this._h, diagonal));
};
proto.diag = function diag(this: Tensor, diagonal = 0): Tensor {
  checkInt('diag', 'diagonal', diagonal);
  return call('diag', { self: this }, () => native.diag(this._h, diagonal));
};
