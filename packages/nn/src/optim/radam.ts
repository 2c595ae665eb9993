import { aten, type Tensor, zerosLike } from '@flodl/tensor-native';
import { checkForeach } from './foreach.js';
import { type GroupItem, Optimizer, type OptimizerDefinition } from './optimizer.js';
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
  /**
   * Update a group in one native call instead of several calls per parameter, bit for bit the
   * per-parameter update. `null` (the default) takes it on every device; `false` keeps the
   * per-parameter ops; `true` asks for it.
   */
  foreach?: boolean | null;
}

/** The options of one RAdam parameter group, every value resolved. */
export type RAdamGroupOptions = Required<RAdamOptions>;

/** RAdam's per-parameter state. */
export type RAdamState = { step: number; expAvg: Tensor; expAvgSq: Tensor };

const definition: OptimizerDefinition<RAdamGroupOptions> = {
  name: 'RAdam',
  defaults: { lr: 1e-3, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0, foreach: null },
  validate(options, where) {
    if (options.lr !== undefined) checkNumberInRange('RAdam', `${where}.lr`, options.lr, 0);
    if (options.betas !== undefined) checkBetas('RAdam', `${where}.betas`, options.betas);
    if (options.eps !== undefined) checkNumberInRange('RAdam', `${where}.eps`, options.eps, 0);
    if (options.weightDecay !== undefined) {
      checkNumberInRange('RAdam', `${where}.weightDecay`, options.weightDecay, 0);
    }
    if (options.foreach !== undefined) checkForeach('RAdam', `${where}.foreach`, options.foreach);
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
 * weight_decay=0, foreach=None)` (the single-tensor code path, op for op, in one native call per
 * group with `foreach`).
 */
export class RAdam extends Optimizer<RAdamGroupOptions, RAdamState> {
  constructor(params: OptimizerParams<RAdamGroupOptions>, options?: RAdamOptions) {
    super(params, options, definition);
  }

  protected createState(param: Tensor): RAdamState {
    return { step: 0, expAvg: zerosLike(param), expAvgSq: zerosLike(param) };
  }

  /** The whole group in one native call, in `stepParameter`'s op order. */
  protected override stepGroupWhole(
    group: ParamGroup<RAdamGroupOptions>,
    items: readonly GroupItem<RAdamState>[],
  ): void {
    const steps = items.map(({ state }) => radamStep(state, group));
    aten.call(
      'foreachRadam',
      items.map(({ param }) => param),
      undefined,
      items.map(({ state }) => state.expAvg),
      items.map(({ state }) => state.expAvgSq),
      steps.map((step) => step.biasCorrection1),
      steps.map((step) => step.biasCorrection2Sqrt),
      steps.map((step) => step.rectification),
      group.lr,
      group.betas[0],
      group.betas[1],
      group.weightDecay,
      group.eps,
    );
  }

  protected stepParameter(
    param: Tensor,
    grad: Tensor,
    state: RAdamState,
    group: ParamGroup<RAdamGroupOptions>,
  ): void {
    const { lr, betas, eps, weightDecay } = group;
    const [beta1, beta2] = betas;
    const { biasCorrection1, biasCorrection2Sqrt, rectification } = radamStep(state, group);
    const direction = weightDecay !== 0 ? grad.add(param, weightDecay) : grad;
    state.expAvg.mul_(beta1).add_(direction, 1 - beta1);
    state.expAvgSq.mul_(beta2).addcmul_(direction, direction, 1 - beta2);
    const correctedExpAvg = state.expAvg.div(biasCorrection1);
    if (rectification !== 0) {
      // PyTorch's `number / tensor` is `tensor.reciprocal() * number`.
      const adaptiveLr = state.expAvgSq.sqrt().add_(eps).reciprocal().mul(biasCorrection2Sqrt);
      param.add_(correctedExpAvg.mul(lr).mul(adaptiveLr).mul(rectification), -1);
    } else {
      param.add_(correctedExpAvg.mul(lr), -1);
    }
  }
}

/**
 * Counts a step into `state` and returns its scalars: the bias corrections and the variance
 * rectification, 0 while the variance is not tractable yet (ρₜ ≤ 5: the plain momentum step).
 */
function radamStep(state: RAdamState, group: RAdamGroupOptions) {
  const [beta1, beta2] = group.betas;
  state.step += 1;
  const step = state.step;
  const biasCorrection2 = 1 - beta2 ** step;
  const rhoInfinity = 2 / (1 - beta2) - 1;
  const rhoStep = rhoInfinity - (2 * step * beta2 ** step) / biasCorrection2;
  const rectification =
    rhoStep > 5
      ? Math.sqrt(
          ((rhoStep - 4) * (rhoStep - 2) * rhoInfinity) / ((rhoInfinity - 4) * (rhoInfinity - 2) * rhoStep),
        )
      : 0;
  return {
    biasCorrection1: 1 - beta1 ** step,
    biasCorrection2Sqrt: Math.sqrt(biasCorrection2),
    rectification,
  };
}
