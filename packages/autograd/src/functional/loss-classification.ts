// Losses over class scores and probabilities: cross entropy and negative log-likelihood over C
// classes, binary cross entropy (on probabilities or on logits), and the KL divergence.
import { aten, invalidArgument, isFloatingPoint, type Tensor } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkBroadcast,
  checkBroadcastsTo,
  checkFloating,
  checkInteger,
  checkIntegerDtype,
  checkNumber,
  checkOptions,
  checkReduction,
  checkSameDtype,
  checkShape,
  checkTensor,
  checkTensorOrUndefined,
  type Reduction,
  shapeError,
} from './arguments.js';

/** Options of `nllLoss`. */
export interface NllLossOptions {
  /** A rescaling weight per class, shape `(C)`. Default none (all 1). */
  weight?: Tensor;
  /** A target value that adds nothing to the loss nor to the mean's divisor. Default -100. */
  ignoreIndex?: number;
  /** 'none', 'mean' (weighted by the target classes' weights) or 'sum'. Default 'mean'. */
  reduction?: Reduction;
}

/** Options of `crossEntropy`. */
export interface CrossEntropyOptions extends NllLossOptions {
  /** Mixes the target with the uniform distribution: `(1 - ε) y + ε / C`. In [0, 1]. Default 0. */
  labelSmoothing?: number;
}

/** Options of `binaryCrossEntropy`. */
export interface BinaryCrossEntropyOptions {
  /** A rescaling weight per element, broadcast to the target's shape. Default none. */
  weight?: Tensor;
  /** 'none', 'mean' or 'sum'. Default 'mean'. */
  reduction?: Reduction;
}

/** Options of `binaryCrossEntropyWithLogits`. */
export interface BinaryCrossEntropyWithLogitsOptions extends BinaryCrossEntropyOptions {
  /** A weight of the positive examples per class, broadcast to the input (usually `(C)`). Default none. */
  posWeight?: Tensor;
}

/** Options of `klDiv`. */
export interface KlDivOptions {
  /**
   * 'none', 'mean' (over all elements), 'sum', or 'batchmean' (the sum divided by the batch
   * size, the mathematically right KL divergence). Default 'mean', as in PyTorch.
   */
  reduction?: Reduction | 'batchmean';
  /** The target holds log-probabilities rather than probabilities. Default false. */
  logTarget?: boolean;
}

// The weight and class-index target of nllLoss and crossEntropy (class indices, not probabilities).
function checkClassTarget(op: string, input: Tensor, target: Tensor): void {
  checkIntegerDtype(op, 'target', target, ['int64']);
  // (C) -> (), (N, C, d1, ..., dK) -> (N, d1, ..., dK)
  const expected = input.ndim === 1 ? [] : [input.shape[0]!, ...input.shape.slice(2)];
  checkShape(op, 'target', target, expected);
}

function checkClassInput(op: string, input: unknown, weight: unknown): [Tensor, Tensor | undefined] {
  const checkedInput = checkFloating(op, 'input', input);
  if (checkedInput.ndim < 1)
    throw shapeError(op, 'input must have a class dim', '(C) or (N, C, d1, ..., dK)', checkedInput.shape);
  const classes = checkedInput.shape[checkedInput.ndim === 1 ? 0 : 1]!;
  const checkedWeight = checkTensorOrUndefined(op, 'weight', weight);
  if (checkedWeight !== undefined) {
    checkShape(op, 'weight', checkedWeight, [classes]);
    checkSameDtype(op, 'weight', checkedWeight, checkedInput, 'input');
  }
  return [checkedInput, checkedWeight];
}

/**
 * Cross entropy of class scores and targets: `ℓ_n = -Σ_c w_c y_{n,c} log softmax(x_n)_c`,
 * with `y` one-hot class indices (reduced over n by the weights' sum with 'mean') or class
 * probabilities (reduced over n by N with 'mean'), mixed with `ε / C` by label smoothing.
 *
 * @param input - unnormalized class scores (logits)
 * @param target - class indices (int64) in [0, C), or probabilities of the input's shape (floating)
 * @param options - `weight` (per class), `ignoreIndex` (default -100, class indices only),
 *   `reduction` (default 'mean'), `labelSmoothing` (default 0)
 *
 * **Shape**: input `(C)`, `(N, C)` or `(N, C, d1, ..., dK)`; target `()`, `(N)` or
 *   `(N, d1, ..., dK)` of indices, or the input's shape of probabilities; weight `(C)`;
 *   output `()`, or the target's per-sample shape with reduction 'none'.
 * @throws FlodlError ERR_DTYPE for an integer input or a non-int64 index target; ERR_SHAPE for a
 *   target or weight of the wrong shape; ERR_INVALID_ARGUMENT for bad options, and from libtorch
 *   for an index out of [0, C)
 * @example
 * ```ts
 * const loss = crossEntropy(logits, labels, { labelSmoothing: 0.1 }); // labels: int64 (N)
 * ```
 * @see PyTorch `torch.nn.functional.cross_entropy(input, target, weight=None, ignore_index=-100, reduction='mean', label_smoothing=0.0)`
 */
