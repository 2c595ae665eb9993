import { aten, keep, type Tensor, zerosLike } from '@flodl/tensor-native';
import { checkForeach } from './foreach.js';
import { type GroupItem, Optimizer, type OptimizerDefinition } from './optimizer.js';
import { checkBoolean, checkNumberInRange } from './options.js';
import type { OptimizerParams, ParamGroup } from './param-groups.js';

/** Options of {@link RMSprop}; a parameter group may override any of them. */
export interface RMSpropOptions {
  /** Learning rate γ. Default 1e-2. */
  lr?: number;
  /** Smoothing constant α of the running average of the squared gradient. Default 0.99. */
  alpha?: number;
  /** Term ε added to the denominator. Default 1e-8. */
  eps?: number;
  /** L2 penalty λ added to the gradient. Default 0. */
  weightDecay?: number;
  /** Momentum factor μ. Default 0. */
  momentum?: number;
  /** Normalize by an estimate of the gradient's variance instead of its second moment. Default false. */
  centered?: boolean;
  /** Maximize the objective instead of minimizing it. Default false. */
  maximize?: boolean;
  /**
   * Update a group in one native call instead of several calls per parameter; the result is the
   * per-parameter update's, bit for bit. `null` (the default) takes it on every device; `false`
   * keeps the per-parameter ops; `true` asks for it.
   */
  foreach?: boolean | null;
}

/** The options of one RMSprop parameter group, every value resolved. */
export type RMSpropGroupOptions = Required<RMSpropOptions>;

/** RMSprop's per-parameter state; `momentumBuffer` with momentum, `gradAvg` when centered. */
export type RMSpropState = {
  step: number;
  squareAvg: Tensor;
  momentumBuffer?: Tensor | undefined;
  gradAvg?: Tensor | undefined;
};

const definition: OptimizerDefinition<RMSpropGroupOptions> = {
  name: 'RMSprop',
  defaults: {
    lr: 1e-2,
    alpha: 0.99,
    eps: 1e-8,
    weightDecay: 0,
    momentum: 0,
    centered: false,
    maximize: false,
    foreach: null,
  },
  validate(options, where) {
    for (const key of ['lr', 'alpha', 'eps', 'weightDecay', 'momentum'] as const) {
      if (options[key] !== undefined) checkNumberInRange('RMSprop', `${where}.${key}`, options[key], 0);
    }
    if (options.centered !== undefined) checkBoolean('RMSprop', `${where}.centered`, options.centered);
    if (options.maximize !== undefined) checkBoolean('RMSprop', `${where}.maximize`, options.maximize);
    if (options.foreach !== undefined) checkForeach('RMSprop', `${where}.foreach`, options.foreach);
  },
  stateLayout: {
    step: 'count',
    squareAvg: 'tensor',
    momentumBuffer: 'optionalTensor',
    gradAvg: 'optionalTensor',
  },
};

/**
 * RMSprop: divides the gradient by a running root mean square of recent gradients:
 *
 *     g ← ∇θ (negated when maximize) + λθ
 *     v ← α·v + (1 − α)·g²
 *     centered:  ḡ ← α·ḡ + (1 − α)·g,   s ← √(v − ḡ²) + ε;   else s ← √v + ε
 *     momentum:  b ← μ·b + g/s,  θ ← θ − γ·b;                else θ ← θ − γ·g/s
 *
 * @param params the parameters, or parameter groups `{ params, ...options }`
 * @param options {@link RMSpropOptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a negative lr/alpha/eps/weightDecay/momentum, an
 *   unknown option, an empty parameter list or a parameter that does not require grad;
 *   ERR_DTYPE for a non-floating parameter
 * @example
 * ```ts
 * const optimizer = new RMSprop(model.parameters(), { lr: 1e-3, momentum: 0.9, centered: true });
 * tidy(() => {
 *   optimizer.zeroGrad();
 *   lossFn(model.forward(input), target).backward();
 *   optimizer.step();
 * });
 * ```
 * PyTorch equivalent: `torch.optim.RMSprop(params, lr=1e-2, alpha=0.99, eps=1e-8,
 * weight_decay=0, momentum=0, centered=False, maximize=False, foreach=None)` (the single-tensor
 * code path, op for op, in one native call per group with `foreach`).
 */
export class RMSprop extends Optimizer<RMSpropGroupOptions, RMSpropState> {
  constructor(params: OptimizerParams<RMSpropGroupOptions>, options?: RMSpropOptions) {
    super(params, options, definition);
  }

  protected createState(param: Tensor, group: ParamGroup<RMSpropGroupOptions>): RMSpropState {
    const state: RMSpropState = { step: 0, squareAvg: zerosLike(param) };
    if (group.momentum > 0) state.momentumBuffer = zerosLike(param);
    if (group.centered) state.gradAvg = zerosLike(param);
    return state;
  }

  /** The whole group in one native call, in `stepParameter`'s op order. */
  protected override stepGroupWhole(
    group: ParamGroup<RMSpropGroupOptions>,
    items: readonly GroupItem<RMSpropState>[],
  ): void {
    const { lr, alpha, eps, weightDecay, momentum, centered, maximize } = group;
    const momentumBuffers: Tensor[] = [];
    const gradAvgs: Tensor[] = [];
    for (const { param, state } of items) {
      state.step += 1;
      // Created late when momentum or `centered` is switched on after the first steps.
      if (momentum > 0) {
        state.momentumBuffer ??= keep(zerosLike(param));
        momentumBuffers.push(state.momentumBuffer);
      }
      if (centered) {
        state.gradAvg ??= keep(zerosLike(param));
        gradAvgs.push(state.gradAvg);
      }
    }
    aten.call(
      'foreachRmsprop',
      items.map(({ param }) => param),
      undefined,
      items.map(({ state }) => state.squareAvg),
      momentum > 0 ? momentumBuffers : undefined,
      centered ? gradAvgs : undefined,
      lr,
      alpha,
      eps,
      weightDecay,
      momentum,
      centered,
      maximize,
    );
  }

  protected stepParameter(
    param: Tensor,
    grad: Tensor,
    state: RMSpropState,
    group: ParamGroup<RMSpropGroupOptions>,
  ): void {
    const { lr, alpha, eps, weightDecay, momentum, centered, maximize } = group;
    state.step += 1;
    let direction = maximize ? grad.neg() : grad;
    if (weightDecay !== 0) direction = direction.add(param, weightDecay);
    state.squareAvg.mul_(alpha).addcmul_(direction, direction, 1 - alpha);
    let average: Tensor;
    if (centered) {
      // Created late when `centered` is switched on after the first steps.
      state.gradAvg ??= keep(zerosLike(param));
      state.gradAvg.mul_(alpha).add_(direction, 1 - alpha);
      average = state.squareAvg.clone().addcmul_(state.gradAvg, state.gradAvg, -1).sqrt_();
    } else {
      average = state.squareAvg.sqrt();
    }
    average.add_(eps);
    if (momentum > 0) {
      state.momentumBuffer ??= keep(zerosLike(param));
      state.momentumBuffer.mul_(momentum).addcdiv_(direction, average);
      param.add_(state.momentumBuffer, -lr);
    } else {
      param.addcdiv_(direction, average, -lr);
    }
  }
}
