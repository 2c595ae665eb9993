// Max and average pooling over 1, 2 and 3 spatial dims (PyTorch: torch.nn.functional.max_pool1d
// … avg_pool3d). The adaptive pools live in adaptive-pooling.ts.
import { aten, type Tensor, type ValuesIndices } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkInteger,
  checkOptions,
  checkRank,
  checkTensor,
  expandSizes,
  shapeError,
  shapeText,
  spatialLayouts,
} from './arguments.js';
import type { SpatialSize } from './conv.js';

export * from './adaptive-pooling.js';

/** Options of `maxPool1d`, `maxPool2d` and `maxPool3d`. */
export interface MaxPoolOptions {
  /** Step of the window. Default: `kernelSize`. */
  stride?: SpatialSize;
  /** Implicit -∞ padding on both sides, at most half the kernel size. Default 0. */
  padding?: SpatialSize;
  /** Spacing between window elements. Default 1. */
  dilation?: SpatialSize;
  /** Rounds the output size up instead of down. Default false. */
  ceilMode?: boolean;
  /** Also return the flat (per-plane) index of each maximum. Default false. */
  returnIndices?: boolean;
}

/** Options of `avgPool1d`. */
export interface AvgPool1dOptions {
  /** Step of the window. Default: `kernelSize`. */
  stride?: SpatialSize;
  /** Implicit zero padding on both sides, at most half the kernel size. Default 0. */
  padding?: SpatialSize;
  /** Rounds the output size up instead of down. Default false. */
  ceilMode?: boolean;
  /** Counts the zero padding in the divisor. Default true. */
  countIncludePad?: boolean;
}

/** Options of `avgPool2d` and `avgPool3d`. */
export interface AvgPoolOptions extends AvgPool1dOptions {
  /** Divides every window sum by this instead of the window size. Default: none. */
  divisorOverride?: number;
}

type WithIndices = MaxPoolOptions & { returnIndices: true };
type WithoutIndices = MaxPoolOptions & { returnIndices?: false };

interface Window {
  kernel: number[];
  stride: number[];
  padding: number[];
  dilation: number[];
  ceilMode: boolean;
}

/** Validates a pooling window and checks that every output size is at least 1. */
function checkWindow(
  op: string,
  spatial: number,
  input: Tensor,
  kernelSize: unknown,
  options: MaxPoolOptions,
): Window {
  checkTensor(op, 'input', input);
  checkRank(op, 'input', input, spatialLayouts(spatial));
  const kernel = expandSizes(op, 'kernelSize', kernelSize, spatial, 1);
  const { stride, padding = 0, dilation = 1, ceilMode = false } = options;
  const window: Window = {
    kernel,
    stride: stride === undefined || stride === null ? kernel : expandSizes(op, 'stride', stride, spatial, 1),
    padding: expandSizes(op, 'padding', padding, spatial, 0),
    dilation: expandSizes(op, 'dilation', dilation, spatial, 1),
    ceilMode: checkBoolean(op, 'ceilMode', ceilMode),
  };
  window.padding.forEach((pad, k) => {
    if (pad > Math.floor(kernel[k]! / 2)) {
      throw shapeError(
        op,
        'padding is larger than half the kernel',
        `padding <= kernelSize / 2 (kernelSize ${shapeText(kernel)})`,
        `padding ${shapeText(window.padding)}`,
      );
    }
  });
  const sizes = input.shape.slice(-spatial);
  sizes.forEach((size, k) => {
    if (outputSize(size, window, k) < 1) {
      throw shapeError(
        op,
        'input is too small for the window',
        `spatial sizes that fit kernelSize ${shapeText(kernel)} with dilation ${shapeText(window.dilation)} and padding ${shapeText(window.padding)}`,
        `input ${shapeText(input.shape)}`,
      );
    }
  });
  return window;
}

/** PyTorch's pooling_output_shape: the last window must start inside the (left-padded) input. */
function outputSize(size: number, window: Window, k: number): number {
  const span = size + 2 * window.padding[k]! - window.dilation[k]! * (window.kernel[k]! - 1) - 1;
  const step = window.stride[k]!;
  let count = (window.ceilMode ? Math.ceil(span / step) : Math.floor(span / step)) + 1;
  if (window.ceilMode && (count - 1) * step >= size + window.padding[k]!) count -= 1;
  return count;
}

function maxPool(
  op: string,
  spatial: number,
  input: Tensor,
  kernelSize: SpatialSize,
  options: MaxPoolOptions | undefined,
): Tensor | ValuesIndices {
  const checked = checkOptions(op, options, ['stride', 'padding', 'dilation', 'ceilMode', 'returnIndices']);
  const window = checkWindow(op, spatial, input, kernelSize, checked);
  const returnIndices = checkBoolean(op, 'returnIndices', checked.returnIndices ?? false);
  const result = aten.call(
    'maxPool',
    input,
    window.kernel,
    window.stride,
    window.padding,
    window.dilation,
    window.ceilMode,
    returnIndices,
  );
  if (!returnIndices) return result as Tensor;
  const [values, indices] = result as [Tensor, Tensor];
  return { values, indices };
}

