// The low-level door to the addon's native ops for packages built on this one (the
// functional layer of @flodl/autograd, optimizers in @flodl/nn): tensors in, tensors out,
// no argument validation beyond what libtorch does. Prefer the Tensor methods in user code.
import { callByName, hasNativeOp } from './internal/dispatch.js';

export type { AtenArgs, AtenOp, AtenResult } from './internal/dispatch.js';

/** Low-level access to native ops for the packages of this framework. */
export const aten = {
  /**
   * Calls the native op `name` with Tensors passed as tensors (arrays of Tensors too); a
   * numeric result is a new Tensor, an array result a Tensor[] (its nulls and booleans kept).
   * The arguments and the result are typed per op (AtenArgs, AtenResult): an op the addon
   * does not register, or one that returns plain numbers (shape, numel), does not typecheck.
   * PyTorch: `torch.ops.aten.<name>`, roughly.
   *
   * @param name - a native op (AtenOp)
   * @param args - its arguments, as the op reads them
   * @throws FlodlError ERR_INVALID_ARGUMENT when this build has no op `name` (foreachAdam and
   *   fusedAdam are registered by some builds only: ask `aten.has` first), or an argument is not
   *   what the op reads; the op's own codes (ERR_SHAPE, ERR_DTYPE, ERR_DEVICE, ERR_NATIVE...)
   *   when libtorch refuses it
   * @example
   * ```ts fragment
   * const out = aten.call('conv', input, weight, bias, [1, 1], [0, 0], [1, 1], 1); // Tensor
   * const [values, indices] = aten.call('topk', scores, 5, -1, true, true); // [Tensor, Tensor]
   * ```
   */
  call: callByName,
  /**
   * True when the addon has a native op of this name (any string: for the ops only some builds
   * register, and for names from elsewhere).
   *
   * @example
   * ```ts fragment
   * if (aten.has('fusedAdam')) aten.call('fusedAdam', ...);
   * ```
   */
  has: hasNativeOp,
};
