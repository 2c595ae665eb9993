// The connectionist temporal classification (CTC) loss: aligning unsegmented label sequences
// with per-frame class log-probabilities.
import { aten, FlodlError, invalidArgument, Tensor } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkFloating,
  checkInteger,
  checkIntegerDtype,
  checkOptions,
  checkRankAmong,
  checkReduction,
  checkTensor,
  type Reduction,
  shapeError,
} from './arguments.js';

/** Options of `ctcLoss`. */
export interface CtcLossOptions {
  /** The index of the blank label. Default 0. */
  blank?: number;
  /** 'none', 'mean' (each loss divided by its target length, then averaged) or 'sum'. Default 'mean'. */
  reduction?: Reduction;
  /** Turn infinite losses (inputs too short for their targets) and their gradients into 0. Default false. */
  zeroInfinity?: boolean;
}

// One length per batch entry: an array of non-negative integers, or an integer tensor.
function checkLengths(
  op: string,
  name: string,
  value: unknown,
  batch: number,
  limit?: number,
): Tensor | number[] {
  if (value instanceof Tensor) {
    checkIntegerDtype(op, name, value, ['int64', 'int32']);
    if (value.numel !== batch || value.ndim > 1) {
      throw shapeError(op, `${name} must hold one length per batch entry`, `(${batch})`, value.shape);
    }
    return value;
  }
  if (!Array.isArray(value) || !value.every((length) => Number.isSafeInteger(length) && length >= 0)) {
    throw invalidArgument(op, name, 'an array of non-negative integers or an integer Tensor', value);
  }
  if (value.length !== batch) {
    throw shapeError(
      op,
      `${name} must hold one length per batch entry`,
      `${batch} lengths`,
      `${value.length}`,
    );
  }
  if (limit !== undefined && value.some((length) => length > limit)) {
    throw invalidArgument(op, name, `lengths of at most ${limit} (the input's time steps)`, value);
  }
  return value as number[];
}

/**
 * Connectionist temporal classification loss: `ℓ_n = -log Σ_{π ∈ B⁻¹(y_n)} Π_t x_{t, n, π_t}`,
 * summing over every alignment `π` of the target `y_n` (with blanks and repeats) to the input frames.
 * As in PyTorch, the gradient with respect to `logProbs` assumes they are normalized (it is the
 * gradient through a `logSoftmax` that produced them), so feed it `logSoftmax` outputs.
 *
 * @param logProbs - per-frame class log-probabilities (e.g. from `logSoftmax(2)`)
 * @param targets - label sequences (int64 or int32, no blanks): padded rows, or all concatenated
 * @param inputLengths - the frames of each batch entry, each <= T (numbers or an integer tensor)
 * @param targetLengths - the labels of each batch entry (numbers or an integer tensor)
 * @param options - `blank` (default 0), `reduction` (default 'mean'), `zeroInfinity` (default false)
 *
 * **Shape**: logProbs `(T, N, C)` or `(T, C)`; targets `(N, S)`, or `(sum(targetLengths))`, or `(S)`
 *   unbatched; inputLengths, targetLengths `(N)`; output `()`, or `(N)` with reduction 'none'.
 * @throws FlodlError ERR_SHAPE for a logProbs of another rank than 2 or 3, targets of the wrong rank
 *   or lengths not one per batch entry; ERR_DTYPE for integer logProbs or floating targets or
 *   lengths; ERR_INVALID_ARGUMENT for bad options or lengths; ERR_NATIVE when libtorch refuses
 *   the lengths (targets longer than S, lengths not summing to the concatenated targets)
 * @example
 * ```ts
 * const loss = ctcLoss(frames.logSoftmax(2), labels, [50, 42], [10, 7]);
 * ```
 * @see PyTorch `torch.nn.functional.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction='mean', zero_infinity=False)`
 */
export function ctcLoss(
  logProbs: Tensor,
  targets: Tensor,
  inputLengths: Tensor | readonly number[],
  targetLengths: Tensor | readonly number[],
  options?: CtcLossOptions,
): Tensor {
  const op = 'ctcLoss';
  const { blank, reduction, zeroInfinity } = checkOptions(op, options, [
    'blank',
    'reduction',
    'zeroInfinity',
  ]);
  const checkedLogProbs = checkFloating(op, 'logProbs', logProbs);
  checkRankAmong(op, 'logProbs', checkedLogProbs, [3, 2], '(T, N, C) or (T, C)');
  const [steps, classes] = [checkedLogProbs.shape[0]!, checkedLogProbs.shape[checkedLogProbs.ndim - 1]!];
  const batch = checkedLogProbs.ndim === 3 ? checkedLogProbs.shape[1]! : 1;
  const checkedTargets = checkTensor(op, 'targets', targets);
  checkIntegerDtype(op, 'targets', checkedTargets, ['int64', 'int32']);
  checkRankAmong(
    op,
    'targets',
    checkedTargets,
    checkedLogProbs.ndim === 3 ? [2, 1] : [1],
    '(N, S) or (sum(targetLengths))',
  );
  if (checkedTargets.ndim === 2 && checkedTargets.shape[0] !== batch) {
    throw shapeError(op, 'targets must have one row per batch entry', `(${batch}, S)`, checkedTargets.shape);
  }
  const checkedBlank = blank === undefined ? 0 : checkInteger(op, 'blank', blank, 0);
  if (checkedBlank >= classes) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'blank must be a class index', {
      op,
      expected: `an integer in [0, ${classes - 1}]`,
      got: String(checkedBlank),
    });
  }
  return aten.call(
    op,
    checkedLogProbs,
    checkedTargets,
    checkLengths(op, 'inputLengths', inputLengths, batch, steps),
    checkLengths(op, 'targetLengths', targetLengths, batch),
    checkedBlank,
    checkReduction(op, reduction),
    checkBoolean(op, 'zeroInfinity', zeroInfinity, false),
  );
}
