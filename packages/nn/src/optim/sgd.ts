import { aten, FlodlError, keep, type Tensor } from '@flodl/tensor-native';
import { checkForeach } from './foreach.js';
import { type GroupItem, Optimizer, type OptimizerDefinition } from './optimizer.js';
import { checkBoolean, checkFiniteNumber, checkNumberInRange } from './options.js';
import type { OptimizerParams, ParamGroup } from './param-groups.js';

/** Options of {@link SGD}; a parameter group may override any of them. */
export interface SGDOptions {
  /** Learning rate γ. Required here unless every parameter group sets its own. */
  lr?: number;
  /** Momentum factor μ. Default 0. */
  momentum?: number;
  /** Dampening τ of the momentum. Default 0. */
  dampening?: number;
  /** L2 penalty λ added to the gradient. Default 0. */
  weightDecay?: number;
  /** Nesterov momentum (needs momentum > 0 and dampening 0). Default false. */
  nesterov?: boolean;
  /** Maximize the objective instead of minimizing it. Default false. */
  maximize?: boolean;
  /**
   * Update a group in one native call (on CUDA with libtorch's multi-tensor kernels) instead of
   * several calls per parameter; the result is the per-parameter update's, bit for bit on the
   * CPU. `null` (the default, PyTorch's `foreach=None`) takes it on every device (PyTorch keeps
   * the per-parameter update on the CPU; here one call per group is faster there too);
   * `false` keeps the per-parameter ops; `true` asks for it.
   */
  foreach?: boolean | null;
}

/** The options of one SGD parameter group, every value resolved. */
export type SGDGroupOptions = Required<SGDOptions>;

/** SGD's per-parameter state: the momentum buffer (null while momentum is 0). */
export type SGDState = { momentumBuffer: Tensor | null };

const definition: OptimizerDefinition<SGDGroupOptions> = {
  name: 'SGD',
  defaults: {
    lr: Number.NaN,
    momentum: 0,
    dampening: 0,
    weightDecay: 0,
    nesterov: false,
    maximize: false,
    foreach: null,
  },
  validate(options, where) {
    if (options.lr !== undefined) checkNumberInRange('SGD', `${where}.lr`, options.lr, 0);
    if (options.momentum !== undefined) checkNumberInRange('SGD', `${where}.momentum`, options.momentum, 0);
    // PyTorch does not bound dampening; it must at least be a finite number.
    if (options.dampening !== undefined) checkFiniteNumber('SGD', `${where}.dampening`, options.dampening);
    if (options.weightDecay !== undefined) {
      checkNumberInRange('SGD', `${where}.weightDecay`, options.weightDecay, 0);
    }
    if (options.nesterov !== undefined) checkBoolean('SGD', `${where}.nesterov`, options.nesterov);
    if (options.maximize !== undefined) checkBoolean('SGD', `${where}.maximize`, options.maximize);
    if (options.foreach !== undefined) checkForeach('SGD', `${where}.foreach`, options.foreach);
  },
  stateLayout: { momentumBuffer: 'nullableTensor' },
  checkCombination(options, where) {
    if (options.nesterov && (options.momentum <= 0 || options.dampening !== 0)) {
      throw new FlodlError(
        'ERR_INVALID_ARGUMENT',
        'Nesterov momentum requires a momentum and zero dampening',
        {
          op: 'SGD',
          expected: `${where}.momentum > 0 and ${where}.dampening 0 with nesterov`,
          got: `momentum ${options.momentum}, dampening ${options.dampening}`,
        },
      );
    }
  },
};

/**
 * Stochastic gradient descent, optionally with momentum (PyTorch's formulation):
 *
 *     g ← ∇θ (negated when maximize) + λθ
 *     b ← g at the first step, else μb + (1 − τ)g          (when μ ≠ 0)
 *     g ← g + μb with nesterov, else b                      (when μ ≠ 0)
 *     θ ← θ − γg
 *
 * @param params the parameters, or parameter groups `{ params, ...options }`
 * @param options {@link SGDOptions}; `lr` is required (here or in every group)
 * @throws FlodlError ERR_INVALID_ARGUMENT for a missing lr, a negative lr/momentum/weightDecay,
 *   nesterov without momentum or with dampening, an unknown option, an empty parameter list or
 *   a parameter that does not require grad; ERR_DTYPE for a non-floating parameter
 * @example
 * ```ts
 * const optimizer = new SGD(model.parameters(), { lr: 0.1, momentum: 0.9 });
 * tidy(() => {
 *   optimizer.zeroGrad();
 *   lossFn(model.forward(input), target).backward();
 *   optimizer.step();
 * });
 * ```
 * PyTorch equivalent: `torch.optim.SGD(params, lr, momentum=0, dampening=0, weight_decay=0,
 * nesterov=False, maximize=False, foreach=None)` (the single-tensor code path, op for op, in one
 * native call per group with `foreach`).
 */
export class SGD extends Optimizer<SGDGroupOptions, SGDState> {
  constructor(params: OptimizerParams<SGDGroupOptions>, options?: SGDOptions) {
    super(params, options, definition);
  }

  protected createState(): SGDState {
    return { momentumBuffer: null };
  }

  /** The whole group in one call (PyTorch's `_multi_tensor_sgd`, in `stepParameter`'s op order). */
  protected override stepGroupWhole(
    group: ParamGroup<SGDGroupOptions>,
    items: readonly GroupItem<SGDState>[],
  ): void {
    const { lr, momentum, dampening, weightDecay, nesterov, maximize } = group;
    const buffers = momentum === 0 ? undefined : items.map(({ state }) => state.momentumBuffer);
    const started: (Tensor | null)[] | undefined = aten.call(
      'foreachSgd',
      items.map(({ param }) => param),
      undefined,
      buffers,
      lr,
      momentum,
      dampening,
      weightDecay,
      nesterov,
      maximize,
    );
    started?.forEach((buffer, k) => {
      if (buffer !== null) items[k]!.state.momentumBuffer = keep(buffer);
    });
  }

  /** @internal SGD's update is GPU work with the group's constant scalars: capturable. */
  override captureRefusal(): string | null {
    return null;
  }

  protected stepParameter(
    param: Tensor,
    grad: Tensor,
    state: SGDState,
    group: ParamGroup<SGDGroupOptions>,
  ): void {
    const { lr, momentum, dampening, weightDecay, nesterov, maximize } = group;
    let direction = maximize ? grad.neg() : grad;
    if (weightDecay !== 0) direction = direction.add(param, weightDecay);
    if (momentum !== 0) {
      let buffer = state.momentumBuffer;
      if (buffer === null) {
        buffer = keep(direction.clone());
        state.momentumBuffer = buffer;
      } else {
        buffer.mul_(momentum).add_(direction, 1 - dampening);
      }
      direction = nesterov ? direction.add(buffer, momentum) : buffer;
    }
    param.add_(direction, -lr);
  }
}
