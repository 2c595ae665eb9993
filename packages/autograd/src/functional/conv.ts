// Convolutions and transposed convolutions in 1, 2 and 3 spatial dims (PyTorch:
// torch.nn.functional.conv1d … conv_transpose3d). One native entry per family; the
// weight's rank picks the kernel.
import { aten, type Tensor } from '@flodl/tensor-native';
import {
  checkInteger,
  checkOneOf,
  checkOptionalTensor,
  checkOptions,
  checkRank,
  checkShape,
  checkTensor,
  expandSizes,
  shapeError,
  shapeText,
  spatialLayouts,
} from './arguments.js';

/** One size for every spatial dim, or one per dim. */
export type SpatialSize = number | readonly number[];

/** Options of `conv1d`, `conv2d` and `conv3d`. */
export interface ConvOptions {
  /** Step of the kernel over the input. Default 1. */
  stride?: SpatialSize;
  /**
   * Implicit zero padding on both sides of each spatial dim. Default 0. `'valid'` means no
   * padding; `'same'` pads so that the output has the input's size (stride 1 only).
   */
  padding?: SpatialSize | 'valid' | 'same';
  /** Spacing between kernel elements. Default 1. */
  dilation?: SpatialSize;
  /** Splits the channels into this many independent groups. Default 1. */
  groups?: number;
}

/** Options of `convTranspose1d`, `convTranspose2d` and `convTranspose3d`. */
export interface ConvTransposeOptions {
  /** Step of the kernel over the output. Default 1. */
  stride?: SpatialSize;
  /** Removes `dilation · (kernel − 1) − padding` … rows from both sides of the output. Default 0. */
  padding?: SpatialSize;
  /** Extra size added to one side of the output (less than `stride` or `dilation`). Default 0. */
  outputPadding?: SpatialSize;
  /** Splits the channels into this many independent groups. Default 1. */
  groups?: number;
  /** Spacing between kernel elements. Default 1. */
  dilation?: SpatialSize;
}

/** The input's channel count: the dim before the spatial ones. */
function channelsOf(input: Tensor, spatial: number): number {
  return input.shape[input.ndim - spatial - 1]!;
}

function checkGroupSplit(
  op: string,
  groups: number,
  inChannels: number,
  outChannels: number,
  weight: Tensor,
): void {
  if (inChannels % groups !== 0 || outChannels % groups !== 0) {
    throw shapeError(
      op,
      'the channels do not split into groups',
      `in and out channels divisible by groups = ${groups}`,
      `${inChannels} in, ${outChannels} out (weight ${shapeText(weight.shape)})`,
    );
  }
}

function convolution(
  op: string,
  spatial: number,
  input: Tensor,
  weight: Tensor,
  bias: Tensor | undefined,
  options: ConvOptions | undefined,
): Tensor {
  checkTensor(op, 'input', input);
  checkTensor(op, 'weight', weight);
  const biasTensor = checkOptionalTensor(op, 'bias', bias);
  const kernel = ['kL', 'kH, kW', 'kD, kH, kW'][spatial - 1];
  checkRank(op, 'weight', weight, { [spatial + 2]: `(C_out, C_in / groups, ${kernel})` });
  checkRank(op, 'input', input, spatialLayouts(spatial));
  const {
    stride = 1,
    padding = 0,
    dilation = 1,
    groups = 1,
  } = checkOptions(op, options, ['stride', 'padding', 'dilation', 'groups']);
  const strides = expandSizes(op, 'stride', stride, spatial, 1);
  const dilations = expandSizes(op, 'dilation', dilation, spatial, 1);
  let paddingValue: number[] | string;
  if (typeof padding === 'string') {
    paddingValue = checkOneOf(op, 'padding', padding, ['valid', 'same'] as const);
    if (paddingValue === 'same' && strides.some((step) => step !== 1)) {
      throw shapeError(
        op,
        "padding 'same' needs stride 1",
        'stride 1 in every dim',
        `stride ${shapeText(strides)}`,
      );
    }
  } else {
    paddingValue = expandSizes(op, 'padding', padding, spatial, 0);
  }
  const count = checkInteger(op, 'groups', groups, 1);
  const [outChannels, groupChannels] = weight.shape as [number, number];
  checkGroupSplit(op, count, channelsOf(input, spatial), outChannels, weight);
  if (groupChannels * count !== channelsOf(input, spatial)) {
    throw shapeError(
      op,
      'input channels do not match weight',
      `${groupChannels * count} input channels (weight.shape[1] · groups)`,
      `${channelsOf(input, spatial)} (input ${shapeText(input.shape)})`,
    );
  }
  if (biasTensor !== undefined) checkShape(op, 'bias', biasTensor, [outChannels], 'C_out of weight');
  return aten.call('conv', input, weight, biasTensor, strides, paddingValue, dilations, count);
}

