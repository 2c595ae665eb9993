// Dropout (PyTorch: torch.nn.functional.dropout, dropout1d/2d/3d, alpha_dropout). The masks
// come from libtorch's CPU generator, so `manualSeed` repeats them.
import { aten, type Tensor } from '@flodl/tensor-native';
import { checkBoolean, checkOptions, checkProbability, checkRank, checkTensor } from './arguments.js';

/** Options of the dropout functions. */
export interface DropoutOptions {
  /** Probability of zeroing an element (or a channel). Default 0.5. */
  p?: number;
  /** Apply dropout (true) or return the input unchanged (false). Default true (false for `alphaDropout`). */
  training?: boolean;
}

function readOptions(
  op: string,
  options: DropoutOptions | undefined,
  trainingDefault: boolean,
): { p: number; training: boolean } {
  const { p = 0.5, training = trainingDefault } = checkOptions(op, options, ['p', 'training']);
  return { p: checkProbability(op, 'p', p), training: checkBoolean(op, 'training', training) };
}

/** Channel dropout through `featureDropout`, adding a batch dim to unbatched inputs. */
function channelDropout(
  op: string,
  input: Tensor,
  unbatchedRank: number,
  layouts: Record<number, string>,
  options: DropoutOptions | undefined,
): Tensor {
  checkTensor(op, 'input', input);
  const rank = checkRank(op, 'input', input, layouts);
  const { p, training } = readOptions(op, options, true);
  if (rank !== unbatchedRank) return aten.call('featureDropout', input, p, training);
  const batched = input.unsqueeze(0);
  try {
    const output = aten.call('featureDropout', batched, p, training);
    try {
      return output.squeeze(0);
    } finally {
      output.dispose();
    }
  } finally {
    batched.dispose();
  }
}

/**
 * Zeroes each element with probability `p` and scales the others by `1 / (1 − p)`, so that
 * `E[y] = x`: `y = x · m / (1 − p)`, `m ~ Bernoulli(1 − p)`.
 *
 * @param input - any shape.
 * @param options - `p` (0.5), `training` (true, as PyTorch's functional form: pass the module's mode).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `p` is outside [0, 1] or an option is unknown.
 * @example
 * ```ts
 * manualSeed(0);
 * const y = dropout(hidden, { p: 0.1, training: model.training });
 * ```
 * PyTorch: `torch.nn.functional.dropout(input, p, training)`.
 */
export function dropout(input: Tensor, options?: DropoutOptions): Tensor {
  checkTensor('dropout', 'input', input);
  const { p, training } = readOptions('dropout', options, true);
  return aten.call('dropout', input, p, training);
}

/**
 * Zeroes whole channels (each `input[n, c]` row) with probability `p` and scales the others by `1 / (1 − p)`.
 *
 * @param input - `(N, C, L)` or unbatched `(C, L)`.
 * @param options - `p` (0.5), `training` (true).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_SHAPE` for another rank; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const y = dropout1d(randn([4, 16, 100]), { p: 0.2 });
 * ```
 * PyTorch: `torch.nn.functional.dropout1d(input, p, training)`.
 */
export function dropout1d(input: Tensor, options?: DropoutOptions): Tensor {
  return channelDropout('dropout1d', input, 2, { 2: '(C, L)', 3: '(N, C, L)' }, options);
}

/**
 * Zeroes whole channels (each `input[n, c]` plane) with probability `p` and scales the others by `1 / (1 − p)`.
 *
 * @param input - `(N, C, H, W)`; a 3-d input is taken as `(N, C, L)`, as PyTorch does.
 * @param options - `p` (0.5), `training` (true).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_SHAPE` for another rank; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const y = dropout2d(randn([4, 16, 8, 8]), { p: 0.2 });
 * ```
 * PyTorch: `torch.nn.functional.dropout2d(input, p, training)`.
 */
export function dropout2d(input: Tensor, options?: DropoutOptions): Tensor {
  return channelDropout('dropout2d', input, -1, { 3: '(N, C, L)', 4: '(N, C, H, W)' }, options);
}

/**
 * Zeroes whole channels (each `input[n, c]` volume) with probability `p` and scales the others by `1 / (1 − p)`.
 *
 * @param input - `(N, C, D, H, W)` or unbatched `(C, D, H, W)`.
 * @param options - `p` (0.5), `training` (true).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_SHAPE` for another rank; `ERR_INVALID_ARGUMENT` for a bad or unknown option.
 * @example
 * ```ts
 * const y = dropout3d(randn([2, 8, 4, 8, 8]), { p: 0.2 });
 * ```
 * PyTorch: `torch.nn.functional.dropout3d(input, p, training)`.
 */
export function dropout3d(input: Tensor, options?: DropoutOptions): Tensor {
  return channelDropout('dropout3d', input, 4, { 4: '(C, D, H, W)', 5: '(N, C, D, H, W)' }, options);
}

/**
 * Dropout for SELU networks: dropped elements take SELU's negative saturation value and an
 * affine map `a·y + b` restores the input's mean and variance.
 *
 * @param input - any shape.
 * @param options - `p` (0.5), `training` (false, as PyTorch's functional form).
 *
 * **Shape**: unchanged.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when `p` is outside [0, 1] or an option is unknown.
 * @example
 * ```ts
 * const y = alphaDropout(selu(x), { p: 0.1, training: true });
 * ```
 * PyTorch: `torch.nn.functional.alpha_dropout(input, p, training)`.
 */
export function alphaDropout(input: Tensor, options?: DropoutOptions): Tensor {
  checkTensor('alphaDropout', 'input', input);
  const { p, training } = readOptions('alphaDropout', options, false);
  return aten.call('alphaDropout', input, p, training);
}