export function crossEntropy(input: Tensor, target: Tensor, options?: CrossEntropyOptions): Tensor {
  const op = 'crossEntropy';
  const { weight, ignoreIndex, reduction, labelSmoothing } = checkOptions(op, options, [
    'weight',
    'ignoreIndex',
    'reduction',
    'labelSmoothing',
  ]);
  const [checkedInput, checkedWeight] = checkClassInput(op, input, weight);
  const checkedTarget = checkTensor(op, 'target', target);
  const index = ignoreIndex === undefined ? -100 : checkInteger(op, 'ignoreIndex', ignoreIndex);
  if (isFloatingPoint(checkedTarget.dtype)) {
    checkShape(op, 'target (class probabilities)', checkedTarget, checkedInput.shape);
    checkSameDtype(op, 'target (class probabilities)', checkedTarget, checkedInput, 'input');
    // libtorch ignores no class of a probability target; only the default (negative) index passes.
    if (index >= 0) {
      throw invalidArgument(
        op,
        'ignoreIndex',
        'a negative index (no class is ignored with probability targets)',
        index,
      );
    }
  } else {
    checkClassTarget(op, checkedInput, checkedTarget);
  }
  return aten.call(
    op,
    checkedInput,
    checkedTarget,
    checkedWeight,
    checkReduction(op, reduction),
    index,
    checkNumber(op, 'labelSmoothing', labelSmoothing, { fallback: 0, min: 0, max: 1 }),
  );
}

/**
 * Negative log-likelihood of class log-probabilities: `ℓ_n = -w_{y_n} x_{n, y_n}`, reduced over
 * n by the sum of `w_{y_n}` with 'mean'. Targets equal to `ignoreIndex` count for nothing.
 *
 * @param input - log-probabilities per class (e.g. from `logSoftmax`)
 * @param target - class indices (int64) in [0, C), or `ignoreIndex`
 * @param options - `weight` (per class), `ignoreIndex` (default -100), `reduction` (default 'mean')
 *
 * **Shape**: input `(C)`, `(N, C)` or `(N, C, d1, ..., dK)`; target `()`, `(N)` or
 *   `(N, d1, ..., dK)`; weight `(C)`; output `()`, or the target's shape with reduction 'none'.
 * @throws FlodlError ERR_DTYPE for an integer input or a non-int64 target; ERR_SHAPE for a target
 *   or weight of the wrong shape; ERR_INVALID_ARGUMENT for bad options, and from libtorch for an
 *   index out of [0, C)
 * @example
 * ```ts
 * const loss = nllLoss(logits.logSoftmax(1), labels, { ignoreIndex: 0 });
 * ```
 * @see PyTorch `torch.nn.functional.nll_loss(input, target, weight=None, ignore_index=-100, reduction='mean')`
 */
export function nllLoss(input: Tensor, target: Tensor, options?: NllLossOptions): Tensor {
  const op = 'nllLoss';
  const { weight, ignoreIndex, reduction } = checkOptions(op, options, [
    'weight',
    'ignoreIndex',
    'reduction',
  ]);
  const [checkedInput, checkedWeight] = checkClassInput(op, input, weight);
  const checkedTarget = checkTensor(op, 'target', target);
  checkClassTarget(op, checkedInput, checkedTarget);
  const index = ignoreIndex === undefined ? -100 : checkInteger(op, 'ignoreIndex', ignoreIndex);
  return aten.call(op, checkedInput, checkedTarget, checkedWeight, checkReduction(op, reduction), index);
}

// Input, target (same shape, floating) and weight of the binary cross entropies.
function checkBinary(
  op: string,
  input: unknown,
  target: unknown,
  weight: unknown,
): [Tensor, Tensor, Tensor | undefined] {
  const checkedInput = checkFloating(op, 'input', input);
  const checkedTarget = checkFloating(op, 'target', target);
  checkShape(op, 'target', checkedTarget, checkedInput.shape);
  const checkedWeight = checkTensorOrUndefined(op, 'weight', weight);
  if (checkedWeight !== undefined) checkBroadcastsTo(op, 'weight', checkedWeight, checkedInput.shape);
  return [checkedInput, checkedTarget, checkedWeight];
}

