// Padding (PyTorch: torch.nn.functional.pad): constant, reflect, replicate and circular.
import { aten, FlodlError, invalidArgument, type Tensor } from '@flodl/tensor-native';
import { checkNumber, checkOneOf, checkOptions, checkTensor, shapeError, shapeText } from './arguments.js';

/** Options of `pad`. */
export interface PadOptions {
  /**
   * `'constant'` fills with `value`; `'reflect'` mirrors without repeating the edge; `'replicate'`
   * repeats the edge; `'circular'` wraps around. Default `'constant'`.
   */
  mode?: 'constant' | 'reflect' | 'replicate' | 'circular';
  /** The fill value of `'constant'` mode. Default 0. */
  value?: number;
}

const MODES = ['constant', 'reflect', 'replicate', 'circular'] as const;
const LAYOUTS = [
  '(C, W) or 3-d (N, C, W)',
  '(C, H, W) or 4-d (N, C, H, W)',
  '(C, D, H, W) or 5-d (N, C, D, H, W)',
];

/**
 * Pads the last dims: `pad = [left, right]` pads the last dim, `[left, right, top, bottom]` the
 * last two, and so on (pairs from the last dim backwards). Negative constant padding crops.
 *
 * @param input - `(*)` for `'constant'`; for the other modes, `(C, *S)` or `(N, C, *S)` with one
 *   to three padded spatial dims `S`.
 * @param pad - an even number of integers, at most two per dim of `input`.
 * @param options - `mode` (`'constant'`), `value` (0, constant mode only).
 *
 * **Shape**: each padded dim grows by its two pads: `(*, W) → (*, W + left + right)`.
 *
 * @throws FlodlError `ERR_SHAPE` when the input's rank does not fit the mode and `pad`, or a
 *   reflect pad is not smaller than its dim (circular: not larger); `ERR_INVALID_ARGUMENT` for an
 *   odd-length `pad`, a `value` outside constant mode, or an unknown option.
 * @example
 * ```ts
 * const padded = pad(image, [1, 1, 2, 2], { mode: 'reflect' }); // (N, C, H + 4, W + 2)
 * ```
 * PyTorch: `torch.nn.functional.pad(input, pad, mode, value)`.
 */
export function pad(input: Tensor, pad: readonly number[], options?: PadOptions): Tensor {
  const op = 'pad';
  checkTensor(op, 'input', input);
  if (!Array.isArray(pad) || pad.length % 2 !== 0 || !pad.every((size) => Number.isSafeInteger(size))) {
    throw invalidArgument(op, 'pad', 'an even number of integers: [left, right, top, bottom, …]', pad);
  }
  const checked = checkOptions(op, options, ['mode', 'value']);
  const mode = checkOneOf(op, 'mode', checked.mode ?? 'constant', MODES);
  const padded = pad.length / 2;
  if (padded > input.ndim) {
    throw shapeError(
      op,
      'pad has more pairs than input has dims',
      `at most ${input.ndim} pairs (input rank)`,
      `${padded} pairs`,
    );
  }
  if (mode === 'constant') {
    const value = checked.value === undefined ? undefined : checkNumber(op, 'value', checked.value);
    return aten.call(op, input, pad, mode, value);
  }
  if (checked.value !== undefined) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `mode '${mode}' takes no value`, {
      op,
      expected: "value only with mode 'constant'",
      got: `value ${checked.value}`,
    });
  }
  if (padded > 3 || (input.ndim !== padded + 1 && input.ndim !== padded + 2)) {
    const layout =
      padded <= 3 ? `a ${padded + 1}-d ${LAYOUTS[padded - 1]} input` : 'one to three padded dims';
    throw shapeError(
      op,
      `${mode} padding of ${padded} dims does not fit the input`,
      layout,
      `input ${shapeText(input.shape)}`,
    );
  }
  checkPadSizes(op, mode, input, pad);
  // libtorch 1.13 pads circularly only with a batch dim.
  if (mode === 'circular' && input.ndim === padded + 1) {
    const batched = input.unsqueeze(0);
    const output = aten.call(op, batched, pad, mode, undefined);
    try {
      return output.squeeze(0);
    } finally {
      batched.dispose();
      output.dispose();
    }
  }
  return aten.call(op, input, pad, mode, undefined);
}

/** Reflect pads must be smaller than their dim, circular ones at most as large. */
function checkPadSizes(op: string, mode: string, input: Tensor, pad: readonly number[]): void {
  if (mode === 'replicate') return;
  pad.forEach((size, k) => {
    const dim = input.ndim - 1 - Math.floor(k / 2);
    const length = input.shape[dim]!;
    const fits = mode === 'reflect' ? size < length : size <= length;
    if (!fits) {
      const bound =
        mode === 'reflect'
          ? `pads smaller than the dim (< ${length})`
          : `pads at most the dim (<= ${length})`;
      throw shapeError(
        op,
        `${mode} pad ${k} is too large for dim ${dim}`,
        bound,
        `pad ${shapeText(pad)} on input ${shapeText(input.shape)}`,
      );
    }
  });
}
