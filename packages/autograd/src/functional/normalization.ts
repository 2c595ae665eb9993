// Normalisation layers as functions (PyTorch: torch.nn.functional.batch_norm, instance_norm,
// layer_norm, group_norm, rms_norm). Running statistics are updated in place, as in PyTorch.
import { aten, type DType, FlodlError, type Tensor } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkFloating,
  checkInteger,
  checkMinimumRank,
  checkNumber,
  checkOptionalTensor,
  checkOptions,
  checkPositive,
  checkShape,
  checkTensor,
  expandSizes,
  shapeError,
  shapeText,
} from './arguments.js';

/** Options of `batchNorm`. */
export interface BatchNormOptions {
  /** Normalise with the batch's statistics and update the running ones (true) or use the running ones (false). Default false. */
  training?: boolean;
  /** Weight of the new batch statistic in the running average. Default 0.1. */
  momentum?: number;
  /** Added to the variance for stability. Default 1e-5. */
  eps?: number;
}

/** Options of `instanceNorm`. */
export interface InstanceNormOptions {
  /** Normalise with each instance's statistics (true) or with the running ones (false). Default true. */
  useInputStats?: boolean;
  /** Weight of the new statistic in the running average. Default 0.1. */
  momentum?: number;
  /** Added to the variance for stability. Default 1e-5. */
  eps?: number;
}

/** Options of `layerNorm` and `groupNorm`. */
export interface NormOptions {
  /** Added to the variance for stability. Default 1e-5. */
  eps?: number;
}

/** Options of `rmsNorm`. */
export interface RmsNormOptions {
  /** Added to the mean square for stability. Default: the machine epsilon of the input's dtype. */
  eps?: number;
}

/** PyTorch's `torch.finfo(dtype).eps`, rmsNorm's default eps. */
const MACHINE_EPSILON: Partial<Record<DType, number>> = {
  float16: 2 ** -10,
  bfloat16: 2 ** -7,
  float32: 2 ** -23,
  float64: 2 ** -52,
};

function checkChannelTensor(op: string, name: string, value: unknown, channels: number): Tensor | undefined {
  const tensor = checkOptionalTensor(op, name, value);
  if (tensor !== undefined) checkShape(op, name, tensor, [channels], 'C, the size of input dim 1');
  return tensor;
}

/** What sets batchNorm and instanceNorm apart; `normWithStatistics` does the rest for both. */
interface StatisticsNorm {
  op: 'batchNorm' | 'instanceNorm';
  /** The least input rank: 2 for `(N, C)`, 3 for `(N, C, L)`. */
  minimumRank: number;
  /** The option that picks the batch's own statistics over the running ones, and its default. */
  flag: 'training' | 'useInputStats';
  flagDefault: boolean;
  /** How many values each batch statistic is taken over; one is too few. */
  valuesPerStatistic: (input: Tensor, channels: number) => number;
  tooFewValues: { message: string; expected: string };
}

const BATCH_NORM: StatisticsNorm = {
  op: 'batchNorm',
  minimumRank: 2,
  flag: 'training',
  flagDefault: false,
  valuesPerStatistic: (input, channels) => input.numel / channels,
  tooFewValues: {
    message: 'training needs more than one value per channel',
    expected: 'N · (spatial sizes) > 1',
  },
};

const INSTANCE_NORM: StatisticsNorm = {
  op: 'instanceNorm',
  minimumRank: 3,
  flag: 'useInputStats',
  flagDefault: true,
  valuesPerStatistic: (input, channels) => input.numel / (input.shape[0]! * channels),
  tooFewValues: {
    message: 'each plane needs more than one element',
    expected: 'spatial sizes with a product > 1',
  },
};

function normWithStatistics(
  norm: StatisticsNorm,
  input: Tensor,
  runningMean: unknown,
  runningVar: unknown,
  weight: unknown,
  bias: unknown,
  options: (BatchNormOptions & InstanceNormOptions) | undefined,
): Tensor {
  const { op, flag } = norm;
  checkTensor(op, 'input', input);
  checkMinimumRank(op, 'input', input, norm.minimumRank, '(N, C, *)');
  const channels = input.shape[1]!;
  const mean = checkChannelTensor(op, 'runningMean', runningMean, channels);
  const variance = checkChannelTensor(op, 'runningVar', runningVar, channels);
  const scale = checkChannelTensor(op, 'weight', weight, channels);
  const shift = checkChannelTensor(op, 'bias', bias, channels);
  const {
    [flag]: useBatch = norm.flagDefault,
    momentum = 0.1,
    eps = 1e-5,
  } = checkOptions(op, options, [flag, 'momentum', 'eps']);
  checkBoolean(op, flag, useBatch);
  checkNumber(op, 'momentum', momentum);
  checkPositive(op, 'eps', eps);
  if (!useBatch && (mean === undefined || variance === undefined)) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `running statistics are needed when ${flag} is false`, {
      op,
      expected: 'runningMean and runningVar tensors of shape (C)',
      got: 'undefined',
    });
  }
  if (useBatch && norm.valuesPerStatistic(input, channels) <= 1) {
    const { message, expected } = norm.tooFewValues;
    throw shapeError(op, message, expected, `input ${shapeText(input.shape)}`);
  }
  return aten.call(op, input, scale, shift, mean, variance, useBatch, momentum, eps);
}

