// Sorting on Tensor: sort, argsort, topk.
import { invalidArgument } from './errors.js';
import { call, callMany } from './internal/methods.js';
import { nativeOps } from './internal/native-ops.js';
import { checkBoolean } from './internal/validate.js';
import type { ValuesIndices } from './ops-reduce.js';
import { normalizeDim, Tensor } from './tensor.js';

// The addon entries this file calls (see internal/native-ops.ts).
const native = nativeOps('sort', 'argsort', 'topk');

declare module './tensor.js' {
  interface Tensor {
    /** Sorted values and their indices along `dim`. PyTorch: `torch.sort`. */
    sort(dim?: number, descending?: boolean, options?: { stable?: boolean }): ValuesIndices;
    /** The indices that sort `dim`. PyTorch: `torch.argsort`. */
    argsort(dim?: number, descending?: boolean): Tensor;
    /** The `k` largest (or smallest) values along `dim` and their indices. PyTorch: `torch.topk`. */
    topk(k: number, dim?: number, largest?: boolean, sorted?: boolean): ValuesIndices;
  }
}

const proto = Tensor.prototype;

proto.sort = function sort(
  this: Tensor,
  dim = -1,
  descending = false,
  options: { stable?: boolean } = {},
): ValuesIndices {
  normalizeDim('sort', dim, this.ndim);
  checkBoolean('sort', 'descending', descending, false);
  const stable = checkBoolean('sort', 'stable', options.stable, false);
  const [values, indices] = callMany('sort', { self: this }, () =>
    native.sort(this._h, dim, descending, stable),
  );
  return { values: values!, indices: indices! };
};

proto.argsort = function argsort(this: Tensor, dim = -1, descending = false): Tensor {
  normalizeDim('argsort', dim, this.ndim);
  return call('argsort', { self: this }, () => native.argsort(this._h, dim, descending, false));
};

proto.topk = function topk(this: Tensor, k: number, dim = -1, largest = true, sorted = true): ValuesIndices {
  const shape = this.shape;
  const d = normalizeDim('topk', dim, shape.length);
  const size = shape.length === 0 ? 1 : shape[d]!;
  if (!Number.isSafeInteger(k) || k < 0 || k > size) {
    throw invalidArgument('topk', 'k', `an integer in [0, ${size}] (the size of dim ${dim})`, k);
  }
  const [values, indices] = callMany('topk', { self: this }, () =>
    native.topk(this._h, k, dim, largest, sorted),
  );
  return { values: values!, indices: indices! };
};
