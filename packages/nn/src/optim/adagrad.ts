import { aten, fullLike, type Tensor } from '@flodl/tensor-native';
import { checkForeach } from './foreach.js';
import { type GroupItem, Optimizer, type OptimizerDefinition } from './optimizer.js';
import { checkBoolean, checkNumberInRange } from './options.js';
import type { OptimizerParams, ParamGroup } from './param-groups.js';

/** Options of {@link Adagrad}; a parameter group may override any of them. */
export interface AdagradOptions {
  /** Learning rate γ. Default 1e-2. */
  lr?: number;
  /** Learning-rate decay η: step t uses γ / (1 + (t − 1)·η). Default 0. */
  lrDecay?: number;
  /** L2 penalty λ added to the gradient. Default 0. */
  weightDecay?: number;
  /** Starting value of the sum of squared gradients. Default 0. */
  initialAccumulatorValue?: number;
  /** Term ε added to the denominator. Default 1e-10. */
  eps?: number;
  /** Maximize the objective instead of minimizing it. Default false. */
  maximize?: boolean;
  /**
   * Update a group in one native call instead of several calls per parameter, bit for bit the
   * per-parameter update. `null` (the default) takes it on every device; `false` keeps the
   * per-parameter ops; `true` asks for it.
   */
  foreach?: boolean | null;
}

/** The options of one Adagrad parameter group, every value resolved. */
export type AdagradGroupOptions = Required<AdagradOptions>;

/** Adagrad's per-parameter state: the step count and the running sum of squared gradients. */
export type AdagradState = { step: number; sum: Tensor };

const definition: OptimizerDefinition<AdagradGroupOptions> = {
  name: 'Adagrad',
  defaults: {
    lr: 1e-2,
    lrDecay: 0,
    weightDecay: 0,
    initialAccumulatorValue: 0,
    eps: 1e-10,
    maximize: false,
    foreach: null,
  },
  validate(options, where) {
    for (const key of ['lr', 'lrDecay', 'weightDecay', 'initialAccumulatorValue', 'eps'] as const) {
      if (options[key] !== undefined) checkNumberInRange('Adagrad', `${where}.${key}`, options[key], 0);
    }
    if (options.maximize !== undefined) checkBoolean('Adagrad', `${where}.maximize`, options.maximize);
    if (options.foreach !== undefined) checkForeach('Adagrad', `${where}.foreach`, options.foreach);
  },
  stateLayout: { step: 'count', sum: 'tensor' },
};

/**
 * Adagrad: per-element learning rates from the sum of all past squared gradients:
 *
 *     g ← ∇θ (negated when maximize) + λθ
 *     γₜ ← γ / (1 + (t − 1)·η)
 *     s ← s + g²
 *     θ ← θ − γₜ · g / (√s + ε)
 *
 * As in PyTorch the accumulators are created with the optimizer (and with each added group),
 * so `stateDict()` lists them before the first step. Unlike PyTorch, a group's own
 * `initialAccumulatorValue` is honoured (PyTorch uses the constructor's for every group).
 *
 * @param params the parameters, or parameter groups `{ params, ...options }`
 * @param options {@link AdagradOptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a negative option, an unknown option, an empty
 *   parameter list or a parameter that does not require grad; ERR_DTYPE for a non-floating parameter
 * @example
 * ```ts
 * const optimizer = new Adagrad(model.parameters(), { lr: 0.1, lrDecay: 1e-4 });
 * tidy(() => {
 *   optimizer.zeroGrad();
 *   lossFn(model.forward(input), target).backward();
 *   optimizer.step();
 * });
 * ```
 * PyTorch equivalent: `torch.optim.Adagrad(params, lr=1e-2, lr_decay=0, weight_decay=0,
 * initial_accumulator_value=0, eps=1e-10, maximize=False, foreach=None)` (the single-tensor,
 * dense path, op for op, in one native call per group with `foreach`).
 */
export class Adagrad extends Optimizer<AdagradGroupOptions, AdagradState> {
  constructor(params: OptimizerParams<AdagradGroupOptions>, options?: AdagradOptions) {
    super(params, options, definition);
  }

  protected override onParamGroupAdded(group: ParamGroup<AdagradGroupOptions>): void {
    for (const param of group.params) this.stateOf(param, group);
  }

  protected createState(param: Tensor, group: ParamGroup<AdagradGroupOptions>): AdagradState {
    return { step: 0, sum: fullLike(param, group.initialAccumulatorValue) };
  }

  /** The whole group in one native call, in `stepParameter`'s op order. */
  protected override stepGroupWhole(
    group: ParamGroup<AdagradGroupOptions>,
    items: readonly GroupItem<AdagradState>[],
  ): void {
    for (const { state } of items) state.step += 1;
    aten.call(
      'foreachAdagrad',
      items.map(({ param }) => param),
      undefined,
      items.map(({ state }) => state.sum),
      items.map(({ state }) => group.lr / (1 + (state.step - 1) * group.lrDecay)),
      group.weightDecay,
      group.eps,
      group.maximize,
    );
  }

  protected stepParameter(
    param: Tensor,
    grad: Tensor,
    state: AdagradState,
    group: ParamGroup<AdagradGroupOptions>,
  ): void {
    const { lr, lrDecay, weightDecay, eps, maximize } = group;
    state.step += 1;
    let direction = maximize ? grad.neg() : grad;
    if (weightDecay !== 0) direction = direction.add(param, weightDecay);
    const decayedLr = lr / (1 + (state.step - 1) * lrDecay);
    state.sum.addcmul_(direction, direction, 1);
    const deviation = state.sum.sqrt().add_(eps);
    param.addcdiv_(direction, deviation, -decayedLr);
  }
}
