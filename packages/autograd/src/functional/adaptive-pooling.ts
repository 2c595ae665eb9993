// Adaptive pooling: the window adapts so that the output has the requested size (PyTorch:
// torch.nn.functional.adaptive_avg_pool1d … adaptive_max_pool3d). Re-exported by pooling.ts.
import { aten, invalidArgument, type Tensor, type ValuesIndices } from '@flodl/tensor-native';
import { checkBoolean, checkOptions, checkRank, checkTensor, spatialLayouts } from './arguments.js';

/** One output size per spatial dim (a number repeats); `null` keeps that dim's input size. */
export type AdaptiveSize = number | null | readonly (number | null)[];

/** Options of `adaptiveMaxPool1d`, `adaptiveMaxPool2d` and `adaptiveMaxPool3d`. */
export interface AdaptiveMaxPoolOptions {
  /** Also return the flat (per-plane) index of each maximum. Default false. */
  returnIndices?: boolean;
}

type WithIndices = { returnIndices: true };
type WithoutIndices = { returnIndices?: false };

/** The output sizes, with `null` entries replaced by the input's sizes. */
function resolveSize(op: string, spatial: number, input: Tensor, outputSize: unknown): number[] {
  checkTensor(op, 'input', input);
  checkRank(op, 'input', input, spatialLayouts(spatial));
  const inputSizes = input.shape.slice(-spatial);
  const list = Array.isArray(outputSize) ? outputSize : new Array<unknown>(spatial).fill(outputSize);
  const valid =
    list.length === spatial &&
    list.every(
      (size) => size === null || (typeof size === 'number' && Number.isSafeInteger(size) && size >= 1),
    );
  if (!valid)
    throw invalidArgument(
      op,
      'outputSize',
      `a positive integer, null, or an array of ${spatial} of them`,
      outputSize,
    );
  return list.map((size, k) => (size === null ? inputSizes[k]! : (size as number)));
}

function adaptiveMaxPool(
  op: string,
  spatial: number,
  input: Tensor,
  outputSize: AdaptiveSize,
  options: AdaptiveMaxPoolOptions | undefined,
): Tensor | ValuesIndices {
  const { returnIndices = false } = checkOptions(op, options, ['returnIndices']);
  checkBoolean(op, 'returnIndices', returnIndices);
  const [values, indices] = aten.call('adaptiveMaxPool', input, resolveSize(op, spatial, input, outputSize));
  if (returnIndices) return { values, indices };
  indices.dispose();
  return values;
}

/**
 * 1-d adaptive average pooling: `out[n, c, i]` is the mean of `input[n, c, ⌊i·L/L_out⌋ … ⌈(i+1)·L/L_out⌉)`.
 *
 * @param input - `(N, C, L)` or unbatched `(C, L)`.
 * @param outputSize - `L_out`.
 *
 * **Shape**: `(N, C, L) → (N, C, L_out)`.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank; `ERR_INVALID_ARGUMENT` for a bad `outputSize`.
 * @example
 * ```ts
 * const pooled = adaptiveAvgPool1d(randn([2, 3, 10]), 4); // [2, 3, 4]
 * ```
 * PyTorch: `torch.nn.functional.adaptive_avg_pool1d(input, output_size)`.
 */
export function adaptiveAvgPool1d(input: Tensor, outputSize: number | readonly [number]): Tensor {
  return aten.call('adaptiveAvgPool', input, resolveSize('adaptiveAvgPool1d', 1, input, outputSize));
}

/**
 * 2-d adaptive average pooling: the mean over windows `⌊i·H/H_out⌋ … ⌈(i+1)·H/H_out⌉` (and likewise along W).
 *
 * @param input - `(N, C, H, W)` or unbatched `(C, H, W)`.
 * @param outputSize - `[H_out, W_out]` or one number for both; `null` keeps that input size.
 *
 * **Shape**: `(N, C, H, W) → (N, C, H_out, W_out)`.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank; `ERR_INVALID_ARGUMENT` for a bad `outputSize`.
 * @example
 * ```ts
 * const pooled = adaptiveAvgPool2d(randn([8, 64, 7, 7]), 1); // global average pooling: [8, 64, 1, 1]
 * ```
 * PyTorch: `torch.nn.functional.adaptive_avg_pool2d(input, output_size)`.
 */
export function adaptiveAvgPool2d(input: Tensor, outputSize: AdaptiveSize): Tensor {
  return aten.call('adaptiveAvgPool', input, resolveSize('adaptiveAvgPool2d', 2, input, outputSize));
}

/**
 * 3-d adaptive average pooling: the mean over adaptive windows along D, H and W (see {@link adaptiveAvgPool2d}).
 *
 * @param input - `(N, C, D, H, W)` or unbatched `(C, D, H, W)`.
 * @param outputSize - `[D_out, H_out, W_out]` or one number for all; `null` keeps that input size.
 *
 * **Shape**: `(N, C, D, H, W) → (N, C, D_out, H_out, W_out)`.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank; `ERR_INVALID_ARGUMENT` for a bad `outputSize`.
 * @example
 * ```ts
 * const pooled = adaptiveAvgPool3d(randn([1, 2, 5, 6, 7]), [1, 2, 3]); // [1, 2, 1, 2, 3]
 * ```
 * PyTorch: `torch.nn.functional.adaptive_avg_pool3d(input, output_size)`.
 */
