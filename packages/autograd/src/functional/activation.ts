// Activation functions (PyTorch: torch.nn.functional.relu … log_softmax). Those the Tensor API
// already has are called through it; selu, mish, hardswish, hardsigmoid and prelu are native.
// No `inplace` option: these functions never mutate their input.
import { aten, type DType, type Tensor } from '@flodl/tensor-native';
import {
  checkInteger,
  checkNumber,
  checkOneOf,
  checkOptions,
  checkTensor,
  shapeError,
  shapeText,
} from './arguments.js';

/** Options of `leakyRelu`. */
export interface LeakyReluOptions {
  /** Slope for negative inputs. Default 0.01. */
  negativeSlope?: number;
}

/** Options of `elu`. */
export interface EluOptions {
  /** Saturation value for large negative inputs. Default 1. */
  alpha?: number;
}

/** Options of `gelu`. */
export interface GeluOptions {
  /** `'none'` for the exact `x · Φ(x)`, `'tanh'` for the tanh approximation. Default `'none'`. */
  approximate?: 'none' | 'tanh';
}

/** Options of `softplus`. */
export interface SoftplusOptions {
  /** Sharpness. Default 1. */
  beta?: number;
  /** Above `beta · x > threshold` the function is linear. Default 20. */
  threshold?: number;
}

/** Options of `softmax` and `logSoftmax`. */
export interface SoftmaxOptions {
  /** Cast the input to this dtype first (and return it), e.g. float32 for float16 inputs. Default: the input's. */
  dtype?: DType;
}

/**
 * Rectified linear unit: `relu(x) = max(0, x)`.
 *
 * @param input - any shape.
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `input` is not a Tensor.
 * @example
 * ```ts
 * relu(Tensor.from([-1, 2])); // [0, 2]
 * ```
 * PyTorch: `torch.nn.functional.relu(input)`.
 */
export function relu(input: Tensor): Tensor {
  return checkTensor('relu', 'input', input).relu();
}

/**
 * Leaky ReLU: `leakyRelu(x) = max(0, x) + negativeSlope · min(0, x)`.
 *
 * @param input - any shape.
 * @param options - `negativeSlope` (0.01).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * leakyRelu(Tensor.from([-1, 2]), { negativeSlope: 0.2 }); // [-0.2, 2]
 * ```
 * PyTorch: `torch.nn.functional.leaky_relu(input, negative_slope)`.
 */
export function leakyRelu(input: Tensor, options?: LeakyReluOptions): Tensor {
  checkTensor('leakyRelu', 'input', input);
  const { negativeSlope = 0.01 } = checkOptions('leakyRelu', options, ['negativeSlope']);
  return input.leakyRelu(checkNumber('leakyRelu', 'negativeSlope', negativeSlope));
}

/**
 * Exponential linear unit: `elu(x) = x` for `x > 0`, `alpha · (exp(x) − 1)` otherwise.
 *
 * @param input - any shape.
 * @param options - `alpha` (1).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * elu(Tensor.from([-1, 2]), { alpha: 0.5 }); // [-0.316, 2]
 * ```
 * PyTorch: `torch.nn.functional.elu(input, alpha)`.
 */
export function elu(input: Tensor, options?: EluOptions): Tensor {
  checkTensor('elu', 'input', input);
  const { alpha = 1 } = checkOptions('elu', options, ['alpha']);
  return input.elu(checkNumber('elu', 'alpha', alpha));
}

/**
 * Scaled ELU: `selu(x) = scale · (max(0, x) + min(0, α · (exp(x) − 1)))`, with
 * `α ≈ 1.6733` and `scale ≈ 1.0507` (self-normalising).
 *
 * @param input - any shape.
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `input` is not a Tensor.
 * @example
 * ```ts
 * selu(randn([4, 8]));
 * ```
 * PyTorch: `torch.nn.functional.selu(input)`.
 */
export function selu(input: Tensor): Tensor {
  return aten.call('selu', checkTensor('selu', 'input', input));
}

/**
 * Gaussian error linear unit: `gelu(x) = x · Φ(x)`, or with `approximate: 'tanh'`
 * `0.5 · x · (1 + tanh(√(2/π) · (x + 0.044715 · x³)))`.
 *
 * @param input - any shape.
 * @param options - `approximate` (`'none'`).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * gelu(x, { approximate: 'tanh' });
 * ```
 * PyTorch: `torch.nn.functional.gelu(input, approximate)`.
 */
export function gelu(input: Tensor, options?: GeluOptions): Tensor {
  checkTensor('gelu', 'input', input);
  const { approximate = 'none' } = checkOptions('gelu', options, ['approximate']);
  return input.gelu(checkOneOf('gelu', 'approximate', approximate, ['none', 'tanh'] as const));
}

/**
 * Sigmoid linear unit (swish): `silu(x) = x · σ(x)`.
 *
 * @param input - any shape.
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `input` is not a Tensor.
 * @example
 * ```ts
 * silu(randn([4, 8]));
 * ```
 * PyTorch: `torch.nn.functional.silu(input)`.
 */
export function silu(input: Tensor): Tensor {
  return checkTensor('silu', 'input', input).silu();
}

/**
 * Mish: `mish(x) = x · tanh(softplus(x))`.
 *
 * @param input - any shape.
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `input` is not a Tensor.
 * @example
 * ```ts
 * mish(randn([4, 8]));
 * ```
 * PyTorch: `torch.nn.functional.mish(input)`.
 */
export function mish(input: Tensor): Tensor {
  return aten.call('mish', checkTensor('mish', 'input', input));
}

