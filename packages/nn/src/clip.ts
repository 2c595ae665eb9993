// Gradient clipping (PyTorch: torch.nn.utils.clip_grad_norm_ and clip_grad_value_).
import { noGrad } from '@flodl/autograd';
import { aten, FlodlError, invalidArgument, Tensor, tidy, unknownOptionError } from '@flodl/tensor-native';

/** Options of {@link clipGradNorm_}. */
export interface ClipGradNormOptions {
  /** Throw when the total norm is NaN or infinite instead of scaling by it. Default false. */
  errorIfNonfinite?: boolean;
}

/**
 * Rescales the gradients of `parameters` in place so that their total norm — the norm of the
 * vector of all gradients concatenated — is at most `maxNorm`, and returns that total norm
 * (before clipping):
 *
 *     total = ‖(‖g₁‖ₚ, …, ‖gₙ‖ₚ)‖ₚ   (p = ∞: the largest |gᵢ| element)
 *     gᵢ ← gᵢ · min(1, maxNorm / (total + 1e-6))
 *
 * Parameters without a gradient are ignored; with none at all the result is 0. The norms and
 * the scaling take one native call each, whatever the number of parameters.
 *
 * @param parameters the parameters (or one parameter) whose `.grad` to clip
 * @param maxNorm the largest total norm allowed
 * @param normType p of the p-norm; `Infinity` (or `'inf'`) for the largest absolute value. Default 2.
 * @param options {@link ClipGradNormOptions}
 * @returns the total norm of the gradients before clipping
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-Tensor parameter, a negative or non-finite
 *   maxNorm, or (with errorIfNonfinite) a NaN or infinite total norm
 * @example
 * ```ts
 * loss.backward();
 * const norm = clipGradNorm_(model.parameters(), 1.0);
 * optimizer.step();
 * ```
 * PyTorch equivalent: `torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type=2.0,
 * error_if_nonfinite=False)` (returns a number instead of a 0-d tensor).
 */
export function clipGradNorm_(
  parameters: Tensor | Iterable<Tensor>,
  maxNorm: number,
  normType: number | 'inf' = 2,
  options: ClipGradNormOptions = {},
): number {
  const op = 'clipGradNorm_';
  const list = parameterList(op, parameters);
  if (typeof maxNorm !== 'number' || !(maxNorm >= 0) || !Number.isFinite(maxNorm)) {
    throw invalidArgument(op, 'maxNorm', 'a finite number >= 0', maxNorm);
  }
  const p = normType === 'inf' ? Number.POSITIVE_INFINITY : normType;
  if (typeof p !== 'number' || Number.isNaN(p)) {
    throw invalidArgument(op, 'normType', "a number, Infinity or 'inf'", normType);
  }
  if (options === null || typeof options !== 'object')
    throw invalidArgument(op, 'options', 'an options object', options);
  for (const key of Object.keys(options)) {
    if (key !== 'errorIfNonfinite') throw unknownOptionError(op, key, ['errorIfNonfinite']);
  }
  return noGrad(() =>
    tidy(() => {
      // One native call for the norms (libtorch's _foreach_norm, then the norm of the norms;
      // p = ∞: the largest absolute element) and one for the scaling, op for op as PyTorch.
      const total: Tensor | null = aten.call('gradsNorm', list, p);
      if (total === null) return 0;
      const totalNorm = total.item();
      if (options.errorIfNonfinite === true && !Number.isFinite(totalNorm)) {
        throw new FlodlError(
          'ERR_INVALID_ARGUMENT',
          `the total norm of order ${p} of the gradients is non-finite`,
          {
            op,
            expected: 'finite gradients (or errorIfNonfinite: false to scale by the non-finite norm anyway)',
            got: String(totalNorm),
          },
        );
      }
      // As PyTorch: every gradient times min(1, max_norm / (total + 1e-6)), on the 0-d tensor.
      aten.call('clipGrads', list, total, maxNorm);
      return totalNorm;
    }),
  );
}

/**
 * Clamps every gradient element of `parameters` to `[-clipValue, clipValue]`, in place.
 * Parameters without a gradient are ignored.
 *
 * @param parameters the parameters (or one parameter) whose `.grad` to clip
 * @param clipValue the largest absolute gradient value allowed
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-Tensor parameter or a clipValue that is not
 *   a number >= 0
 * @example
 * ```ts
 * loss.backward();
 * clipGradValue_(model.parameters(), 0.5);
 * optimizer.step();
 * ```
 * PyTorch equivalent: `torch.nn.utils.clip_grad_value_(parameters, clip_value)`.
 */
export function clipGradValue_(parameters: Tensor | Iterable<Tensor>, clipValue: number): void {
  const op = 'clipGradValue_';
  const list = parameterList(op, parameters);
  if (typeof clipValue !== 'number' || !(clipValue >= 0)) {
    throw invalidArgument(op, 'clipValue', 'a number >= 0', clipValue);
  }
  noGrad(() =>
    tidy(() => {
      for (const param of list) param.grad?.clamp_(-clipValue, clipValue);
    }),
  );
}

/**
 * @deprecated Renamed {@link clipGradNorm_} (PyTorch's trailing underscore for in-place
 * functions); this alias goes in the next minor version.
 */
export const clipGradNorm: typeof clipGradNorm_ = clipGradNorm_;

/**
 * @deprecated Renamed {@link clipGradValue_} (PyTorch's trailing underscore for in-place
 * functions); this alias goes in the next minor version.
 */
export const clipGradValue: typeof clipGradValue_ = clipGradValue_;

function parameterList(op: string, parameters: unknown): Tensor[] {
  if (parameters instanceof Tensor) return [parameters];
  const iterable = parameters as { [Symbol.iterator]?: unknown } | null | undefined;
  if (iterable === null || iterable === undefined || typeof iterable[Symbol.iterator] !== 'function') {
    throw invalidArgument(op, 'parameters', 'a Tensor or an iterable of Tensors', parameters);
  }
  const list = [...(parameters as Iterable<unknown>)];
  list.forEach((item, k) => {
    if (!(item instanceof Tensor)) throw invalidArgument(op, `parameters[${k}]`, 'a Tensor', item);
  });
  return list as Tensor[];
}
