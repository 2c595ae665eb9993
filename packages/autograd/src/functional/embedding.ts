// Embedding lookups (PyTorch: torch.nn.functional.embedding, embedding_bag). Dense gradients
// only: sparse gradients are not supported.
import { arange, aten, FlodlError, type Tensor } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkIndices,
  checkInteger,
  checkOneOf,
  checkOptionalTensor,
  checkOptions,
  checkPositive,
  checkRank,
  checkTensor,
  shapeError,
  shapeText,
} from './arguments.js';

/** Options of `embedding`. */
export interface EmbeddingOptions {
  /** This row gets no gradient (negative counts from the end). Default: none. */
  paddingIdx?: number;
  /** Rows looked up with a larger `normType`-norm are rescaled in place to this norm. Default: none. */
  maxNorm?: number;
  /** The p of the p-norm for `maxNorm`. Default 2. */
  normType?: number;
  /** Scales gradients by the inverse frequency of each index in the batch. Default false. */
  scaleGradByFreq?: boolean;
  /** Only false: sparse gradients are not supported. Default false. */
  sparse?: false;
}

/** Options of `embeddingBag`. */
export interface EmbeddingBagOptions {
  /** Rows looked up with a larger `normType`-norm are rescaled in place to this norm. Default: none. */
  maxNorm?: number;
  /** The p of the p-norm for `maxNorm`. Default 2. */
  normType?: number;
  /** Scales gradients by the inverse frequency of each index (not with `'max'`). Default false. */
  scaleGradByFreq?: boolean;
  /** How each bag is reduced. Default `'mean'`. */
  mode?: 'sum' | 'mean' | 'max';
  /** Only false: sparse gradients are not supported. Default false. */
  sparse?: false;
  /** One weight per index, the input's shape, multiplying each row (`'sum'` only). Default: none. */
  perSampleWeights?: Tensor;
  /** `offsets` has one more entry, the end of the last bag. Default false. */
  includeLastOffset?: boolean;
  /** Entries equal to this index are left out of their bag. Default: none. */
  paddingIdx?: number;
}

const MODES = ['sum', 'mean', 'max'] as const;

function checkPaddingIdx(op: string, paddingIdx: unknown, rows: number): number | undefined {
  if (paddingIdx === undefined || paddingIdx === null) return undefined;
  const index = checkInteger(op, 'paddingIdx', paddingIdx);
  if (index < -rows || index >= rows) {
    throw shapeError(
      op,
      'paddingIdx is out of range',
      `an index in [${-rows}, ${rows - 1}] (weight rows)`,
      String(index),
    );
  }
  return index < 0 ? index + rows : index;
}

function checkSparse(op: string, sparse: unknown): void {
  if (sparse !== false) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'sparse gradients are not supported', {
      op,
      expected: 'sparse: false (dense gradients)',
      got: `sparse: ${String(sparse)}`,
    });
  }
}

/** PyTorch's `_no_grad_embedding_renorm_`: rescales the rows `indices` names, in place. */
function renormalize(op: string, weight: Tensor, indices: Tensor, maxNorm: unknown, normType: unknown): void {
  if (maxNorm === undefined || maxNorm === null) return;
  checkPositive(op, 'maxNorm', maxNorm);
  checkPositive(op, 'normType', normType);
  aten.call('embeddingRenorm_', weight, indices, maxNorm as number, normType as number);
}

/**
 * Looks up rows of a table: `out[i…] = weight[input[i…]]`.
 *
 * @param input - integer indices (int64 or int32) of any shape `(*)`.
 * @param weight - the table, `(num_embeddings, embedding_dim)`.
 * @param options - `paddingIdx` (none), `maxNorm` (none: with a value, `weight` is renormalised
 *   in place, outside autograd, as PyTorch), `normType` (2), `scaleGradByFreq` (false), `sparse` (false only).
 *
 * **Shape**: `(*) → (*, embedding_dim)`.
 *
 * @throws FlodlError `ERR_DTYPE` for non-integer indices; `ERR_SHAPE` when `weight` is not 2-d or
 *   `paddingIdx` is out of range; `ERR_INVALID_ARGUMENT` for `sparse: true` or another bad option;
 *   `ERR_NATIVE` for an index out of range.
 * @example
 * ```ts
 * const vectors = embedding(Tensor.from([[1, 2], [4, 0]], undefined, { dtype: 'int64' }), table); // [2, 2, dim]
 * ```
 * PyTorch: `torch.nn.functional.embedding(input, weight, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse)`.
 */
export function embedding(input: Tensor, weight: Tensor, options?: EmbeddingOptions): Tensor {
  const op = 'embedding';
  checkTensor(op, 'input', input);
  checkTensor(op, 'weight', weight);
  checkIndices(op, 'input', input);
  checkRank(op, 'weight', weight, { 2: '(num_embeddings, embedding_dim)' });
  const checked = checkOptions(op, options, [
    'paddingIdx',
    'maxNorm',
    'normType',
    'scaleGradByFreq',
    'sparse',
  ]);
  const { maxNorm, normType = 2, scaleGradByFreq = false, sparse = false } = checked;
  const paddingIdx = checkPaddingIdx(op, checked.paddingIdx, weight.shape[0]!);
  checkBoolean(op, 'scaleGradByFreq', scaleGradByFreq);
  checkSparse(op, sparse);
  renormalize(op, weight, input, maxNorm, normType);
  return aten.call(op, weight, input, paddingIdx ?? -1, scaleGradByFreq, false);
}

