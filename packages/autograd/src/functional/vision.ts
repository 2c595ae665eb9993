// Resampling and rearranging images (PyTorch: torch.nn.functional.interpolate, pixel_shuffle,
// pixel_unshuffle, unfold, fold).
import { aten, FlodlError, invalidArgument, type Tensor } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkInteger,
  checkOneOf,
  checkOptions,
  checkRank,
  checkTensor,
  expandSizes,
  shapeError,
  shapeText,
} from './arguments.js';
import type { SpatialSize } from './conv.js';

/** Options of `interpolate`: exactly one of `size` and `scaleFactor`. */
export interface InterpolateOptions {
  /** The output's spatial size, one number for every dim or one per dim. */
  size?: SpatialSize;
  /** Multiplier of the spatial size (the output size is rounded down), one or one per dim. */
  scaleFactor?: number | readonly number[];
  /** The resampling. Default `'nearest'`. */
  mode?: 'nearest' | 'nearest-exact' | 'linear' | 'bilinear' | 'bicubic' | 'trilinear' | 'area';
  /**
   * For the linear modes and bicubic: align the corner pixels' centres of input and output
   * (true) or their outer edges (false). Default false; not allowed with the other modes.
   */
  alignCorners?: boolean;
  /** Resample with the rounded output size instead of `scaleFactor` itself. Default false. */
  recomputeScaleFactor?: boolean;
}

/** Options of `unfold` and `fold`. */
export interface FoldOptions {
  /** Spacing between kernel elements. Default 1. */
  dilation?: SpatialSize;
  /** Implicit zero padding on both sides. Default 0. */
  padding?: SpatialSize;
  /** Step of the sliding window. Default 1. */
  stride?: SpatialSize;
}

const MODES = ['nearest', 'nearest-exact', 'linear', 'bilinear', 'bicubic', 'trilinear', 'area'] as const;
const MODE_RANKS: Record<string, number | undefined> = { linear: 3, bilinear: 4, bicubic: 4, trilinear: 5 };
const LAYOUTS = { 3: '(N, C, L)', 4: '(N, C, H, W)', 5: '(N, C, D, H, W)' };

/**
 * Resamples the spatial dims to `size`, or by `scaleFactor`, with nearest-neighbour, (bi/tri)linear,
 * bicubic or area interpolation.
 *
 * @param input - `(N, C, L)`, `(N, C, H, W)` or `(N, C, D, H, W)`.
 * @param options - `size` or `scaleFactor` (one of them), `mode` (`'nearest'`), `alignCorners`
 *   (false, interpolating modes only), `recomputeScaleFactor` (false).
 *
 * **Shape**: `(N, C, *S) → (N, C, *S_out)`, `S_out = size` or `⌊S · scaleFactor⌋`. `'linear'` needs a
 * 3-d input, `'bilinear'`/`'bicubic'` a 4-d one, `'trilinear'` a 5-d one.
 *
 * @throws FlodlError `ERR_SHAPE` for a rank that does not fit the mode; `ERR_INVALID_ARGUMENT` for
 *   both or neither of `size` and `scaleFactor`, `alignCorners` with a non-interpolating mode, or
 *   a bad or unknown option.
 * @example
 * ```ts
 * const up = interpolate(image, { scaleFactor: 2, mode: 'bilinear', alignCorners: false }); // (N, C, 2H, 2W)
 * ```
 * PyTorch: `torch.nn.functional.interpolate(input, size, scale_factor, mode, align_corners, recompute_scale_factor)`.
 */
export function interpolate(input: Tensor, options?: InterpolateOptions): Tensor {
  const op = 'interpolate';
  checkTensor(op, 'input', input);
  const checked = checkOptions(op, options, [
    'size',
    'scaleFactor',
    'mode',
    'alignCorners',
    'recomputeScaleFactor',
  ]);
  const mode = checkOneOf(op, 'mode', checked.mode ?? 'nearest', MODES);
  const rank = checkRank(op, 'input', input, LAYOUTS);
  const needed = MODE_RANKS[mode];
  if (needed !== undefined && rank !== needed) {
    throw shapeError(
      op,
      `mode '${mode}' needs a ${needed}-d input`,
      `a ${needed}-d ${LAYOUTS[needed as 3 | 4 | 5]} tensor`,
      `input ${shapeText(input.shape)}`,
    );
  }
  const interpolating = needed !== undefined;
  if (!interpolating && checked.alignCorners !== undefined) {
    throw invalidArgument(
      op,
      'alignCorners',
      "no alignCorners with mode 'nearest', 'nearest-exact' or 'area'",
      checked.alignCorners,
    );
  }
  const alignCorners = checkBoolean(op, 'alignCorners', checked.alignCorners ?? false);
  const recompute = checkBoolean(op, 'recomputeScaleFactor', checked.recomputeScaleFactor ?? false);
  const spatial = rank - 2;
  if ((checked.size === undefined) === (checked.scaleFactor === undefined)) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'give exactly one of size and scaleFactor', {
      op,
      expected: 'size or scaleFactor',
      got: checked.size === undefined ? 'neither' : 'both',
    });
  }
  let size: number[] | undefined;
  let scales: number[] | undefined;
  if (checked.size !== undefined) {
    if (recompute)
      throw invalidArgument(
        op,
        'recomputeScaleFactor',
        'false (or undefined) with an explicit size',
        recompute,
      );
    size = expandSizes(op, 'size', checked.size, spatial, 1);
  } else {
    scales = checkScales(op, checked.scaleFactor, spatial);
    if (recompute || mode === 'area') {
      const inputSizes = input.shape.slice(2);
      size = scales.map((scale, k) => Math.floor(inputSizes[k]! * scale));
      scales = undefined;
    }
  }
  if (mode === 'area') return aten.call('adaptiveAvgPool', input, size!);
  return aten.call(op, input, mode, size, scales, alignCorners);
}

