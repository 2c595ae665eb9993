// Losses that compare values element by element: squared and absolute error, their smooth
// blends (smooth L1, Huber) and the Poisson negative log-likelihood.
import { aten, type Tensor } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkBroadcast,
  checkFloating,
  checkNumber,
  checkOptions,
  checkReduction,
  checkTensor,
  type Reduction,
} from './arguments.js';

/** Options of the losses that only reduce. */
export interface LossOptions {
  /** 'none' keeps one value per element, 'mean' averages them, 'sum' adds them. Default 'mean'. */
  reduction?: Reduction;
}

/** Options of `smoothL1Loss`. */
export interface SmoothL1LossOptions extends LossOptions {
  /** Where the loss turns from quadratic to linear; 0 gives the L1 loss. Default 1. */
  beta?: number;
}

/** Options of `huberLoss`. */
export interface HuberLossOptions extends LossOptions {
  /** Where the loss turns from quadratic to linear. Default 1. */
  delta?: number;
}

/** Options of `poissonNllLoss`. */
export interface PoissonNllLossOptions extends LossOptions {
  /** The input holds log-rates (`exp(x) - y·x`) rather than rates (`x - y·log(x + eps)`). Default true. */
  logInput?: boolean;
  /** Add Stirling's approximation of `log(y!)` (for targets above 1). Default false. */
  full?: boolean;
  /** Keeps `log(x + eps)` finite when `logInput` is false. Default 1e-8. */
  eps?: number;
}

// Input and target of an element-wise loss: a floating input, and a target that broadcasts with it.
function checkPair(op: string, input: unknown, target: unknown): [Tensor, Tensor] {
  const checkedInput = checkFloating(op, 'input', input);
  const checkedTarget = checkTensor(op, 'target', target);
  checkBroadcast(op, 'input', checkedInput, 'target', checkedTarget);
  return [checkedInput, checkedTarget];
}

/**
 * Mean squared error: `ℓ = reduce((x - y)²)`.
 *
 * @param input - predictions `x`
 * @param target - targets `y`, broadcast with `input`
 * @param options - `reduction` (default 'mean')
 *
 * **Shape**: input `(*)`, target `(*)`; output `()`, or the broadcast shape with reduction 'none'.
 * @throws FlodlError ERR_INVALID_ARGUMENT for a bad reduction or an unknown option; ERR_DTYPE for an
 *   integer input; ERR_SHAPE when input and target do not broadcast
 * @example
 * ```ts
 * const loss = mseLoss(prediction, target); // 0-d
 * ```
 * @see PyTorch `torch.nn.functional.mse_loss(input, target, reduction='mean')`
 */
export function mseLoss(input: Tensor, target: Tensor, options?: LossOptions): Tensor {
  const { reduction } = checkOptions('mseLoss', options, ['reduction']);
  const pair = checkPair('mseLoss', input, target);
  return aten.call('mseLoss', ...pair, checkReduction('mseLoss', reduction));
}

/**
 * Mean absolute error: `ℓ = reduce(|x - y|)`.
 *
 * @param input - predictions `x`
 * @param target - targets `y`, broadcast with `input`
 * @param options - `reduction` (default 'mean')
 *
 * **Shape**: input `(*)`, target `(*)`; output `()`, or the broadcast shape with reduction 'none'.
 * @throws FlodlError ERR_INVALID_ARGUMENT for a bad reduction or an unknown option; ERR_DTYPE for an
 *   integer input; ERR_SHAPE when input and target do not broadcast
 * @example
 * ```ts
 * const loss = l1Loss(prediction, target, { reduction: 'sum' });
 * ```
 * @see PyTorch `torch.nn.functional.l1_loss(input, target, reduction='mean')`
 */
export function l1Loss(input: Tensor, target: Tensor, options?: LossOptions): Tensor {
  const { reduction } = checkOptions('l1Loss', options, ['reduction']);
  const pair = checkPair('l1Loss', input, target);
  return aten.call('l1Loss', ...pair, checkReduction('l1Loss', reduction));
}