/**
 * Batch normalisation over dim 1: `y = (x − E[x]) / √(Var[x] + eps) · weight + bias`, with the mean
 * and biased variance over every dim but 1 in training, or the running statistics otherwise.
 * In training the running statistics are updated in place:
 * `running = (1 − momentum) · running + momentum · batch` (the variance unbiased).
 *
 * @param input - `(N, C)`, `(N, C, L)` or `(N, C, *)`.
 * @param runningMean - `(C)`, or undefined (then `training` must be true).
 * @param runningVar - `(C)`, or undefined (then `training` must be true).
 * @param weight - optional `(C)` scale γ.
 * @param bias - optional `(C)` shift β.
 * @param options - `training` (false), `momentum` (0.1), `eps` (1e-5).
 *
 * **Shape**: `(N, C, *) → (N, C, *)`.
 *
 * @throws FlodlError `ERR_SHAPE` when a `(C)` tensor does not fit or training sees one value per
 *   channel; `ERR_INVALID_ARGUMENT` when evaluation lacks running statistics, or for a bad or unknown option.
 * @example
 * ```ts
 * const mean = zeros([16]); const variance = ones([16]);
 * const y = batchNorm(x, mean, variance, gamma, beta, { training: true }); // mean, variance updated
 * ```
 * PyTorch: `torch.nn.functional.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)`.
 */
export function batchNorm(
  input: Tensor,
  runningMean: Tensor | undefined,
  runningVar: Tensor | undefined,
  weight?: Tensor,
  bias?: Tensor,
  options?: BatchNormOptions,
): Tensor {
  return normWithStatistics(BATCH_NORM, input, runningMean, runningVar, weight, bias, options);
}

/**
 * Instance normalisation: batch normalisation of each `(n, c)` plane on its own,
 * `y = (x − E[x]) / √(Var[x] + eps) · weight + bias` over the spatial dims.
 *
 * @param input - `(N, C, *)` with at least one spatial dim.
 * @param runningMean - optional `(C)`, updated in place when `useInputStats` (mean over the batch).
 * @param runningVar - optional `(C)`, updated likewise.
 * @param weight - optional `(C)` scale γ.
 * @param bias - optional `(C)` shift β.
 * @param options - `useInputStats` (true), `momentum` (0.1), `eps` (1e-5).
 *
 * **Shape**: `(N, C, *) → (N, C, *)`.
 *
 * @throws FlodlError `ERR_SHAPE` when a `(C)` tensor does not fit or a plane has one element;
 *   `ERR_INVALID_ARGUMENT` when `useInputStats` is false without running statistics, or for a bad option.
 * @example
 * ```ts
 * const y = instanceNorm(randn([4, 3, 16, 16])); // each (n, c) plane has mean 0, variance 1
 * ```
 * PyTorch: `torch.nn.functional.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)`.
 */
export function instanceNorm(
  input: Tensor,
  runningMean?: Tensor,
  runningVar?: Tensor,
  weight?: Tensor,
  bias?: Tensor,
  options?: InstanceNormOptions,
): Tensor {
  return normWithStatistics(INSTANCE_NORM, input, runningMean, runningVar, weight, bias, options);
}

/**
 * Layer normalisation over the trailing `normalizedShape` dims:
 * `y = (x − E[x]) / √(Var[x] + eps) · weight + bias` (biased variance).
 *
 * @param input - `(*, normalizedShape…)`.
 * @param normalizedShape - the trailing dims to normalise over (a number for one dim).
 * @param weight - optional γ of shape `normalizedShape`.
 * @param bias - optional β of shape `normalizedShape`.
 * @param options - `eps` (1e-5).
 *
 * **Shape**: `(*, normalizedShape…) → (*, normalizedShape…)`.
 *
 * @throws FlodlError `ERR_SHAPE` when the trailing dims, `weight` or `bias` differ from
 *   `normalizedShape`; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const y = layerNorm(randn([8, 10, 32]), 32, ones([32]), zeros([32]));
 * ```
 * PyTorch: `torch.nn.functional.layer_norm(input, normalized_shape, weight, bias, eps)`.
 */