function checkScales(op: string, value: unknown, length: number): number[] {
  const list = typeof value === 'number' ? new Array<unknown>(length).fill(value) : value;
  if (
    !Array.isArray(list) ||
    list.length !== length ||
    !list.every((scale) => typeof scale === 'number' && scale > 0 && Number.isFinite(scale))
  ) {
    throw invalidArgument(op, 'scaleFactor', `a positive number or an array of ${length} of them`, value);
  }
  return list as number[];
}

/**
 * Rearranges `(*, C·r², H, W)` into `(*, C, H·r, W·r)`: `out[c, h·r + i, w·r + j] = in[c·r² + i·r + j, h, w]`.
 *
 * @param input - `(*, C·r², H, W)`.
 * @param upscaleFactor - `r`.
 *
 * **Shape**: `(*, C·r², H, W) → (*, C, H·r, W·r)`.
 *
 * @throws FlodlError `ERR_SHAPE` for fewer than 3 dims or channels not divisible by `r²`;
 *   `ERR_INVALID_ARGUMENT` for a bad factor.
 * @example
 * ```ts
 * const image = pixelShuffle(randn([1, 12, 8, 8]), 2); // [1, 3, 16, 16]
 * ```
 * PyTorch: `torch.nn.functional.pixel_shuffle(input, upscale_factor)`.
 */
export function pixelShuffle(input: Tensor, upscaleFactor: number): Tensor {
  const op = 'pixelShuffle';
  checkShuffleInput(op, input);
  checkInteger(op, 'upscaleFactor', upscaleFactor, 1);
  const channels = input.shape[input.ndim - 3]!;
  if (channels % (upscaleFactor * upscaleFactor) !== 0) {
    throw shapeError(
      op,
      'the channels are not divisible by upscaleFactor²',
      `C divisible by ${upscaleFactor * upscaleFactor}`,
      `input ${shapeText(input.shape)}`,
    );
  }
  return aten.call(op, input, upscaleFactor);
}

/**
 * Rearranges `(*, C, H·r, W·r)` into `(*, C·r², H, W)`, the inverse of {@link pixelShuffle}.
 *
 * @param input - `(*, C, H·r, W·r)`.
 * @param downscaleFactor - `r`.
 *
 * **Shape**: `(*, C, H·r, W·r) → (*, C·r², H, W)`.
 *
 * @throws FlodlError `ERR_SHAPE` for fewer than 3 dims or `H`, `W` not divisible by `r`;
 *   `ERR_INVALID_ARGUMENT` for a bad factor.
 * @example
 * ```ts
 * const features = pixelUnshuffle(randn([1, 3, 16, 16]), 2); // [1, 12, 8, 8]
 * ```
 * PyTorch: `torch.nn.functional.pixel_unshuffle(input, downscale_factor)`.
 */
export function pixelUnshuffle(input: Tensor, downscaleFactor: number): Tensor {
  const op = 'pixelUnshuffle';
  checkShuffleInput(op, input);
  checkInteger(op, 'downscaleFactor', downscaleFactor, 1);
  const [height, width] = input.shape.slice(-2) as [number, number];
  if (height % downscaleFactor !== 0 || width % downscaleFactor !== 0) {
    throw shapeError(
      op,
      'the height and width are not divisible by downscaleFactor',
      `H and W divisible by ${downscaleFactor}`,
      `input ${shapeText(input.shape)}`,
    );
  }
  return aten.call(op, input, downscaleFactor);
}

function checkShuffleInput(op: string, input: Tensor): void {
  checkTensor(op, 'input', input);
  if (input.ndim < 3) {
    throw shapeError(
      op,
      'input has too few dimensions',
      'at least 3 dimensions (*, C, H, W)',
      `input ${shapeText(input.shape)}`,
    );
  }
}

interface Blocks {
  kernel: number[];
  dilation: number[];
  padding: number[];
  stride: number[];
}