function avgPool(
  op: string,
  spatial: number,
  input: Tensor,
  kernelSize: SpatialSize,
  options: AvgPoolOptions | undefined,
): Tensor {
  const allowed: (keyof AvgPoolOptions)[] = ['stride', 'padding', 'ceilMode', 'countIncludePad'];
  if (spatial > 1) allowed.push('divisorOverride');
  const checked = checkOptions(op, options, allowed);
  const window = checkWindow(op, spatial, input, kernelSize, {
    stride: checked.stride,
    padding: checked.padding,
    ceilMode: checked.ceilMode,
  });
  const countIncludePad = checkBoolean(op, 'countIncludePad', checked.countIncludePad ?? true);
  const divisor =
    checked.divisorOverride === undefined
      ? undefined
      : checkInteger(op, 'divisorOverride', checked.divisorOverride, 1);
  return aten.call(
    'avgPool',
    input,
    window.kernel,
    window.stride,
    window.padding,
    window.ceilMode,
    countIncludePad,
    divisor,
  );
}

/**
 * 1-d max pooling: `out[n, c, l] = max_k input[n, c, stride·l + dilation·k − padding]`.
 *
 * @param input - `(N, C, L)` or unbatched `(C, L)`.
 * @param kernelSize - the window size.
 * @param options - `stride` (`kernelSize`), `padding` (0), `dilation` (1), `ceilMode` (false),
 *   `returnIndices` (false: with true the result is `{ values, indices }`).
 *
 * **Shape**: `(N, C, L) → (N, C, L_out)`, `L_out = ⌊(L + 2·padding − dilation·(kernelSize − 1) − 1) / stride⌋ + 1` (⌈⌉ with `ceilMode`).
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank, padding over half the kernel or an input smaller
 *   than the window; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const { values, indices } = maxPool1d(randn([2, 3, 8]), 2, { returnIndices: true }); // [2, 3, 4] each
 * ```
 * PyTorch: `torch.nn.functional.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)`.
 */
export function maxPool1d(input: Tensor, kernelSize: SpatialSize, options?: WithoutIndices): Tensor;
export function maxPool1d(input: Tensor, kernelSize: SpatialSize, options: WithIndices): ValuesIndices;
export function maxPool1d(
  input: Tensor,
  kernelSize: SpatialSize,
  options?: MaxPoolOptions,
): Tensor | ValuesIndices;
export function maxPool1d(
  input: Tensor,
  kernelSize: SpatialSize,
  options?: MaxPoolOptions,
): Tensor | ValuesIndices {
  return maxPool('maxPool1d', 1, input, kernelSize, options);
}

/**
 * 2-d max pooling: `out[n, c, h, w] = max_{i,j} input[n, c, stride[0]·h + dilation[0]·i − padding[0], stride[1]·w + dilation[1]·j − padding[1]]`.
 *
 * @param input - `(N, C, H, W)` or unbatched `(C, H, W)`.
 * @param kernelSize - the window size, one number or `[kH, kW]`.
 * @param options - `stride` (`kernelSize`), `padding` (0), `dilation` (1), `ceilMode` (false),
 *   `returnIndices` (false: with true the result is `{ values, indices }`, indices into each `H·W` plane).
 *
 * **Shape**: `(N, C, H, W) → (N, C, H_out, W_out)`, each size as in {@link maxPool1d}.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank, padding over half the kernel or an input smaller
 *   than the window; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const pooled = maxPool2d(randn([1, 3, 8, 8]), 3, { stride: 2, padding: 1 }); // [1, 3, 4, 4]
 * ```
 * PyTorch: `torch.nn.functional.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)`.
 */
export function maxPool2d(input: Tensor, kernelSize: SpatialSize, options?: WithoutIndices): Tensor;
export function maxPool2d(input: Tensor, kernelSize: SpatialSize, options: WithIndices): ValuesIndices;
export function maxPool2d(
  input: Tensor,
  kernelSize: SpatialSize,
  options?: MaxPoolOptions,
): Tensor | ValuesIndices;
export function maxPool2d(
  input: Tensor,
  kernelSize: SpatialSize,
  options?: MaxPoolOptions,
): Tensor | ValuesIndices {
  return maxPool('maxPool2d', 2, input, kernelSize, options);
}

