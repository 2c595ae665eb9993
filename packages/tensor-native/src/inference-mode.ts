// libtorch's inference mode (c10::InferenceMode), for @flodl/autograd's `inferenceMode`. Use
// `inferenceMode` from @flodl/autograd in user code.
import { invalidArgument } from './errors.js';
import * as autograd from './internal/autograd-state.js';
import { checkBoolean } from './internal/validate.js';

/**
 * Calls `fn` with libtorch's own `c10::InferenceMode` guard held in the addon around the call
 * (`enabled` false: a normal-mode region inside an inference-mode one), and returns what `fn`
 * returned. The guard sets the thread's autograd state and the dispatch keys autograd adds, and
 * restores both when `fn` returns or throws; `fn`'s exception reaches the caller unchanged.
 * Nestable. A Promise `fn` returns is returned as it is: its later work runs outside the guard.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT when `fn` is not a function or `enabled` not a boolean
 * PyTorch: `torch.inference_mode(mode)`'s guard, `c10::InferenceMode` in C++.
 */
export function runInInferenceMode<T>(enabled: boolean, fn: () => T): T {
  checkBoolean('inferenceMode', 'mode', enabled);
  if (typeof fn !== 'function') throw invalidArgument('inferenceMode', 'fn', 'a function', fn);
  return autograd.inferenceMode(fn, enabled);
}

/**
 * True inside inference mode on this thread. PyTorch: `torch.is_inference_mode_enabled()`.
 * @example isInferenceModeEnabled(); // false outside inferenceMode(() => …)
 */
export function isInferenceModeEnabled(): boolean {
  return autograd.isInferenceModeEnabled();
}