function checkBlocks(op: string, kernelSize: unknown, options: FoldOptions | undefined): Blocks {
  const kernel = expandSizes(op, 'kernelSize', kernelSize, 2, 1);
  const {
    dilation = 1,
    padding = 0,
    stride = 1,
  } = checkOptions(op, options, ['dilation', 'padding', 'stride']);
  return {
    kernel,
    dilation: expandSizes(op, 'dilation', dilation, 2, 1),
    padding: expandSizes(op, 'padding', padding, 2, 0),
    stride: expandSizes(op, 'stride', stride, 2, 1),
  };
}

/** Sliding-window positions along each of the two spatial dims. */
function blockCounts(sizes: readonly number[], blocks: Blocks): number[] {
  return sizes.map((size, k) => {
    const span = size + 2 * blocks.padding[k]! - blocks.dilation[k]! * (blocks.kernel[k]! - 1) - 1;
    return Math.floor(span / blocks.stride[k]!) + 1;
  });
}

/**
 * Extracts sliding local blocks (im2col): each column of the output is one `kH × kW` window of
 * every channel, flattened.
 *
 * @param input - `(N, C, H, W)` or unbatched `(C, H, W)`.
 * @param kernelSize - the window, one number or `[kH, kW]`.
 * @param options - `dilation` (1), `padding` (0), `stride` (1).
 *
 * **Shape**: `(N, C, H, W) → (N, C·kH·kW, L)`, `L = Π_d ⌊(S_d + 2·padding_d − dilation_d·(k_d − 1) − 1) / stride_d⌋ + 1`.
 *
 * @throws FlodlError `ERR_SHAPE` for a wrong rank or an input smaller than the window;
 *   `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const columns = unfold(randn([1, 3, 8, 8]), 3, { padding: 1 }); // [1, 27, 64]
 * ```
 * PyTorch: `torch.nn.functional.unfold(input, kernel_size, dilation, padding, stride)`.
 */
export function unfold(input: Tensor, kernelSize: SpatialSize, options?: FoldOptions): Tensor {
  const op = 'unfold';
  checkTensor(op, 'input', input);
  checkRank(op, 'input', input, { 3: '(C, H, W)', 4: '(N, C, H, W)' });
  const blocks = checkBlocks(op, kernelSize, options);
  if (blockCounts(input.shape.slice(-2), blocks).some((count) => count < 1)) {
    throw shapeError(
      op,
      'input is smaller than the window',
      `H and W that fit kernelSize ${shapeText(blocks.kernel)} with dilation and padding`,
      `input ${shapeText(input.shape)}`,
    );
  }
  return aten.call('im2col', input, blocks.kernel, blocks.dilation, blocks.padding, blocks.stride);
}

/**
 * Sums sliding local blocks back into an image (col2im), the adjoint of {@link unfold}:
 * overlapping values add up.
 *
 * @param input - `(N, C·kH·kW, L)` or unbatched `(C·kH·kW, L)`.
 * @param outputSize - the image size `[H, W]` (one number for both).
 * @param kernelSize - the window, one number or `[kH, kW]`.
 * @param options - `dilation` (1), `padding` (0), `stride` (1).
 *
 * **Shape**: `(N, C·kH·kW, L) → (N, C, H, W)`, `L` as in {@link unfold} for `outputSize`.
 *
 * @throws FlodlError `ERR_SHAPE` when the rows are not divisible by `kH·kW` or `L` does not match
 *   `outputSize`; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const image = fold(columns, [8, 8], 3, { padding: 1 }); // [1, 3, 8, 8]
 * ```
 * PyTorch: `torch.nn.functional.fold(input, output_size, kernel_size, dilation, padding, stride)`.
 */
export function fold(
  input: Tensor,
  outputSize: SpatialSize,
  kernelSize: SpatialSize,
  options?: FoldOptions,
): Tensor {
  const op = 'fold';
  checkTensor(op, 'input', input);
  checkRank(op, 'input', input, { 2: '(C·kH·kW, L)', 3: '(N, C·kH·kW, L)' });
  const size = expandSizes(op, 'outputSize', outputSize, 2, 1);
  const blocks = checkBlocks(op, kernelSize, options);
  const [rows, columns] = input.shape.slice(-2) as [number, number];
  const window = blocks.kernel[0]! * blocks.kernel[1]!;
  if (rows % window !== 0) {
    throw shapeError(
      op,
      'the rows are not divisible by the window size',
      `dim -2 divisible by kH·kW = ${window}`,
      `input ${shapeText(input.shape)}`,
    );
  }
  const counts = blockCounts(size, blocks);
  const expected = counts[0]! * counts[1]!;
  if (counts.some((count) => count < 1) || columns !== expected) {
    throw shapeError(
      op,
      'the number of blocks does not match outputSize',
      `L = ${Math.max(expected, 0)} blocks for outputSize ${shapeText(size)}`,
      `L = ${columns} (input ${shapeText(input.shape)})`,
    );
  }
  return aten.call('col2im', input, size, blocks.kernel, blocks.dilation, blocks.padding, blocks.stride);
}