/**
 * Binary cross entropy of probabilities: `ℓ = reduce(-w (y log x + (1 - y) log(1 - x)))`, with
 * each log clamped at -100.
 *
 * @param input - probabilities `x` in [0, 1] (e.g. from `sigmoid`)
 * @param target - targets `y` in [0, 1], the input's shape
 * @param options - `weight` (per element, broadcast), `reduction` (default 'mean')
 *
 * **Shape**: input `(*)`, target `(*)` (the same), weight broadcast to `(*)`; output `()`, or `(*)`
 *   with reduction 'none'.
 * @throws FlodlError ERR_SHAPE when target and input differ in shape or the weight does not
 *   broadcast; ERR_DTYPE for integer input or target; ERR_INVALID_ARGUMENT for bad options;
 *   ERR_NATIVE for input values outside [0, 1]
 * @example
 * ```ts
 * const loss = binaryCrossEntropy(scores.sigmoid(), labels);
 * ```
 * @see PyTorch `torch.nn.functional.binary_cross_entropy(input, target, weight=None, reduction='mean')`
 */
export function binaryCrossEntropy(
  input: Tensor,
  target: Tensor,
  options?: BinaryCrossEntropyOptions,
): Tensor {
  const op = 'binaryCrossEntropy';
  const { weight, reduction } = checkOptions(op, options, ['weight', 'reduction']);
  const checked = checkBinary(op, input, target, weight);
  return aten.call(op, ...checked, checkReduction(op, reduction));
}

/**
 * Binary cross entropy of logits, stable for any `x`:
 * `ℓ = reduce(-w (p y log σ(x) + (1 - y) log(1 - σ(x))))`, with `p` the positive weight.
 *
 * @param input - logits `x`
 * @param target - targets `y` in [0, 1], the input's shape
 * @param options - `weight` (per element, broadcast), `posWeight` (per class, broadcast),
 *   `reduction` (default 'mean')
 *
 * **Shape**: input `(*)`, target `(*)` (the same), weight and posWeight broadcast to `(*)` (posWeight
 *   usually `(C)` for input `(N, C)`); output `()`, or `(*)` with reduction 'none'.
 * @throws FlodlError ERR_SHAPE when target and input differ in shape or a weight does not broadcast;
 *   ERR_DTYPE for integer input or target; ERR_INVALID_ARGUMENT for bad options
 * @example
 * ```ts
 * const loss = binaryCrossEntropyWithLogits(logits, labels, { posWeight: Tensor.from([3, 1]) });
 * ```
 * @see PyTorch `torch.nn.functional.binary_cross_entropy_with_logits(input, target, weight=None, reduction='mean', pos_weight=None)`
 */
export function binaryCrossEntropyWithLogits(
  input: Tensor,
  target: Tensor,
  options?: BinaryCrossEntropyWithLogitsOptions,
): Tensor {
  const op = 'binaryCrossEntropyWithLogits';
  const { weight, posWeight, reduction } = checkOptions(op, options, ['weight', 'posWeight', 'reduction']);
  const [checkedInput, checkedTarget, checkedWeight] = checkBinary(op, input, target, weight);
  const checkedPosWeight = checkTensorOrUndefined(op, 'posWeight', posWeight);
  if (checkedPosWeight !== undefined)
    checkBroadcastsTo(op, 'posWeight', checkedPosWeight, checkedInput.shape);
  return aten.call(
    op,
    checkedInput,
    checkedTarget,
    checkedWeight,
    checkedPosWeight,
    checkReduction(op, reduction),
  );
}

/**
 * Kullback-Leibler divergence of the target from the input's distribution:
 * `ℓ = reduce(y (log y - x))`, or `reduce(exp(y) (y - x))` with `logTarget`.
 *
 * @param input - log-probabilities `x`
 * @param target - probabilities `y` (log-probabilities with `logTarget`), broadcast with `input`
 * @param options - `reduction` (default 'mean'; 'batchmean' gives the true KL divergence),
 *   `logTarget` (default false)
 *
 * **Shape**: input `(*)`, target `(*)`; output `()`, or the broadcast shape with reduction 'none'.
 * @throws FlodlError ERR_DTYPE for integer input or target; ERR_SHAPE when they do not broadcast;
 *   ERR_INVALID_ARGUMENT for bad options
 * @example
 * ```ts
 * const loss = klDiv(student.logSoftmax(1), teacher.softmax(1), { reduction: 'batchmean' });
 * ```
 * @see PyTorch `torch.nn.functional.kl_div(input, target, reduction='mean', log_target=False)`
 */
export function klDiv(input: Tensor, target: Tensor, options?: KlDivOptions): Tensor {
  const op = 'klDiv';
  const { reduction, logTarget } = checkOptions(op, options, ['reduction', 'logTarget']);
  const checkedInput = checkFloating(op, 'input', input);
  const checkedTarget = checkFloating(op, 'target', target);
  checkBroadcast(op, 'input', checkedInput, 'target', checkedTarget);
  const mode = checkReduction<Reduction | 'batchmean'>(op, reduction, ['none', 'mean', 'sum', 'batchmean']);
  return aten.call(op, checkedInput, checkedTarget, mode, checkBoolean(op, 'logTarget', logTarget, false));
}