export function adaptiveAvgPool3d(input: Tensor, outputSize: AdaptiveSize): Tensor {
  return aten.call('adaptiveAvgPool', input, resolveSize('adaptiveAvgPool3d', 3, input, outputSize));
}

/**
 * 1-d adaptive max pooling: `out[n, c, i]` is the maximum of `input[n, c, ⌊i·L/L_out⌋ … ⌈(i+1)·L/L_out⌉)`.
 *
 * @param input - `(N, C, L)` or unbatched `(C, L)`.
 * @param outputSize - `L_out`.
 * @param options - `returnIndices` (false: with true the result is `{ values, indices }`).
 *
 * **Shape**: `(N, C, L) → (N, C, L_out)`.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank; `ERR_INVALID_ARGUMENT` for a bad `outputSize` or option.
 * @example
 * ```ts
 * const pooled = adaptiveMaxPool1d(randn([2, 3, 10]), 4); // [2, 3, 4]
 * ```
 * PyTorch: `torch.nn.functional.adaptive_max_pool1d(input, output_size, return_indices)`.
 */
export function adaptiveMaxPool1d(
  input: Tensor,
  outputSize: number | readonly [number],
  options?: WithoutIndices,
): Tensor;
export function adaptiveMaxPool1d(
  input: Tensor,
  outputSize: number | readonly [number],
  options: WithIndices,
): ValuesIndices;
export function adaptiveMaxPool1d(
  input: Tensor,
  outputSize: number | readonly [number],
  options?: AdaptiveMaxPoolOptions,
): Tensor | ValuesIndices;
export function adaptiveMaxPool1d(
  input: Tensor,
  outputSize: number | readonly [number],
  options?: AdaptiveMaxPoolOptions,
): Tensor | ValuesIndices {
  return adaptiveMaxPool('adaptiveMaxPool1d', 1, input, outputSize, options);
}

/**
 * 2-d adaptive max pooling: the maximum over windows `⌊i·H/H_out⌋ … ⌈(i+1)·H/H_out⌉` (and likewise along W).
 *
 * @param input - `(N, C, H, W)` or unbatched `(C, H, W)`.
 * @param outputSize - `[H_out, W_out]` or one number for both; `null` keeps that input size.
 * @param options - `returnIndices` (false: with true the result is `{ values, indices }`, indices into each `H·W` plane).
 *
 * **Shape**: `(N, C, H, W) → (N, C, H_out, W_out)`.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank; `ERR_INVALID_ARGUMENT` for a bad `outputSize` or option.
 * @example
 * ```ts
 * const { values, indices } = adaptiveMaxPool2d(randn([1, 3, 9, 9]), [3, 3], { returnIndices: true });
 * ```
 * PyTorch: `torch.nn.functional.adaptive_max_pool2d(input, output_size, return_indices)`.
 */
export function adaptiveMaxPool2d(input: Tensor, outputSize: AdaptiveSize, options?: WithoutIndices): Tensor;
export function adaptiveMaxPool2d(
  input: Tensor,
  outputSize: AdaptiveSize,
  options: WithIndices,
): ValuesIndices;
export function adaptiveMaxPool2d(
  input: Tensor,
  outputSize: AdaptiveSize,
  options?: AdaptiveMaxPoolOptions,
): Tensor | ValuesIndices;
export function adaptiveMaxPool2d(
  input: Tensor,
  outputSize: AdaptiveSize,
  options?: AdaptiveMaxPoolOptions,
): Tensor | ValuesIndices {
  return adaptiveMaxPool('adaptiveMaxPool2d', 2, input, outputSize, options);
}

/**
 * 3-d adaptive max pooling: the maximum over adaptive windows along D, H and W (see {@link adaptiveMaxPool2d}).
 *
 * @param input - `(N, C, D, H, W)` or unbatched `(C, D, H, W)`.
 * @param outputSize - `[D_out, H_out, W_out]` or one number for all; `null` keeps that input size.
 * @param options - `returnIndices` (false).
 *
 * **Shape**: `(N, C, D, H, W) → (N, C, D_out, H_out, W_out)`.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank; `ERR_INVALID_ARGUMENT` for a bad `outputSize` or option.
 * @example
 * ```ts
 * const pooled = adaptiveMaxPool3d(randn([1, 2, 4, 6, 6]), 2); // [1, 2, 2, 2, 2]
 * ```
 * PyTorch: `torch.nn.functional.adaptive_max_pool3d(input, output_size, return_indices)`.
 */
export function adaptiveMaxPool3d(input: Tensor, outputSize: AdaptiveSize, options?: WithoutIndices): Tensor;
export function adaptiveMaxPool3d(
  input: Tensor,
  outputSize: AdaptiveSize,
  options: WithIndices,
): ValuesIndices;
export function adaptiveMaxPool3d(
  input: Tensor,
  outputSize: AdaptiveSize,
  options?: AdaptiveMaxPoolOptions,
): Tensor | ValuesIndices;
export function adaptiveMaxPool3d(
  input: Tensor,
  outputSize: AdaptiveSize,
  options?: AdaptiveMaxPoolOptions,
): Tensor | ValuesIndices {
  return adaptiveMaxPool('adaptiveMaxPool3d', 3, input, outputSize, options);
}