/**
 * Softplus: `softplus(x) = log(1 + exp(beta · x)) / beta`, and `x` where `beta · x > threshold`.
 *
 * @param input - any shape.
 * @param options - `beta` (1), `threshold` (20).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * softplus(x, { beta: 2 });
 * ```
 * PyTorch: `torch.nn.functional.softplus(input, beta, threshold)`.
 */
export function softplus(input: Tensor, options?: SoftplusOptions): Tensor {
  checkTensor('softplus', 'input', input);
  const { beta = 1, threshold = 20 } = checkOptions('softplus', options, ['beta', 'threshold']);
  return input.softplus(
    checkNumber('softplus', 'beta', beta),
    checkNumber('softplus', 'threshold', threshold),
  );
}

/**
 * Hyperbolic tangent: `tanh(x) = (exp(x) − exp(−x)) / (exp(x) + exp(−x))`.
 *
 * @param input - any shape.
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `input` is not a Tensor.
 * @example
 * ```ts
 * tanh(randn([4, 8]));
 * ```
 * PyTorch: `torch.nn.functional.tanh(input)`.
 */
export function tanh(input: Tensor): Tensor {
  return checkTensor('tanh', 'input', input).tanh();
}

/**
 * Logistic sigmoid: `σ(x) = 1 / (1 + exp(−x))`.
 *
 * @param input - any shape.
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `input` is not a Tensor.
 * @example
 * ```ts
 * sigmoid(randn([4, 8]));
 * ```
 * PyTorch: `torch.nn.functional.sigmoid(input)`.
 */
export function sigmoid(input: Tensor): Tensor {
  return checkTensor('sigmoid', 'input', input).sigmoid();
}

/**
 * Hard swish: `hardswish(x) = x · relu6(x + 3) / 6`.
 *
 * @param input - any shape.
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `input` is not a Tensor.
 * @example
 * ```ts
 * hardswish(randn([4, 8]));
 * ```
 * PyTorch: `torch.nn.functional.hardswish(input)`.
 */
export function hardswish(input: Tensor): Tensor {
  return aten.call('hardswish', checkTensor('hardswish', 'input', input));
}

/**
 * Hard sigmoid: `hardsigmoid(x) = relu6(x + 3) / 6`.
 *
 * @param input - any shape.
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `input` is not a Tensor.
 * @example
 * ```ts
 * hardsigmoid(randn([4, 8]));
 * ```
 * PyTorch: `torch.nn.functional.hardsigmoid(input)`.
 */
export function hardsigmoid(input: Tensor): Tensor {
  return aten.call('hardsigmoid', checkTensor('hardsigmoid', 'input', input));
}

/**
 * Parametric ReLU: `prelu(x) = max(0, x) + weight · min(0, x)`, with one learned slope, or one per
 * channel (dim 1).
 *
 * @param input - `(N, C, *)`, or any shape with a one-element weight.
 * @param weight - `(1)` or `(C)`.
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_SHAPE` when `weight` has neither 1 nor `C` elements.
 * @example
 * ```ts
 * prelu(randn([2, 3, 8]), full([3], 0.25));
 * ```
 * PyTorch: `torch.nn.functional.prelu(input, weight)`.
 */
export function prelu(input: Tensor, weight: Tensor): Tensor {
  checkTensor('prelu', 'input', input);
  checkTensor('prelu', 'weight', weight);
  const channels = input.ndim >= 2 ? input.shape[1]! : 1;
  if (weight.ndim > 1 || (weight.numel !== 1 && weight.numel !== channels)) {
    throw shapeError(
      'prelu',
      'weight does not fit the channels',
      `1 or ${channels} slopes (input dim 1), as a 1-d tensor`,
      `weight ${shapeText(weight.shape)}`,
    );
  }
  return aten.call('prelu', input, weight);
}

function softmaxOptions(
  op: string,
  input: Tensor,
  dim: number,
  options: SoftmaxOptions | undefined,
): SoftmaxOptions {
  checkTensor(op, 'input', input);
  checkInteger(op, 'dim', dim);
  return checkOptions(op, options, ['dtype']);
}

/**
 * Softmax along `dim`: `softmax(x)_i = exp(x_i) / Σ_j exp(x_j)`.
 *
 * @param input - any shape.
 * @param dim - the dim that sums to 1 (negative counts from the end).
 * @param options - `dtype` (the input's).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `dim` is out of range or an option is bad or unknown.
 * @example
 * ```ts
 * const probabilities = softmax(logits, -1);
 * ```
 * PyTorch: `torch.nn.functional.softmax(input, dim, dtype=dtype)`.
 */
export function softmax(input: Tensor, dim: number, options?: SoftmaxOptions): Tensor {
  return input.softmax(dim, softmaxOptions('softmax', input, dim, options));
}

/**
 * Log-softmax along `dim`, computed stably: `logSoftmax(x)_i = x_i − log Σ_j exp(x_j)`.
 *
 * @param input - any shape.
 * @param dim - the dim to normalise (negative counts from the end).
 * @param options - `dtype` (the input's).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `dim` is out of range or an option is bad or unknown.
 * @example
 * ```ts
 * const logProbabilities = logSoftmax(logits, -1);
 * ```
 * PyTorch: `torch.nn.functional.log_softmax(input, dim, dtype=dtype)`.
 */
export function logSoftmax(input: Tensor, dim: number, options?: SoftmaxOptions): Tensor {
  return input.logSoftmax(dim, softmaxOptions('logSoftmax', input, dim, options));
}
