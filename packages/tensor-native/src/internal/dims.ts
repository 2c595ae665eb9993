// The dims argument of the reductions, checked against the tensor's rank before native code.
import { normalizeDim, type Tensor } from '../tensor.js';

/** `dim` (one or a list) as a list, each entry checked to be a dim of `self`. */
export function dims(op: string, self: Tensor, dim: number | number[]): number[] {
  const ndim = self.ndim;
  const list = Array.isArray(dim) ? dim : [dim];
  for (const item of list) normalizeDim(op, item, ndim);
  return list;
}
