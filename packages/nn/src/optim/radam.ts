import { type Tensor, zerosLike } from '@flodl/tensor-native';
import { Optimizer, type OptimizerDefinition } from './optimizer.js';
import { checkBetas, checkNumberInRange } from './options.js';
import type { OptimizerParams, ParamGroup } from './param-groups.js';

/** Options of {@link RAdam}; a parameter group may override any of them. */
export interface RAdamOptions {
  /** Learning rate γ. Default 1e-3. */
  lr?: number;
  /** Decay rates (β1, β2) of the running averages of the gradient and its square. Default [0.9, 0.999]. */
  betas?: [number, number];
  /** Term ε added to the denominator. Default 1e-8. */
  eps?: number;
  /** L2 penalty λ added to the gradient. Default 0. */
  weightDecay?: number;
}

/** The options of one RAdam parameter group, every value resolved. */
export type RAdamGroupOptions = Required<RAdamOptions>;

/** RAdam's per-parameter state. */
export type RAdamState = { step: number; expAvg: Tensor; expAvgSq: Tensor };

const definition: OptimizerDefinition<RAdamGroupOptions> = {
  name: 'RAdam',
  defaults: { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0 },
  validate(options, where) {
    if (options.lr !== undefined) checkNumberInRange('RAdam', `${where}.lr`, options.lr, 0);
    if (options.betas !== undefined) checkBetas('RAdam', `${where}.betas`, options.betas);
    if (options.eps !== undefined) checkNumberInRange('RAdam', `${where}.eps`, options.eps, 0);
    if (options.weightDecay !== undefined) {
      checkNumberInRange('RAdam', `${where}.weightDecay`, options.weightDecay, 0);
    }
  },
  stateLayout: { step: 'count', expAvg: 'tensor', expAvgSq: 'tensor' },
};

/**
 * RAdam: Adam with the variance of the adaptive learning rate rectified, falling back to
 * momentum SGD while too few steps make that variance intractable:
 *
 *     g ← ∇θ + λθ;   m ← β1·m + (1 − β1)·g;   v ← β2·v + (1 − β2)·g²;   m̂ ← m / (1 − β1ᵗ)
 *     ρ∞ ← 2/(1 − β2) − 1;   ρₜ ← ρ∞ − 2t·β2ᵗ / (1 − β2ᵗ)
 *     ρₜ > 5:  r ← √((ρₜ − 4)(ρₜ − 2)ρ∞ / ((ρ∞ − 4)(ρ∞ − 2)ρₜ)),   θ ← θ − γ·m̂·r·√(1 − β2ᵗ)/(√v + ε)
 *     else:    θ ← θ − γ·m̂
 *
 * @param params the parameters, or parameter groups `{ params, ...options }`
 * @param options {@link RAdamOptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a negative lr/eps/weightDecay, betas outside
 *   [0, 1), an unknown option, an empty parameter list or a parameter that does not require
 *   grad; ERR_DTYPE for a non-floating parameter
 * @example
 * ```ts
 * const optimizer = new RAdam(model.parameters(), { lr: 1e-3 });
 * tidy(() => {
 *   optimizer.zeroGrad();
 *   lossFn(model.forward(input), target).backward();
 *   optimizer.step();
 * });
 * ```
 * PyTorch equivalent: `torch.optim.RAdam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
 * weight_decay=0)` (the single-tensor code path, op for op).
 */
export class RAdam extends Optimizer<RAdamGroupOptions, RAdamState> {
  constructor(params: OptimizerParams<RAdamGroupOptions>, options?: RAdamOptions) {
    super(params, options, definition);
  }

  protected createState(param: Tensor): RAdamState {
    return { step: 0, expAvg: zerosLike(param), expAvgSq: zerosLike(param) };
  }

  protected stepParameter(
    param: Tensor,
    grad: Tensor,
    state: RAdamState,
    group: ParamGroup<RAdamGroupOptions>,
  ): void {
    const { lr, betas, eps, weightDecay } = group;
    const [beta1, beta2] = betas;
    state.step += 1;
    const step = state.step;
    const biasCorrection1 = 1 - beta1 ** step;
    const biasCorrection2 = 1 - beta2 ** step;
    const direction = weightDecay !== 0 ? grad.add(param, weightDecay) : grad;
    state.expAvg.mul_(beta1).add_(direction, 1 - beta1);
    state.expAvgSq.mul_(beta2).addcmul_(direction, direction, 1 - beta2);
    const correctedExpAvg = state.expAvg.div(biasCorrection1);
    const rhoInfinity = 2 / (1 - beta2) - 1;
    const rhoStep = rhoInfinity - (2 * step * beta2 ** step) / biasCorrection2;
    if (rhoStep > 5) {
      const rectification = Math.sqrt(
        ((rhoStep - 4) * (rhoStep - 2) * rhoInfinity) / ((rhoInfinity - 4) * (rhoInfinity - 2) * rhoStep),
      );
      // PyTorch's `number / tensor` is `tensor.reciprocal() * number`.
      const adaptiveLr = state.expAvgSq.sqrt().add_(eps).reciprocal().mul(Math.sqrt(biasCorrection2));
      param.add_(correctedExpAvg.mul(lr).mul(adaptiveLr).mul(rectification), -1);
    } else {
      param.add_(correctedExpAvg.mul(lr), -1);
    }
  }
}
