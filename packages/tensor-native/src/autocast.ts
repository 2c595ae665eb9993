// The autocast switch of libtorch (mixed precision), for @flodl/nn's `autocast` and the
// trainer. Use `autocast` from @flodl/nn in user code.
import { type DType, parseDType } from './dtype.js';
import { FlodlError, invalidArgument } from './errors.js';
import { dtypeCode, dtypeFromCode } from './internal/codes.js';
import * as runtime from './internal/process-runtime.js';

/** Autocast state of one device type. */
export interface AutocastState {
  enabled: boolean;
  dtype: DType;
}

/** Whether autocast is on for 'cpu' or 'cuda' ops on this thread, and its dtype. */
export function autocastState(deviceType: 'cpu' | 'cuda'): AutocastState {
  if (deviceType !== 'cpu' && deviceType !== 'cuda')
    throw invalidArgument('autocastState', 'deviceType', "'cpu' or 'cuda'", deviceType);
  const [enabled, code] = runtime.autocastState(deviceType === 'cuda');
  return { enabled, dtype: dtypeFromCode(code) };
}

/**
 * Runs `fn` with libtorch's autocast set for one device type, restoring the previous state
 * afterwards (also on throw). Nestable.
 * @throws FlodlError ERR_INVALID_ARGUMENT for an async `fn` (the state would leak into other work)
 */
export function runWithAutocast<T>(
  deviceType: 'cpu' | 'cuda',
  dtype: DType,
  enabled: boolean,
  fn: () => T,
): T {
  const previous = autocastState(deviceType);
  const code = dtypeCode(parseDType('autocast', dtype));
  const cuda = deviceType === 'cuda';
  runtime.autocastEnter(cuda, enabled, code);
  try {
    const result = fn();
    if (result instanceof Promise) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'autocast cannot follow async functions', {
        op: 'autocast',
        expected: 'a synchronous function',
        got: 'a function returning a Promise',
      });
    }
    return result;
  } finally {
    runtime.autocastExit(cuda, previous.enabled, dtypeCode(previous.dtype));
  }
}