/**
 * 3-d max pooling: the maximum over each `kD × kH × kW` window (see {@link maxPool2d}).
 *
 * @param input - `(N, C, D, H, W)` or unbatched `(C, D, H, W)`.
 * @param kernelSize - the window size, one number or `[kD, kH, kW]`.
 * @param options - `stride` (`kernelSize`), `padding` (0), `dilation` (1), `ceilMode` (false), `returnIndices` (false).
 *
 * **Shape**: `(N, C, D, H, W) → (N, C, D_out, H_out, W_out)`, each size as in {@link maxPool1d}.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank, padding over half the kernel or an input smaller
 *   than the window; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const pooled = maxPool3d(randn([1, 2, 4, 4, 4]), 2); // [1, 2, 2, 2, 2]
 * ```
 * PyTorch: `torch.nn.functional.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)`.
 */
export function maxPool3d(input: Tensor, kernelSize: SpatialSize, options?: WithoutIndices): Tensor;
export function maxPool3d(input: Tensor, kernelSize: SpatialSize, options: WithIndices): ValuesIndices;
export function maxPool3d(
  input: Tensor,
  kernelSize: SpatialSize,
  options?: MaxPoolOptions,
): Tensor | ValuesIndices;
export function maxPool3d(
  input: Tensor,
  kernelSize: SpatialSize,
  options?: MaxPoolOptions,
): Tensor | ValuesIndices {
  return maxPool('maxPool3d', 3, input, kernelSize, options);
}

/**
 * 1-d average pooling: `out[n, c, l] = (1 / kernelSize) · Σ_k input[n, c, stride·l + k − padding]`.
 *
 * @param input - `(N, C, L)` or unbatched `(C, L)`.
 * @param kernelSize - the window size.
 * @param options - `stride` (`kernelSize`), `padding` (0), `ceilMode` (false), `countIncludePad` (true).
 *
 * **Shape**: `(N, C, L) → (N, C, L_out)`, `L_out = ⌊(L + 2·padding − kernelSize) / stride⌋ + 1` (⌈⌉ with `ceilMode`).
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank, padding over half the kernel or an input smaller
 *   than the window; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const smooth = avgPool1d(randn([2, 3, 8]), 3, { stride: 1, padding: 1 }); // [2, 3, 8]
 * ```
 * PyTorch: `torch.nn.functional.avg_pool1d(input, kernel_size, stride, padding, ceil_mode, count_include_pad)`.
 */
export function avgPool1d(input: Tensor, kernelSize: SpatialSize, options?: AvgPool1dOptions): Tensor {
  return avgPool('avgPool1d', 1, input, kernelSize, options);
}

/**
 * 2-d average pooling: `out[n, c, h, w] = (1 / (kH·kW)) · Σ_{i,j} input[n, c, stride[0]·h + i − padding[0], stride[1]·w + j − padding[1]]`.
 *
 * @param input - `(N, C, H, W)` or unbatched `(C, H, W)`.
 * @param kernelSize - the window size, one number or `[kH, kW]`.
 * @param options - `stride` (`kernelSize`), `padding` (0), `ceilMode` (false), `countIncludePad`
 *   (true), `divisorOverride` (none).
 *
 * **Shape**: `(N, C, H, W) → (N, C, H_out, W_out)`, each size as in {@link avgPool1d}.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank, padding over half the kernel or an input smaller
 *   than the window; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const pooled = avgPool2d(randn([1, 3, 8, 8]), 2); // [1, 3, 4, 4]
 * ```
 * PyTorch: `torch.nn.functional.avg_pool2d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)`.
 */
export function avgPool2d(input: Tensor, kernelSize: SpatialSize, options?: AvgPoolOptions): Tensor {
  return avgPool('avgPool2d', 2, input, kernelSize, options);
}

/**
 * 3-d average pooling: the mean over each `kD × kH × kW` window (see {@link avgPool2d}).
 *
 * @param input - `(N, C, D, H, W)` or unbatched `(C, D, H, W)`.
 * @param kernelSize - the window size, one number or `[kD, kH, kW]`.
 * @param options - `stride` (`kernelSize`), `padding` (0), `ceilMode` (false), `countIncludePad`
 *   (true), `divisorOverride` (none).
 *
 * **Shape**: `(N, C, D, H, W) → (N, C, D_out, H_out, W_out)`, each size as in {@link avgPool1d}.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank, padding over half the kernel or an input smaller
 *   than the window; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const pooled = avgPool3d(randn([1, 2, 4, 4, 4]), 2); // [1, 2, 2, 2, 2]
 * ```
 * PyTorch: `torch.nn.functional.avg_pool3d(input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)`.
 */
export function avgPool3d(input: Tensor, kernelSize: SpatialSize, options?: AvgPoolOptions): Tensor {
  return avgPool('avgPool3d', 3, input, kernelSize, options);
}
