import type { Tensor } from '@flodl/tensor-native';
import {
  type AdamGroupOptions,
  type AdamOptions,
  type AdamState,
  adamDefinition,
  adamUpdate,
  createAdamState,
} from './adam.js';
import { Optimizer } from './optimizer.js';
import type { OptimizerParams, ParamGroup } from './param-groups.js';

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
 * weight_decay=1e-2, amsgrad=False, maximize=False)` (the single-tensor code path, op for op).
 */
export class AdamW extends Optimizer<AdamGroupOptions, AdamState> {
  constructor(params: OptimizerParams<AdamGroupOptions>, options?: AdamWOptions) {
    super(params, options, adamDefinition('AdamW', 1e-2));
  }

  protected createState(param: Tensor, group: ParamGroup<AdamGroupOptions>): AdamState {
    return createAdamState(param, group);
  }

  protected stepParameter(
    param: Tensor,
    grad: Tensor,
    state: AdamState,
    group: ParamGroup<AdamGroupOptions>,
  ): void {
    const direction = group.maximize ? grad.neg() : grad;
    state.step += 1;
    param.mul_(1 - group.lr * group.weightDecay);
    adamUpdate(param, direction, state, group);
  }
}
