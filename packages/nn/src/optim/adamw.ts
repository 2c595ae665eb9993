import type { Tensor } from '@flodl/tensor-native';
import { AdamBase, type AdamGroupOptions, type AdamOptions } from './adam.js';
import type { OptimizerParams } from './param-groups.js';

/** Options of {@link AdamW}: Adam's, with `weightDecay` defaulting to 1e-2 and applied decoupled. */
export type AdamWOptions = AdamOptions;

/**
 * AdamW: Adam with decoupled weight decay (the decay shrinks the parameters directly instead
 * of entering the gradient):
 *
 *     θ ← θ · (1 − γλ)
 *     g ← ∇θ (negated when maximize)
 *     m ← β1·m + (1 − β1)·g          v ← β2·v + (1 − β2)·g²
 *     v̂max ← max(v̂max, v)           (amsgrad; v̂ below is then v̂max)
 *     θ ← θ − γ/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + ε)
 *
 * @param params the parameters, or parameter groups `{ params, ...options }`
 * @param options {@link AdamWOptions} (`weightDecay` λ defaults to 1e-2)
 * @throws FlodlError ERR_INVALID_ARGUMENT for a negative lr/eps/weightDecay, betas outside
 *   [0, 1), an unknown option, an empty parameter list or a parameter that does not require
 *   grad; ERR_DTYPE for a non-floating parameter
 * @example
 * ```ts
 * const optimizer = new AdamW(model.parameters(), { lr: 3e-4, weightDecay: 0.1 });
 * tidy(() => {
 *   optimizer.zeroGrad();
 *   lossFn(model.forward(input), target).backward();
 *   optimizer.step();
 * });
 * ```
 * PyTorch equivalent: `torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
 * weight_decay=1e-2, amsgrad=False, maximize=False, foreach=None)` (the single-tensor code
 * path, op for op, in one native call per group with `foreach`).
 */
export class AdamW extends AdamBase {
  constructor(params: OptimizerParams<AdamGroupOptions>, options?: AdamWOptions) {
    super(params, options, 'AdamW', 1e-2);
  }

  /** Decoupled: the parameters shrink by γλ; the gradient is left as it is. */
  protected readonly decoupledWeightDecay = true;

  protected decay(param: Tensor, grad: Tensor, group: AdamGroupOptions): Tensor {
    param.mul_(1 - group.lr * group.weightDecay);
    return grad;
  }
}