function transposedConvolution(
  op: string,
  spatial: number,
  input: Tensor,
  weight: Tensor,
  bias: Tensor | undefined,
  options: ConvTransposeOptions | undefined,
): Tensor {
  checkTensor(op, 'input', input);
  checkTensor(op, 'weight', weight);
  const biasTensor = checkOptionalTensor(op, 'bias', bias);
  const kernel = ['kL', 'kH, kW', 'kD, kH, kW'][spatial - 1];
  checkRank(op, 'weight', weight, { [spatial + 2]: `(C_in, C_out / groups, ${kernel})` });
  checkRank(op, 'input', input, spatialLayouts(spatial));
  const {
    stride = 1,
    padding = 0,
    outputPadding = 0,
    groups = 1,
    dilation = 1,
  } = checkOptions(op, options, ['stride', 'padding', 'outputPadding', 'groups', 'dilation']);
  const strides = expandSizes(op, 'stride', stride, spatial, 1);
  const paddings = expandSizes(op, 'padding', padding, spatial, 0);
  const outputPaddings = expandSizes(op, 'outputPadding', outputPadding, spatial, 0);
  const dilations = expandSizes(op, 'dilation', dilation, spatial, 1);
  outputPaddings.forEach((extra, k) => {
    if (extra >= strides[k]! && extra >= dilations[k]!) {
      throw shapeError(
        op,
        'outputPadding is too large',
        'outputPadding smaller than stride or dilation in every dim',
        `outputPadding ${shapeText(outputPaddings)}, stride ${shapeText(strides)}, dilation ${shapeText(dilations)}`,
      );
    }
  });
  const count = checkInteger(op, 'groups', groups, 1);
  const [inChannels, groupChannels] = weight.shape as [number, number];
  checkGroupSplit(op, count, inChannels, groupChannels * count, weight);
  if (channelsOf(input, spatial) !== inChannels) {
    throw shapeError(
      op,
      'input channels do not match weight',
      `${inChannels} input channels (weight.shape[0])`,
      `${channelsOf(input, spatial)} (input ${shapeText(input.shape)})`,
    );
  }
  if (biasTensor !== undefined)
    checkShape(op, 'bias', biasTensor, [groupChannels * count], 'C_out = weight.shape[1] · groups');
  return aten.call(
    'convTranspose',
    input,
    weight,
    biasTensor,
    strides,
    paddings,
    outputPaddings,
    count,
    dilations,
  );
}

/**
 * Applies a 1-d convolution: `out[n, o] = bias[o] + Σ_c weight[o, c] ⋆ input[n, c]` (cross-correlation).
 *
 * @param input - `(N, C_in, L)` or unbatched `(C_in, L)`.
 * @param weight - `(C_out, C_in / groups, kL)`.
 * @param bias - optional `(C_out)`.
 * @param options - `stride` (1), `padding` (0, `'valid'` or `'same'`), `dilation` (1), `groups` (1).
 *
 * **Shape**: `(N, C_in, L) → (N, C_out, L_out)`, `L_out = ⌊(L + 2·padding − dilation·(kL − 1) − 1) / stride⌋ + 1`.
 *
 * @throws FlodlError `ERR_SHAPE` when ranks or channel counts disagree; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const out = conv1d(randn([4, 3, 16]), randn([8, 3, 5]), undefined, { padding: 'same' }); // [4, 8, 16]
 * ```
 * PyTorch: `torch.nn.functional.conv1d(input, weight, bias, stride, padding, dilation, groups)`.
 */
export function conv1d(input: Tensor, weight: Tensor, bias?: Tensor, options?: ConvOptions): Tensor {
  return convolution('conv1d', 1, input, weight, bias, options);
}

/**
 * Applies a 2-d convolution: `out[n, o] = bias[o] + Σ_c weight[o, c] ⋆ input[n, c]` (cross-correlation).
 *
 * @param input - `(N, C_in, H, W)` or unbatched `(C_in, H, W)`.
 * @param weight - `(C_out, C_in / groups, kH, kW)`.
 * @param bias - optional `(C_out)`.
 * @param options - `stride` (1), `padding` (0, `'valid'` or `'same'`), `dilation` (1), `groups` (1).
 *
 * **Shape**: `(N, C_in, H, W) → (N, C_out, H_out, W_out)`,
 * `H_out = ⌊(H + 2·padding[0] − dilation[0]·(kH − 1) − 1) / stride[0]⌋ + 1`, and likewise `W_out`.
 *
 * @throws FlodlError `ERR_SHAPE` when ranks or channel counts disagree; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const out = conv2d(randn([1, 3, 8, 8]), randn([6, 3, 3, 3]), zeros([6]), { stride: 2, padding: 1 }); // [1, 6, 4, 4]
 * ```
 * PyTorch: `torch.nn.functional.conv2d(input, weight, bias, stride, padding, dilation, groups)`.
 */
export function conv2d(input: Tensor, weight: Tensor, bias?: Tensor, options?: ConvOptions): Tensor {
  return convolution('conv2d', 2, input, weight, bias, options);
}

