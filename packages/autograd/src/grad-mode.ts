import {
  checkOptions,
  FlodlError,
  isGradEnabled,
  isInferenceModeEnabled,
  runInInferenceMode,
  setGradEnabled,
} from '@flodl/tensor-native';

function withGradMode<T>(op: string, enabled: boolean, fn: () => T): T {
  checkFunction(op, fn);
  const previous = isGradEnabled();
  setGradEnabled(enabled);
  try {
    return checkSynchronous(op, fn());
  } finally {
    setGradEnabled(previous);
  }
}

function checkFunction(op: string, fn: unknown): void {
  if (typeof fn !== 'function')
    throw new FlodlError('ERR_INVALID_ARGUMENT', `${op} needs a function`, { op });
}

function checkSynchronous<T>(op: string, result: T): T {
  if (result instanceof Promise) {
    throw new FlodlError(
      'ERR_AUTOGRAD',
      `${op} cannot follow async functions: the mode would leak into other work`,
      {
        op,
        expected: 'a synchronous function',
        got: 'a function returning a Promise',
      },
    );
  }
  return result;
}

/**
 * Runs `fn` with autograd recording off (nestable, restored on throw): results of ops do not
 * require grad and no graph is kept. PyTorch: `with torch.no_grad():`.
 * @example const prediction = noGrad(() => model.forward(x));
 */
export function noGrad<T>(fn: () => T): T {
  return withGradMode('noGrad', false, fn);
}

/** Runs `fn` with autograd recording on, even inside `noGrad`. PyTorch: `with torch.enable_grad():`. */
export function enableGrad<T>(fn: () => T): T {
  return withGradMode('enableGrad', true, fn);
}

/** Options of {@link inferenceMode}. */
export interface InferenceModeOptions {
  /** false runs `fn` in normal mode, even inside another `inferenceMode`. Default true. */
  mode?: boolean;
}

/**
 * Runs `fn` in inference mode: libtorch's own `c10::InferenceMode` guard is held (by the addon)
 * around the call, a stricter and faster `noGrad`. Inside, no op is recorded (results never
 * require grad, even of inputs that do, and even under `enableGrad`), `isGradEnabled()` is
 * false, and every tensor made is an inference tensor (`t.isInference`): libtorch keeps no
 * version counter or view tracking for it. Outside inference mode an inference tensor cannot
 * be saved for a backward pass (an op with a tensor that requires grad) nor changed in place:
 * both throw ERR_AUTOGRAD; `clone()` it there to get a normal tensor. Views and in-place
 * changes inside of normal tensors stay normal tensors.
 *
 * Nestable, and restored on throw (the exception reaches the caller unchanged); `{ mode: false }`
 * runs `fn` in normal mode inside an outer one. Thread-local: it applies to this thread only
 * (each worker thread has its own).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT when `fn` is not a function or an option is unknown;
 *   ERR_AUTOGRAD when `fn` returns a Promise (the mode cannot follow async work: it is over
 *   when `fn` returns)
 * @example
 * ```ts fragment
 * const logits = inferenceMode(() => model.forward(batch));
 * logits.requiresGrad; // false
 * logits.isInference; // true
 * ```
 * PyTorch: `with torch.inference_mode():` (`torch.inference_mode(mode=False)` for `{ mode: false }`).
 */
export function inferenceMode<T>(fn: () => T, options: InferenceModeOptions = {}): T {
  checkFunction('inferenceMode', fn);
  const { mode = true } = checkOptions('inferenceMode', options, ['mode']);
  return checkSynchronous('inferenceMode', runInInferenceMode(mode, fn));
}

export { isGradEnabled, isInferenceModeEnabled, setGradEnabled };
