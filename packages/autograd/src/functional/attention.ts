// Scaled dot-product attention: libtorch's fused kernel on PyTorch 2.x builds, the same math
// composed from ATen ops on libtorch 1.x.
import { aten, broadcastShapes, FlodlError, type Tensor } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkBroadcastsTo,
  checkFloating,
  checkNumber,
  checkOptions,
  checkSameDtype,
  checkTensorOrUndefined,
  shapeError,
  shapeText,
} from './arguments.js';

/** Options of `scaledDotProductAttention`. */
export interface ScaledDotProductAttentionOptions {
  /**
   * Which keys each query may attend to: a bool mask (true = attend) or a float mask added to
   * the scores (the query's dtype; -Infinity blocks), broadcast to `(..., L, S)`. Default none.
   */
  attnMask?: Tensor;
  /** The probability of zeroing an attention weight (applied whenever > 0). Default 0. */
  dropoutP?: number;
  /** Each query attends only to keys at its position or before (top-left aligned). Default false. */
  isCausal?: boolean;
  /** The factor applied to `Q Kᵀ`. Default `1 / sqrt(E)`. */
  scale?: number;
}

/**
 * Attention of queries over keys and values: `softmax(Q Kᵀ · scale + M) V`, with `M` the mask
 * (0 where allowed, -∞ where blocked) and dropout on the attention weights.
 *
 * @param query - queries `Q`
 * @param key - keys `K`
 * @param value - values `V`
 * @param options - `attnMask` (none), `dropoutP` (0), `isCausal` (false), `scale` (`1 / sqrt(E)`)
 *
 * **Shape**: query `(..., L, E)`, key `(..., S, E)`, value `(..., S, E_v)` (batch dims broadcast);
 *   attnMask broadcast to `(..., L, S)`; output `(..., L, E_v)`. A query row with every key
 *   blocked gives NaN on libtorch 1.x.
 * @throws FlodlError ERR_SHAPE for arguments of rank < 2, mismatched E or S, batch dims or a mask
 *   that do not broadcast; ERR_DTYPE for integer arguments, or key, value or a float mask of
 *   another dtype than query; ERR_INVALID_ARGUMENT for both attnMask and isCausal, or bad options
 * @example
 * ```ts
 * const out = scaledDotProductAttention(q, k, v, { isCausal: true }); // q, k, v: (N, heads, L, E)
 * ```
 * @see PyTorch `torch.nn.functional.scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None)`
 */
export function scaledDotProductAttention(
  query: Tensor,
  key: Tensor,
  value: Tensor,
  options?: ScaledDotProductAttentionOptions,
): Tensor {
  const op = 'scaledDotProductAttention';
  const { attnMask, dropoutP, isCausal, scale } = checkOptions(op, options, [
    'attnMask',
    'dropoutP',
    'isCausal',
    'scale',
  ]);
  const tensors = {
    query: checkFloating(op, 'query', query),
    key: checkFloating(op, 'key', key),
    value: checkFloating(op, 'value', value),
  };
  for (const [name, tensor] of Object.entries(tensors)) {
    if (tensor.ndim < 2)
      throw shapeError(op, `${name} must have at least 2 dims`, '(..., sequence, features)', tensor.shape);
    if (name !== 'query') checkSameDtype(op, name, tensor, tensors.query, 'query');
  }
  const [queries, keys, values] = [tensors.query.shape, tensors.key.shape, tensors.value.shape];
  if (keys[keys.length - 1] !== queries[queries.length - 1]) {
    throw shapeError(
      op,
      'key must have the features E of query',
      `(..., S, ${queries[queries.length - 1]})`,
      keys,
    );
  }
  if (values[values.length - 2] !== keys[keys.length - 2]) {
    throw shapeError(
      op,
      'value must have the sequence length S of key',
      `(..., ${keys[keys.length - 2]}, E_v)`,
      values,
    );
  }
  const batch = [queries, keys, values]
    .map((shape) => shape.slice(0, -2))
    .reduce<number[] | null>((shape, next) => (shape === null ? null : broadcastShapes(shape, next)), []);
  if (batch === null) {
    throw shapeError(
      op,
      'the batch dims of query, key and value do not broadcast',
      'batch dims that broadcast',
      [queries, keys, values].map(shapeText).join(', '),
    );
  }
  const mask = checkTensorOrUndefined(op, 'attnMask', attnMask);
  const causal = checkBoolean(op, 'isCausal', isCausal, false);
  if (mask !== undefined) {
    if (causal) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'attnMask and isCausal exclude each other', {
        op,
        expected: 'either an attnMask or isCausal: true',
        got: 'both',
      });
    }
    if (mask.dtype !== 'bool') checkSameDtype(op, 'attnMask (not bool)', mask, tensors.query, 'query');
    // The scores' shape (..., L, S).
    checkBroadcastsTo(op, 'attnMask', mask, [...batch, queries[queries.length - 2]!, keys[keys.length - 2]!]);
  }
  const checkedScale = scale === undefined ? undefined : checkNumber(op, 'scale', scale);
  const probability = checkNumber(op, 'dropoutP', dropoutP, { fallback: 0, min: 0, max: 1 });
  return aten.call(op, tensors.query, tensors.key, tensors.value, mask, probability, causal, checkedScale);
}
