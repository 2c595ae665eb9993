import { aten, type Tensor, zerosLike } from '@flodl/tensor-native';
import { checkForeach } from './foreach.js';
import { type GroupItem, Optimizer, type OptimizerDefinition } from './optimizer.js';
import { checkBetas, checkNumberInRange } from './options.js';
import type { OptimizerParams, ParamGroup } from './param-groups.js';

/** Options of {@link NAdam}; a parameter group may override any of them. */
export interface NAdamOptions {
  /** Learning rate γ. Default 2e-3. */
  lr?: number;
  /** Decay rates (β1, β2) of the running averages of the gradient and its square. Default [0.9, 0.999]. */
  betas?: [number, number];
  /** Term ε added to the denominator. Default 1e-8. */
  eps?: number;
  /** L2 penalty λ added to the gradient. Default 0. */
  weightDecay?: number;
  /** Momentum decay ψ of the momentum schedule μₜ. Default 4e-3. */
  momentumDecay?: number;
  /**
   * Update a group in one native call instead of several calls per parameter, bit for bit the
   * per-parameter update. `null` (the default) takes it on every device; `false` keeps the
   * per-parameter ops; `true` asks for it.
   */
  foreach?: boolean | null;
}

/** The options of one NAdam parameter group, every value resolved. */
export type NAdamGroupOptions = Required<NAdamOptions>;

/**
 * NAdam's per-parameter state. `muProduct` (∏ μᵢ) is a float32 value, as PyTorch keeps it in a
 * float32 scalar tensor whatever the parameter's dtype.
 */
export type NAdamState = { step: number; muProduct: number; expAvg: Tensor; expAvgSq: Tensor };

const definition: OptimizerDefinition<NAdamGroupOptions> = {
  name: 'NAdam',
  defaults: { lr: 2e-3, betas: [0.9, 0.999], eps: 1e-8, weightDecay: 0, momentumDecay: 4e-3, foreach: null },
  validate(options, where) {
    for (const key of ['lr', 'eps', 'weightDecay', 'momentumDecay'] as const) {
      if (options[key] !== undefined) checkNumberInRange('NAdam', `${where}.${key}`, options[key], 0);
    }
    if (options.betas !== undefined) checkBetas('NAdam', `${where}.betas`, options.betas);
    if (options.foreach !== undefined) checkForeach('NAdam', `${where}.foreach`, options.foreach);
  },
  stateLayout: { step: 'count', muProduct: 'number', expAvg: 'tensor', expAvgSq: 'tensor' },
};

/**
 * NAdam: Adam with Nesterov momentum and a momentum schedule:
 *
 *     g ← ∇θ + λθ
 *     μₜ ← β1·(1 − ½·0.96^(tψ)),   μₜ₊₁ ← β1·(1 − ½·0.96^((t+1)ψ))
 *     m ← β1·m + (1 − β1)·g;   v ← β2·v + (1 − β2)·g²;   d ← √(v / (1 − β2ᵗ)) + ε
 *     θ ← θ − γ(1 − μₜ)/(1 − ∏ᵢ≤ₜ μᵢ) · g/d − γμₜ₊₁/(1 − μₜ·∏ᵢ≤ₜ₊₁ μᵢ) · m/d
 *
 * The extra μₜ in the last denominator is PyTorch 1.13's (`mu_product * mu * mu_next`), kept so
 * that results match it; later PyTorch releases drop it.
 *
 * @param params the parameters, or parameter groups `{ params, ...options }`
 * @param options {@link NAdamOptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a negative lr/eps/weightDecay/momentumDecay,
 *   betas outside [0, 1), an unknown option, an empty parameter list or a parameter that does
 *   not require grad; ERR_DTYPE for a non-floating parameter
 * @example
 * ```ts
 * const optimizer = new NAdam(model.parameters(), { lr: 2e-3 });
 * tidy(() => {
 *   optimizer.zeroGrad();
 *   lossFn(model.forward(input), target).backward();
 *   optimizer.step();
 * });
 * ```
 * PyTorch equivalent: `torch.optim.NAdam(params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8,
 * weight_decay=0, momentum_decay=4e-3, foreach=None)` (the single-tensor code path, op for op,
 * in one native call per group with `foreach`).
 */
export class NAdam extends Optimizer<NAdamGroupOptions, NAdamState> {
  constructor(params: OptimizerParams<NAdamGroupOptions>, options?: NAdamOptions) {
    super(params, options, definition);
  }

  protected createState(param: Tensor): NAdamState {
    return { step: 0, muProduct: 1, expAvg: zerosLike(param), expAvgSq: zerosLike(param) };
  }

  /** The whole group in one native call, in `stepParameter`'s op order. */
  protected override stepGroupWhole(
    group: ParamGroup<NAdamGroupOptions>,
    items: readonly GroupItem<NAdamState>[],
  ): void {
    const steps = items.map(({ state }) => nadamStep(state, group));
    aten.call(
      'foreachNadam',
      items.map(({ param }) => param),
      undefined,
      items.map(({ state }) => state.expAvg),
      items.map(({ state }) => state.expAvgSq),
      steps.map((step) => step.biasCorrection2),
      steps.map((step) => step.gradStep),
      steps.map((step) => step.avgStep),
      group.betas[0],
      group.betas[1],
      group.weightDecay,
      group.eps,
    );
  }

  protected stepParameter(
    param: Tensor,
    grad: Tensor,
    state: NAdamState,
    group: ParamGroup<NAdamGroupOptions>,
  ): void {
    const { betas, eps, weightDecay } = group;
    const [beta1, beta2] = betas;
    const { biasCorrection2, gradStep, avgStep } = nadamStep(state, group);
    const direction = weightDecay !== 0 ? grad.add(param, weightDecay) : grad;
    state.expAvg.mul_(beta1).add_(direction, 1 - beta1);
    state.expAvgSq.mul_(beta2).addcmul_(direction, direction, 1 - beta2);
    const denominator = state.expAvgSq.div(biasCorrection2).sqrt().add_(eps);
    param.addcdiv_(direction, denominator, gradStep);
    param.addcdiv_(state.expAvg, denominator, avgStep);
  }
}

/**
 * Counts a step into `state` (the step and the μ product) and returns its scalars: the second
 * moment's bias correction and the step sizes of the gradient and of the first moment.
 */
function nadamStep(state: NAdamState, group: NAdamGroupOptions) {
  const { lr, betas, momentumDecay } = group;
  const beta1 = betas[0];
  state.step += 1;
  const step = state.step;
  const mu = beta1 * (1 - 0.5 * 0.96 ** (step * momentumDecay));
  const muNext = beta1 * (1 - 0.5 * 0.96 ** ((step + 1) * momentumDecay));
  // float32 products, as PyTorch's float32 `mu_product` tensor computes them: a product of two
  // float32 values is exact in float64, so rounding it once gives the float32 result.
  state.muProduct = Math.fround(state.muProduct * Math.fround(mu));
  // PyTorch 1.13 multiplies by μₜ a second time here (`mu_product * mu * mu_next`); kept for parity.
  const muProductNext = Math.fround(Math.fround(state.muProduct * Math.fround(mu)) * Math.fround(muNext));
  return {
    biasCorrection2: 1 - betas[1] ** step,
    gradStep: (-lr * (1 - mu)) / (1 - state.muProduct),
    avgStep: (-lr * muNext) / (1 - muProductNext),
  };
}