/**
 * Smooth L1 loss: `ℓ = reduce(0.5 (x - y)² / β if |x - y| < β else |x - y| - 0.5 β)`.
 *
 * @param input - predictions `x`
 * @param target - targets `y`, broadcast with `input`
 * @param options - `reduction` (default 'mean'), `beta` (default 1, >= 0)
 *
 * **Shape**: input `(*)`, target `(*)`; output `()`, or the broadcast shape with reduction 'none'.
 * @throws FlodlError ERR_INVALID_ARGUMENT for a bad reduction, a negative beta or an unknown option;
 *   ERR_DTYPE for an integer input; ERR_SHAPE when input and target do not broadcast
 * @example
 * ```ts
 * const loss = smoothL1Loss(boxes, targetBoxes, { beta: 0.5 });
 * ```
 * @see PyTorch `torch.nn.functional.smooth_l1_loss(input, target, reduction='mean', beta=1.0)`
 */
export function smoothL1Loss(input: Tensor, target: Tensor, options?: SmoothL1LossOptions): Tensor {
  const { reduction, beta } = checkOptions('smoothL1Loss', options, ['reduction', 'beta']);
  const pair = checkPair('smoothL1Loss', input, target);
  return aten.call(
    'smoothL1Loss',
    ...pair,
    checkReduction('smoothL1Loss', reduction),
    checkNumber('smoothL1Loss', 'beta', beta, { fallback: 1, min: 0 }),
  );
}

/**
 * Huber loss: `ℓ = reduce(0.5 (x - y)² if |x - y| < δ else δ (|x - y| - 0.5 δ))`.
 *
 * @param input - predictions `x`
 * @param target - targets `y`, broadcast with `input`
 * @param options - `reduction` (default 'mean'), `delta` (default 1, > 0)
 *
 * **Shape**: input `(*)`, target `(*)`; output `()`, or the broadcast shape with reduction 'none'.
 * @throws FlodlError ERR_INVALID_ARGUMENT for a bad reduction, a delta <= 0 or an unknown option;
 *   ERR_DTYPE for an integer input; ERR_SHAPE when input and target do not broadcast
 * @example
 * ```ts
 * const loss = huberLoss(prediction, target, { delta: 2 });
 * ```
 * @see PyTorch `torch.nn.functional.huber_loss(input, target, reduction='mean', delta=1.0)`
 */
export function huberLoss(input: Tensor, target: Tensor, options?: HuberLossOptions): Tensor {
  const { reduction, delta } = checkOptions('huberLoss', options, ['reduction', 'delta']);
  const pair = checkPair('huberLoss', input, target);
  const checkedDelta = checkNumber('huberLoss', 'delta', delta, { fallback: 1, min: Number.MIN_VALUE });
  return aten.call('huberLoss', ...pair, checkReduction('huberLoss', reduction), checkedDelta);
}

/**
 * Poisson negative log-likelihood: `ℓ = reduce(exp(x) - y·x)` for log-rates, or
 * `reduce(x - y·log(x + eps))` for rates, plus `y·log(y) - y + 0.5·log(2πy)` when `full`.
 *
 * @param input - predicted log-rates (or rates with `logInput: false`)
 * @param target - observed counts `y`, broadcast with `input`
 * @param options - `logInput` (default true), `full` (default false), `eps` (default 1e-8),
 *   `reduction` (default 'mean')
 *
 * **Shape**: input `(*)`, target `(*)`; output `()`, or the broadcast shape with reduction 'none'.
 * @throws FlodlError ERR_INVALID_ARGUMENT for a bad reduction, a negative eps or an unknown option;
 *   ERR_DTYPE for an integer input; ERR_SHAPE when input and target do not broadcast
 * @example
 * ```ts
 * const loss = poissonNllLoss(logRates, counts);
 * ```
 * @see PyTorch `torch.nn.functional.poisson_nll_loss(input, target, log_input=True, full=False, eps=1e-8, reduction='mean')`
 */
export function poissonNllLoss(input: Tensor, target: Tensor, options?: PoissonNllLossOptions): Tensor {
  const op = 'poissonNllLoss';
  const { logInput, full, eps, reduction } = checkOptions(op, options, [
    'logInput',
    'full',
    'eps',
    'reduction',
  ]);
  const pair = checkPair(op, input, target);
  return aten.call(
    op,
    ...pair,
    checkBoolean(op, 'logInput', logInput, true),
    checkBoolean(op, 'full', full, false),
    checkNumber(op, 'eps', eps, { fallback: 1e-8, min: 0 }),
    checkReduction(op, reduction),
  );
}
