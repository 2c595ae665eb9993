import { FlodlError, isGradEnabled, setGradEnabled } from '@flodl/tensor-native';

function withGradMode<T>(op: string, enabled: boolean, fn: () => T): T {
  if (typeof fn !== 'function')
    throw new FlodlError('ERR_INVALID_ARGUMENT', `${op} needs a function`, { op });
  const previous = isGradEnabled();
  setGradEnabled(enabled);
  try {
    const result = fn();
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
  } finally {
    setGradEnabled(previous);
  }
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

export { isGradEnabled, setGradEnabled };