export function layerNorm(
  input: Tensor,
  normalizedShape: number | readonly number[],
  weight?: Tensor,
  bias?: Tensor,
  options?: NormOptions,
): Tensor {
  const op = 'layerNorm';
  const shape = checkNormalizedShape(op, input, normalizedShape);
  const scale = checkOptionalTensor(op, 'weight', weight);
  const shift = checkOptionalTensor(op, 'bias', bias);
  if (scale !== undefined) checkShape(op, 'weight', scale, shape, 'normalizedShape');
  if (shift !== undefined) checkShape(op, 'bias', shift, shape, 'normalizedShape');
  const { eps = 1e-5 } = checkOptions(op, options, ['eps']);
  checkPositive(op, 'eps', eps);
  return aten.call(op, input, shape, scale, shift, eps);
}

/**
 * Group normalisation: the channels split into `numGroups` groups, each normalised over its
 * channels and spatial dims, `y = (x − E[x]) / √(Var[x] + eps) · weight + bias` (per-channel γ, β).
 *
 * @param input - `(N, C, *)`, `C` divisible by `numGroups`.
 * @param numGroups - the number of groups.
 * @param weight - optional `(C)` scale γ.
 * @param bias - optional `(C)` shift β.
 * @param options - `eps` (1e-5).
 *
 * **Shape**: `(N, C, *) → (N, C, *)`.
 *
 * @throws FlodlError `ERR_SHAPE` when `C` is not divisible by `numGroups` or a `(C)` tensor does
 *   not fit; `ERR_INVALID_ARGUMENT` for a bad `numGroups` or option.
 * @example
 * ```ts
 * const y = groupNorm(randn([4, 32, 8, 8]), 8);
 * ```
 * PyTorch: `torch.nn.functional.group_norm(input, num_groups, weight, bias, eps)`.
 */
export function groupNorm(
  input: Tensor,
  numGroups: number,
  weight?: Tensor,
  bias?: Tensor,
  options?: NormOptions,
): Tensor {
  const op = 'groupNorm';
  checkTensor(op, 'input', input);
  checkMinimumRank(op, 'input', input, 2, '(N, C, *)');
  checkInteger(op, 'numGroups', numGroups, 1);
  const channels = input.shape[1]!;
  if (channels % numGroups !== 0) {
    throw shapeError(
      op,
      'the channels do not split into groups',
      `C divisible by numGroups = ${numGroups}`,
      `C = ${channels} (input ${shapeText(input.shape)})`,
    );
  }
  const scale = checkChannelTensor(op, 'weight', weight, channels);
  const shift = checkChannelTensor(op, 'bias', bias, channels);
  const { eps = 1e-5 } = checkOptions(op, options, ['eps']);
  checkPositive(op, 'eps', eps);
  return aten.call(op, input, numGroups, scale, shift, eps);
}

/**
 * Root-mean-square normalisation over the trailing `normalizedShape` dims:
 * `y = x / √(mean(x²) + eps) · weight`.
 *
 * @param input - `(*, normalizedShape…)`, floating point.
 * @param normalizedShape - the trailing dims to normalise over (a number for one dim).
 * @param weight - optional γ of shape `normalizedShape`.
 * @param options - `eps` (the machine epsilon of the input's dtype, as PyTorch).
 *
 * **Shape**: `(*, normalizedShape…) → (*, normalizedShape…)`.
 *
 * @throws FlodlError `ERR_SHAPE` when the trailing dims or `weight` differ from `normalizedShape`;
 *   `ERR_DTYPE` for an integer input; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const y = rmsNorm(randn([8, 10, 32]), [32], ones([32]), { eps: 1e-6 });
 * ```
 * PyTorch: `torch.nn.functional.rms_norm(input, normalized_shape, weight, eps)` (PyTorch 2.4+).
 */
export function rmsNorm(
  input: Tensor,
  normalizedShape: number | readonly number[],
  weight?: Tensor,
  options?: RmsNormOptions,
): Tensor {
  const op = 'rmsNorm';
  const shape = checkNormalizedShape(op, input, normalizedShape);
  checkFloating(op, 'input', input, 'input must be floating point');
  const scale = checkOptionalTensor(op, 'weight', weight);
  if (scale !== undefined) checkShape(op, 'weight', scale, shape, 'normalizedShape');
  const { eps = MACHINE_EPSILON[input.dtype]! } = checkOptions(op, options, ['eps']);
  checkPositive(op, 'eps', eps);
  return aten.call(op, input, shape, scale, eps);
}

function checkNormalizedShape(op: string, input: Tensor, normalizedShape: unknown): number[] {
  checkTensor(op, 'input', input);
  const count =
    typeof normalizedShape === 'number' ? 1 : Array.isArray(normalizedShape) ? normalizedShape.length : 0;
  const shape = expandSizes(op, 'normalizedShape', normalizedShape, Math.max(count, 1), 1);
  const trailing = input.shape.slice(input.ndim - shape.length);
  if (input.ndim < shape.length || trailing.some((size, k) => size !== shape[k])) {
    throw shapeError(
      op,
      'input does not end with normalizedShape',
      `input [*, ${shape.join(', ')}]`,
      `input ${shapeText(input.shape)}`,
    );
  }
  return shape;
}