/**
 * Sums, averages or takes the maximum of bags of embeddings without materialising the
 * lookups: `out[b] = reduce_{i ∈ bag b} weight[input[i]]` (times `perSampleWeights[i]` with `'sum'`).
 *
 * @param input - int64/int32 indices: `(B, L)` for `B` bags of length `L`, or `(T)` flat with `offsets`.
 * @param weight - the table, `(num_embeddings, embedding_dim)`.
 * @param offsets - with a 1-d input, `(B)` start of each bag (the same dtype as `input`); none for a 2-d input.
 * @param options - `mode` (`'mean'`), `perSampleWeights` (none), `includeLastOffset` (false),
 *   `paddingIdx` (none), `maxNorm` (none), `normType` (2), `scaleGradByFreq` (false), `sparse` (false only).
 *
 * **Shape**: `(B, L)` or `(T)` with `(B)` offsets → `(B, embedding_dim)` (`(B − 1)` bags with `includeLastOffset`).
 *
 * @throws FlodlError `ERR_DTYPE` for non-integer or mismatched index dtypes; `ERR_SHAPE` for wrong
 *   ranks or a `perSampleWeights` shape other than the input's; `ERR_INVALID_ARGUMENT` for a bad
 *   option or combination (offsets with a 2-d input, `perSampleWeights` without `'sum'`).
 * @example
 * ```ts
 * const bags = embeddingBag(indices, table, offsets, { mode: 'sum' }); // [offsets.shape[0], dim]
 * ```
 * PyTorch: `torch.nn.functional.embedding_bag(input, weight, offsets, max_norm, norm_type, scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset, padding_idx)`.
 */
export function embeddingBag(
  input: Tensor,
  weight: Tensor,
  offsets?: Tensor,
  options?: EmbeddingBagOptions,
): Tensor {
  const op = 'embeddingBag';
  checkTensor(op, 'input', input);
  checkTensor(op, 'weight', weight);
  const offsetTensor = checkOptionalTensor(op, 'offsets', offsets);
  checkIndices(op, 'input', input);
  checkRank(op, 'weight', weight, { 2: '(num_embeddings, embedding_dim)' });
  const rank = checkRank(op, 'input', input, { 1: '(T) with offsets', 2: '(B, L)' });
  const checked = checkOptions(op, options, [
    'maxNorm',
    'normType',
    'scaleGradByFreq',
    'mode',
    'sparse',
    'perSampleWeights',
    'includeLastOffset',
    'paddingIdx',
  ]);
  const {
    maxNorm,
    normType = 2,
    scaleGradByFreq = false,
    mode = 'mean',
    sparse = false,
    includeLastOffset = false,
  } = checked;
  checkOneOf(op, 'mode', mode, MODES);
  checkBoolean(op, 'scaleGradByFreq', scaleGradByFreq);
  checkBoolean(op, 'includeLastOffset', includeLastOffset);
  checkSparse(op, sparse);
  const paddingIdx = checkPaddingIdx(op, checked.paddingIdx, weight.shape[0]!);
  const perSampleWeights = checkOptionalTensor(op, 'perSampleWeights', checked.perSampleWeights);
  if (perSampleWeights !== undefined) {
    if (mode !== 'sum') throw badCombination(op, "perSampleWeights needs mode 'sum'", `mode '${mode}'`);
    if (shapeText(perSampleWeights.shape) !== shapeText(input.shape)) {
      throw shapeError(
        op,
        'perSampleWeights does not fit input',
        `shape ${shapeText(input.shape)} (the input's)`,
        shapeText(perSampleWeights.shape),
      );
    }
  }
  if (mode === 'max' && scaleGradByFreq)
    throw badCombination(op, "mode 'max' cannot scale gradients by frequency", 'scaleGradByFreq: true');
  checkOffsets(op, rank, input, offsetTensor);
  renormalize(op, weight, input, maxNorm, normType);
  const bags =
    rank === 2
      ? rowsAsBags(input, perSampleWeights)
      : { indices: input, offsets: offsetTensor!, perSampleWeights };
  try {
    return aten.call(
      op,
      weight,
      bags.indices,
      bags.offsets,
      scaleGradByFreq,
      MODES.indexOf(mode),
      false,
      bags.perSampleWeights,
      includeLastOffset,
      paddingIdx,
    );
  } finally {
    if (rank === 2) for (const temporary of Object.values(bags)) temporary?.dispose();
  }
}

/** A 2-d input takes no offsets (each row is a bag); a 1-d input needs 1-d offsets of its dtype. */
function checkOffsets(op: string, rank: number, input: Tensor, offsets: Tensor | undefined): void {
  if (rank === 2) {
    if (offsets !== undefined) {
      throw badCombination(
        op,
        'offsets must be undefined for a 2-d input (each row is a bag)',
        `offsets ${shapeText(offsets.shape)}`,
      );
    }
    return;
  }
  if (offsets === undefined) throw badCombination(op, 'a 1-d input needs offsets', 'offsets undefined');
  checkRank(op, 'offsets', offsets, { 1: '(B)' });
  if (offsets.dtype !== input.dtype) {
    throw new FlodlError('ERR_DTYPE', 'offsets and input must have the same dtype', {
      op,
      expected: input.dtype,
      got: offsets.dtype,
    });
  }
}

/** PyTorch's handling of a 2-d input: flat indices, with bags starting every row. */
function rowsAsBags(
  input: Tensor,
  perSampleWeights: Tensor | undefined,
): { indices: Tensor; offsets: Tensor; perSampleWeights: Tensor | undefined } {
  const [rows, length] = input.shape as [number, number];
  return {
    indices: input.reshape(-1),
    offsets: arange(0, rows * length, length, { dtype: input.dtype, device: input.device }),
    perSampleWeights: perSampleWeights?.reshape(-1),
  };
}

function badCombination(op: string, message: string, got: string): FlodlError {
  return new FlodlError('ERR_INVALID_ARGUMENT', message, { op, got });
}