/**
 * Applies a 3-d convolution: `out[n, o] = bias[o] + Σ_c weight[o, c] ⋆ input[n, c]` (cross-correlation).
 *
 * @param input - `(N, C_in, D, H, W)` or unbatched `(C_in, D, H, W)`.
 * @param weight - `(C_out, C_in / groups, kD, kH, kW)`.
 * @param bias - optional `(C_out)`.
 * @param options - `stride` (1), `padding` (0, `'valid'` or `'same'`), `dilation` (1), `groups` (1).
 *
 * **Shape**: `(N, C_in, D, H, W) → (N, C_out, D_out, H_out, W_out)`, each size as in {@link conv2d}.
 *
 * @throws FlodlError `ERR_SHAPE` when ranks or channel counts disagree; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const out = conv3d(randn([1, 2, 4, 8, 8]), randn([4, 2, 3, 3, 3]), undefined, { padding: 1 }); // [1, 4, 4, 8, 8]
 * ```
 * PyTorch: `torch.nn.functional.conv3d(input, weight, bias, stride, padding, dilation, groups)`.
 */
export function conv3d(input: Tensor, weight: Tensor, bias?: Tensor, options?: ConvOptions): Tensor {
  return convolution('conv3d', 3, input, weight, bias, options);
}

/**
 * Applies a 1-d transposed convolution (the gradient of `conv1d` with respect to its input).
 *
 * @param input - `(N, C_in, L)` or unbatched `(C_in, L)`.
 * @param weight - `(C_in, C_out / groups, kL)`.
 * @param bias - optional `(C_out)`.
 * @param options - `stride` (1), `padding` (0), `outputPadding` (0), `groups` (1), `dilation` (1).
 *
 * **Shape**: `(N, C_in, L) → (N, C_out, L_out)`,
 * `L_out = (L − 1)·stride − 2·padding + dilation·(kL − 1) + outputPadding + 1`.
 *
 * @throws FlodlError `ERR_SHAPE` when ranks or channel counts disagree or `outputPadding` is too
 *   large; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const out = convTranspose1d(randn([4, 8, 16]), randn([8, 3, 4]), undefined, { stride: 2, padding: 1 }); // [4, 3, 32]
 * ```
 * PyTorch: `torch.nn.functional.conv_transpose1d(input, weight, bias, stride, padding, output_padding, groups, dilation)`.
 */
export function convTranspose1d(
  input: Tensor,
  weight: Tensor,
  bias?: Tensor,
  options?: ConvTransposeOptions,
): Tensor {
  return transposedConvolution('convTranspose1d', 1, input, weight, bias, options);
}

/**
 * Applies a 2-d transposed convolution (the gradient of `conv2d` with respect to its input).
 *
 * @param input - `(N, C_in, H, W)` or unbatched `(C_in, H, W)`.
 * @param weight - `(C_in, C_out / groups, kH, kW)`.
 * @param bias - optional `(C_out)`.
 * @param options - `stride` (1), `padding` (0), `outputPadding` (0), `groups` (1), `dilation` (1).
 *
 * **Shape**: `(N, C_in, H, W) → (N, C_out, H_out, W_out)`,
 * `H_out = (H − 1)·stride[0] − 2·padding[0] + dilation[0]·(kH − 1) + outputPadding[0] + 1`, and likewise `W_out`.
 *
 * @throws FlodlError `ERR_SHAPE` when ranks or channel counts disagree or `outputPadding` is too
 *   large; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const out = convTranspose2d(randn([1, 8, 4, 4]), randn([8, 3, 3, 3]), undefined, { stride: 2, padding: 1, outputPadding: 1 }); // [1, 3, 8, 8]
 * ```
 * PyTorch: `torch.nn.functional.conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation)`.
 */
export function convTranspose2d(
  input: Tensor,
  weight: Tensor,
  bias?: Tensor,
  options?: ConvTransposeOptions,
): Tensor {
  return transposedConvolution('convTranspose2d', 2, input, weight, bias, options);
}

/**
 * Applies a 3-d transposed convolution (the gradient of `conv3d` with respect to its input).
 *
 * @param input - `(N, C_in, D, H, W)` or unbatched `(C_in, D, H, W)`.
 * @param weight - `(C_in, C_out / groups, kD, kH, kW)`.
 * @param bias - optional `(C_out)`.
 * @param options - `stride` (1), `padding` (0), `outputPadding` (0), `groups` (1), `dilation` (1).
 *
 * **Shape**: `(N, C_in, D, H, W) → (N, C_out, D_out, H_out, W_out)`, each size as in {@link convTranspose2d}.
 *
 * @throws FlodlError `ERR_SHAPE` when ranks or channel counts disagree or `outputPadding` is too
 *   large; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const out = convTranspose3d(randn([1, 4, 2, 4, 4]), randn([4, 2, 2, 2, 2]), undefined, { stride: 2 }); // [1, 2, 4, 8, 8]
 * ```
 * PyTorch: `torch.nn.functional.conv_transpose3d(input, weight, bias, stride, padding, output_padding, groups, dilation)`.
 */
export function convTranspose3d(
  input: Tensor,
  weight: Tensor,
  bias?: Tensor,
  options?: ConvTransposeOptions,
): Tensor {
  return transposedConvolution('convTranspose3d', 3, input, weight, bias, options);
}
