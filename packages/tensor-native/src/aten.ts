// The low-level door to the addon's native ops for packages built on this one (the
// functional layer of @flodl/autograd, optimizers in @flodl/nn): tensors in, tensors out,
// no argument validation beyond what libtorch does. Prefer the Tensor methods in user code.
import { callByName, hasNativeOp } from './internal/dispatch.js';

/** Low-level access to native ops for the packages of this framework. */
export const aten = {
  /**
   * Calls the native op `name` with Tensors passed as tensors (arrays of Tensors too); a
   * numeric result is a new Tensor, an array result a Tensor[] (its nulls and booleans kept).
   * Failures are FlodlErrors.
   *
   * @example aten.call('conv2d', input, weight, bias, [1, 1], [0, 0], [1, 1], 1)
   */
  call: callByName,
  /** True when the addon has a native op of this name. */
  has: hasNativeOp,
};
