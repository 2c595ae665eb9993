// Losses that compare pairs or triplets of embeddings and scores: cosine embedding, margin
// ranking and triplet margin losses.
import { aten, type Tensor } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkBroadcast,
  checkFloating,
  checkNumber,
  checkOptions,
  checkRankAmong,
  checkReduction,
  checkShape,
  checkTensor,
  type Reduction,
  shapeError,
  shapeText,
} from './arguments.js';

/** Options of `cosineEmbeddingLoss` and `marginRankingLoss`. */
export interface MarginLossOptions {
  /** The margin the loss asks for. Default 0. */
  margin?: number;
  /** 'none', 'mean' or 'sum'. Default 'mean'. */
  reduction?: Reduction;
}

/** Options of `tripletMarginLoss`. */
export interface TripletMarginLossOptions {
  /** How much closer the positive must be than the negative. Default 1. */
  margin?: number;
  /** The norm degree of the pairwise distance. Default 2. */
  p?: number;
  /** Added to the differences before the norm, for stability. Default 1e-6. */
  eps?: number;
  /** Use the positive-negative distance when it is smaller (the distance swap). Default false. */
  swap?: boolean;
  /** 'none', 'mean' or 'sum'. Default 'mean'. */
  reduction?: Reduction;
}

/**
 * What cosineEmbeddingLoss and marginRankingLoss share: checks the options and both inputs,
 * lets `checkTarget` check the shapes and return the target, then calls the op.
 */
function marginLoss(
  op: 'cosineEmbeddingLoss' | 'marginRankingLoss',
  input1: unknown,
  input2: unknown,
  options: MarginLossOptions | undefined,
  checkTarget: (first: Tensor, second: Tensor) => Tensor,
): Tensor {
  const { margin, reduction } = checkOptions(op, options, ['margin', 'reduction']);
  const first = checkFloating(op, 'input1', input1);
  const second = checkFloating(op, 'input2', input2);
  const target = checkTarget(first, second);
  const checkedMargin = checkNumber(op, 'margin', margin, { fallback: 0 });
  return aten.call(op, first, second, target, checkedMargin, checkReduction(op, reduction));
}

/**
 * Cosine embedding loss: `ℓ_n = 1 - cos(x1_n, x2_n)` where `y_n = 1`, and
 * `max(0, cos(x1_n, x2_n) - margin)` where `y_n = -1`.
 *
 * @param input1 - first embeddings
 * @param input2 - second embeddings, the shape of `input1`
 * @param target - 1 (similar) or -1 (dissimilar) per pair
 * @param options - `margin` (default 0; meaningful in [-1, 1]), `reduction` (default 'mean')
 *
 * **Shape**: input1, input2 `(N, D)` or `(D)`; target `(N)` or `()`; output `()`, or `(N)` with
 *   reduction 'none'.
 * @throws FlodlError ERR_SHAPE for inputs of different shapes, of another rank than 1 or 2, or a
 *   target of the wrong shape; ERR_DTYPE for integer inputs; ERR_INVALID_ARGUMENT for bad options
 * @example
 * ```ts
 * const loss = cosineEmbeddingLoss(left, right, same, { margin: 0.5 }); // same: 1 or -1 per row
 * ```
 * @see PyTorch `torch.nn.functional.cosine_embedding_loss(input1, input2, target, margin=0, reduction='mean')`
 */
export function cosineEmbeddingLoss(
  input1: Tensor,
  input2: Tensor,
  target: Tensor,
  options?: MarginLossOptions,
): Tensor {
  const op = 'cosineEmbeddingLoss';
  return marginLoss(op, input1, input2, options, (first, second) => {
    checkRankAmong(op, 'input1', first, [1, 2], '(N, D) or (D)');
    checkShape(op, 'input2', second, first.shape);
    const checkedTarget = checkTensor(op, 'target', target);
    checkShape(op, 'target', checkedTarget, first.shape.slice(0, -1));
    return checkedTarget;
  });
}

/**
 * Margin ranking loss: `ℓ = reduce(max(0, -y (x1 - x2) + margin))`, asking `x1` to rank above
 * `x2` by the margin where `y = 1`, and below where `y = -1`.
 *
 * @param input1 - first scores
 * @param input2 - second scores
 * @param target - 1 or -1 per pair
 * @param options - `margin` (default 0), `reduction` (default 'mean')
 *
 * **Shape**: input1, input2, target `(N)` or `()` (all of one rank, broadcast together); output `()`,
 *   or `(N)` with reduction 'none'.
 * @throws FlodlError ERR_SHAPE for arguments of different ranks or shapes that do not broadcast;
 *   ERR_DTYPE for integer inputs; ERR_INVALID_ARGUMENT for bad options
 * @example
 * ```ts
 * const loss = marginRankingLoss(scoreA, scoreB, aIsBetter, { margin: 0.1 });
 * ```
 * @see PyTorch `torch.nn.functional.margin_ranking_loss(input1, input2, target, margin=0, reduction='mean')`
 */
export function marginRankingLoss(
  input1: Tensor,
  input2: Tensor,
  target: Tensor,
  options?: MarginLossOptions,
): Tensor {
  const op = 'marginRankingLoss';
  return marginLoss(op, input1, input2, options, (first, second) => {
    const checkedTarget = checkTensor(op, 'target', target);
    if (first.ndim !== second.ndim || first.ndim !== checkedTarget.ndim) {
      const shapes = [first, second, checkedTarget].map((tensor) => shapeText(tensor.shape)).join(', ');
      throw shapeError(
        op,
        'input1, input2 and target must have the same rank',
        'three tensors of one rank',
        shapes,
      );
    }
    checkBroadcast(op, 'input1', first, 'input2', second);
    checkBroadcast(op, 'input1', first, 'target', checkedTarget);
    return checkedTarget;
  });
}

/**
 * Triplet margin loss: `ℓ_n = max(d(a_n, p_n) - d(a_n, n_n) + margin, 0)` with
 * `d(x, y) = ‖x - y + eps‖_p`; with `swap`, `d(a_n, n_n)` is replaced by `d(p_n, n_n)` where smaller.
 *
 * @param anchor - anchor embeddings
 * @param positive - embeddings that should be near the anchors
 * @param negative - embeddings that should be far from the anchors
 * @param options - `margin` (default 1), `p` (default 2), `eps` (default 1e-6), `swap` (default false),
 *   `reduction` (default 'mean')
 *
 * **Shape**: anchor, positive, negative `(N, D)` or `(D)` (one rank, broadcast together); output `()`,
 *   or `(N)` with reduction 'none'.
 * @throws FlodlError ERR_SHAPE for arguments of different ranks, of another rank than 1 or 2, or
 *   that do not broadcast; ERR_DTYPE for integer arguments; ERR_INVALID_ARGUMENT for bad options
 * @example
 * ```ts
 * const loss = tripletMarginLoss(anchor, positive, negative, { margin: 0.2, swap: true });
 * ```
 * @see PyTorch `torch.nn.functional.triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-06, swap=False, reduction='mean')`
 */
export function tripletMarginLoss(
  anchor: Tensor,
  positive: Tensor,
  negative: Tensor,
  options?: TripletMarginLossOptions,
): Tensor {
  const op = 'tripletMarginLoss';
  const { margin, p, eps, swap, reduction } = checkOptions(op, options, [
    'margin',
    'p',
    'eps',
    'swap',
    'reduction',
  ]);
  const checkedAnchor = checkFloating(op, 'anchor', anchor);
  const checkedPositive = checkFloating(op, 'positive', positive);
  const checkedNegative = checkFloating(op, 'negative', negative);
  checkRankAmong(op, 'anchor', checkedAnchor, [1, 2], '(N, D) or (D)');
  for (const [name, tensor] of [
    ['positive', checkedPositive],
    ['negative', checkedNegative],
  ] as const) {
    if (tensor.ndim !== checkedAnchor.ndim) {
      throw shapeError(op, `${name} must have the anchor's rank`, `${checkedAnchor.ndim}-d`, tensor.shape);
    }
    checkBroadcast(op, 'anchor', checkedAnchor, name, tensor);
  }
  return aten.call(
    op,
    checkedAnchor,
    checkedPositive,
    checkedNegative,
    checkNumber(op, 'margin', margin, { fallback: 1 }),
    checkNumber(op, 'p', p, { fallback: 2, min: Number.MIN_VALUE }),
    checkNumber(op, 'eps', eps, { fallback: 1e-6, min: 0 }),
    checkBoolean(op, 'swap', swap, false),
    checkReduction(op, reduction),
  );
}
