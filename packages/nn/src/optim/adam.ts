import { aten, FlodlError, full, keep, type Tensor, zerosLike } from '@flodl/tensor-native';
import { allOnCuda, checkForeach } from './foreach.js';
import { type GroupItem, Optimizer, type OptimizerDefinition } from './optimizer.js';
import { checkBetas, checkBoolean, checkNumberInRange } from './options.js';
import type { OptimizerParams, ParamGroup } from './param-groups.js';
import type { StateLayout } from './state-dict.js';

/** Options of {@link Adam}; a parameter group may override any of them. */
export interface AdamOptions {
  /** Learning rate γ. Default 1e-3. */
  lr?: number;
  /** Decay rates (β1, β2) of the running averages of the gradient and its square. Default [0.9, 0.999]. */
  betas?: [number, number];
  /** Term ε added to the denominator. Default 1e-8. */
  eps?: number;
  /** L2 penalty λ added to the gradient. Default 0. */
  weightDecay?: number;
  /** Use the AMSGrad variant (the maximum of past second moments). Default false. */
  amsgrad?: boolean;
  /** Maximize the objective instead of minimizing it. Default false. */
  maximize?: boolean;
  /**
   * Update every parameter of a group with libtorch's fused multi-tensor CUDA kernel: two
   * launches per step for the whole group (the step counts, then the update) instead of a
   * dozen multi-tensor ones. `null` (the default) uses it where it can run: every parameter of
   * the group on CUDA, a libtorch with the kernel (2.x; AdamW's needs 2.1), and `foreach` left
   * at its default; elsewhere the group takes the `foreach` update. `true` asks for it (an
   * ERR_DEVICE at the step where it cannot run); `false` never uses it. PyTorch's default is
   * the foreach update on CUDA; the fused one agrees with it to rounding.
   */
  fused?: boolean | null;
  /**
   * Update a group in one native call with libtorch's multi-tensor (foreach) ops: a dozen
   * launches per step for the whole group instead of several per parameter. `null` (the
   * default, PyTorch's `foreach=None`) uses them on every device; `false` keeps the
   * per-parameter ops; `true` asks for them. Off CUDA the update is the per-parameter one op
   * for op (bit for bit on the CPU, where a contiguous float32/float64 parameter is updated in
   * one pass with those ops' roundings); with every parameter on CUDA and libtorch 2.x it is
   * PyTorch's multi-tensor one, which agrees with it to rounding (the first moment by lerp).
   */
  foreach?: boolean | null;
}

/** The options of one Adam parameter group, every value resolved. */
export type AdamGroupOptions = Required<AdamOptions>;

/** Adam's per-parameter state. `maxExpAvgSq` exists with amsgrad only. */
export type AdamState = {
  step: number;
  expAvg: Tensor;
  expAvgSq: Tensor;
  maxExpAvgSq?: Tensor | undefined;
};

/** The option checks and state layout of Adam and AdamW. */
function adamDefinition(name: string, weightDecay: number): OptimizerDefinition<AdamGroupOptions> {
  return {
    name,
    defaults: {
      lr: 1e-3,
      betas: [0.9, 0.999],
      eps: 1e-8,
      weightDecay,
      amsgrad: false,
      maximize: false,
      fused: null,
      foreach: null,
    },
    validate(options, where) {
      if (options.lr !== undefined) checkNumberInRange(name, `${where}.lr`, options.lr, 0);
      if (options.betas !== undefined) checkBetas(name, `${where}.betas`, options.betas);
      if (options.eps !== undefined) checkNumberInRange(name, `${where}.eps`, options.eps, 0);
      if (options.weightDecay !== undefined) {
        checkNumberInRange(name, `${where}.weightDecay`, options.weightDecay, 0);
      }
      if (options.amsgrad !== undefined) checkBoolean(name, `${where}.amsgrad`, options.amsgrad);
      if (options.maximize !== undefined) checkBoolean(name, `${where}.maximize`, options.maximize);
      if (options.fused !== undefined) checkForeach(name, `${where}.fused`, options.fused);
      if (options.foreach !== undefined) checkForeach(name, `${where}.foreach`, options.foreach);
    },
    checkCombination(options, where) {
      if (options.fused === true && options.foreach === true) {
        throw new FlodlError('ERR_INVALID_ARGUMENT', 'fused and foreach cannot both be true', {
          op: name,
          expected: `one of ${where}.fused and ${where}.foreach true, or neither`,
          got: 'fused: true, foreach: true',
        });
      }
    },
    stateLayout: ADAM_STATE_LAYOUT,
  };
}

const ADAM_STATE_LAYOUT: StateLayout = {
  step: 'count',
  expAvg: 'tensor',
  expAvgSq: 'tensor',
  maxExpAvgSq: 'optionalTensor',
};

/** Fresh Adam/AdamW state for `param`. */
function createAdamState(param: Tensor, group: AdamGroupOptions): AdamState {
  const state: AdamState = { step: 0, expAvg: zerosLike(param), expAvgSq: zerosLike(param) };
  if (group.amsgrad) state.maxExpAvgSq = zerosLike(param);
  return state;
}

/**
 * The moment updates and the bias-corrected step of Adam and AdamW, op for op
 * as `_single_tensor_adam(w)` (non-capturable path): `state.step` must already be incremented.
 */
function adamUpdate(param: Tensor, grad: Tensor, state: AdamState, group: AdamGroupOptions): void {
  const { lr, betas, eps, amsgrad } = group;
  const [beta1, beta2] = betas;
  state.expAvg.mul_(beta1).add_(grad, 1 - beta1);
  state.expAvgSq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
  const biasCorrection1 = 1 - beta1 ** state.step;
  const biasCorrection2 = 1 - beta2 ** state.step;
  const stepSize = lr / biasCorrection1;
  const biasCorrection2Sqrt = Math.sqrt(biasCorrection2);
  let secondMoment = state.expAvgSq;
  if (amsgrad) {
    // Created late when amsgrad is switched on after the first steps.
    state.maxExpAvgSq ??= keep(zerosLike(param));
    const maximum = state.maxExpAvgSq;
    maximum.copy_(maximum.maximum(state.expAvgSq));
    secondMoment = maximum;
  }
  const denominator = secondMoment.sqrt().div(biasCorrection2Sqrt).add_(eps);
  param.addcdiv_(state.expAvg, denominator, -stepSize);
}

/**
 * A group's tensors as the multi-tensor kernels take them: params, grads (absent: the kernel
 * reads the params' own), both moments, the maxima (amsgrad).
 */
function groupTensors(
  items: readonly GroupItem<AdamState>[],
  amsgrad: boolean,
): [Tensor[], undefined, Tensor[], Tensor[], Tensor[] | undefined] {
  return [
    items.map(({ param }) => param),
    undefined,
    items.map(({ state }) => state.expAvg),
    items.map(({ state }) => state.expAvgSq),
    amsgrad ? items.map(({ state }) => state.maxExpAvgSq!) : undefined,
  ];
}

/**
 * @internal What Adam and AdamW share: options, state, and the step up to weight decay, which
 * each applies its own way in `decay`.
 */
export abstract class AdamBase extends Optimizer<AdamGroupOptions, AdamState> {
  protected constructor(
    params: OptimizerParams<AdamGroupOptions>,
    options: AdamOptions | undefined,
    name: string,
    weightDecay: number,
  ) {
    super(params, options, adamDefinition(name, weightDecay));
  }

  /** Applies weight decay; returns the gradient the moments are taken of. */
  protected abstract decay(param: Tensor, grad: Tensor, group: AdamGroupOptions): Tensor;

  /** True for decoupled weight decay (AdamW), as the fused kernel needs to know. */
  protected abstract readonly decoupledWeightDecay: boolean;

  /**
   * The step count of each parameter the fused kernel updates, as the float32 scalar on the
   * parameter's device it reads, with the host count it was last set from (`state.step` moves
   * without it when a state is loaded: the next fused step sets it again).
   */
  readonly #deviceSteps = new Map<Tensor, { count: Tensor; step: number }>();

  /** @internal The fused kernel reads the step count from the device: capturable. */
  override captureRefusal(): string | null {
    if (this.paramGroups.every((group) => this.#fused(group))) return null;
    const name = this.constructor.name;
    return `${name} computes its bias correction on the host unless fused: keep its parameters on CUDA with fused at its default, or create it with { fused: true }, to capture its step`;
  }

  /** @internal Sets each device step count from the host one, outside the capture. */
  override prepareCapture(): void {
    for (const [param, state] of this.state) this.#deviceStep(param, state);
  }

  /** @internal A replay advanced the device counts; the host ones follow. */
  override noteReplayedStep(): void {
    for (const [param, entry] of this.#deviceSteps) {
      const state = this.state.get(param);
      if (state === undefined) continue;
      state.step += 1;
      entry.step = state.step;
    }
  }

  override dispose(): void {
    for (const { count } of this.#deviceSteps.values()) count.dispose();
    this.#deviceSteps.clear();
    super.dispose();
  }

  protected override takesGroupWhole(group: ParamGroup<AdamGroupOptions>): boolean {
    return group.fused === true || super.takesGroupWhole(group);
  }

  protected override stepGroupWhole(
    group: ParamGroup<AdamGroupOptions>,
    items: readonly GroupItem<AdamState>[],
  ): void {
    if (this.#fused(group)) this.#fusedStep(group, items);
    else this.#foreachStep(group, items);
  }

  /** The fused kernel's entry for this optimizer (AdamW's decays the weights itself). */
  get #fusedOp(): 'fusedAdam' | 'fusedAdamW' {
    return this.decoupledWeightDecay ? 'fusedAdamW' : 'fusedAdam';
  }

  /**
   * Whether `group` steps with the fused kernel: asked for, or by default where it can run
   * (every parameter on CUDA, the kernel in this build, foreach at its default).
   */
  #fused(group: ParamGroup<AdamGroupOptions>): boolean {
    if (group.fused !== null) return group.fused;
    return group.foreach === null && aten.has(this.#fusedOp) && allOnCuda(group.params);
  }

  /** The device step count of `param`, set from `state.step` when they differ. */
  #deviceStep(param: Tensor, state: AdamState): Tensor {
    let entry = this.#deviceSteps.get(param);
    if (entry === undefined) {
      entry = {
        count: keep(full([], state.step, { dtype: 'float32', device: param.device })),
        step: state.step,
      };
      this.#deviceSteps.set(param, entry);
    } else if (entry.step !== state.step) {
      entry.count.fill_(state.step);
      entry.step = state.step;
    }
    return entry.count;
  }

  /** One step of the whole group with libtorch's fused CUDA kernel. */
  #fusedStep(group: ParamGroup<AdamGroupOptions>, items: readonly GroupItem<AdamState>[]): void {
    const name = this.constructor.name;
    const op = this.#fusedOp;
    if (!aten.has(op)) {
      throw new FlodlError(
        'ERR_DEVICE',
        `fused ${name} needs a CUDA build of libtorch ${op === 'fusedAdamW' ? '2.1' : '2.0'} or later`,
        {
          op: `${name}.step`,
          expected: `a libtorch with the fused ${name} kernel`,
          got: 'none in this build (use fused: false)',
        },
      );
    }
    for (const { param } of items) {
      if (!param.device.startsWith('cuda')) {
        throw new FlodlError('ERR_DEVICE', `fused ${name} updates CUDA parameters only`, {
          op: `${name}.step`,
          expected: 'parameters on a CUDA device',
          got: param.device,
        });
      }
    }
    // The kernel's call adds one to every count on the device before the update (graph-safe:
    // a replay advances them), as PyTorch's fused Adam does; the host counts follow here.
    const steps = items.map(({ param, state }) => this.#deviceStep(param, state));
    aten.call(op, ...groupTensors(items, group.amsgrad), steps, ...this.#settings(group));
    for (const { param, state } of items) {
      state.step += 1;
      this.#deviceSteps.get(param)!.step = state.step;
    }
  }

  protected createState(param: Tensor, group: ParamGroup<AdamGroupOptions>): AdamState {
    return createAdamState(param, group);
  }

  /**
   * One step of the whole group with multi-tensor ops: PyTorch's `_multi_tensor_adam` with every
   * parameter on CUDA and libtorch 2.x, else the per-parameter update op for op in one call.
   */
  #foreachStep(group: ParamGroup<AdamGroupOptions>, items: readonly GroupItem<AdamState>[]): void {
    const [beta1, beta2] = group.betas;
    for (const { param, state } of items) {
      state.step += 1;
      if (group.amsgrad) state.maxExpAvgSq ??= keep(zerosLike(param));
    }
    const tensors = groupTensors(items, group.amsgrad);
    const op = aten.has('foreachAdam') && allOnCuda(tensors[0]) ? 'foreachAdam' : 'foreachAdamExact';
    aten.call(
      op,
      ...tensors,
      items.map(({ state }) => -group.lr / (1 - beta1 ** state.step)),
      items.map(({ state }) => Math.sqrt(1 - beta2 ** state.step)),
      ...this.#settings(group),
    );
  }

  /** The scalar arguments the multi-tensor kernels take after their lists. */
  #settings(group: AdamGroupOptions): [number, number, number, number, number, boolean, boolean, boolean] {
    const [beta1, beta2] = group.betas;
    return [
      group.lr,
      beta1,
      beta2,
      group.weightDecay,
      group.eps,
      group.amsgrad,
      group.maximize,
      this.decoupledWeightDecay,
    ];
  }

  protected stepParameter(
    param: Tensor,
    grad: Tensor,
    state: AdamState,
    group: ParamGroup<AdamGroupOptions>,
  ): void {
    const direction = group.maximize ? grad.neg() : grad;
    state.step += 1;
    adamUpdate(param, this.decay(param, direction, group), state, group);
  }
}

/**
 * Adam: adaptive moment estimation with bias correction:
 *
 *     g ← ∇θ (negated when maximize) + λθ
 *     m ← β1·m + (1 − β1)·g          v ← β2·v + (1 − β2)·g²
 *     v̂max ← max(v̂max, v)           (amsgrad; v̂ below is then v̂max)
 *     θ ← θ − γ/(1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + ε)
 *
 * @param params the parameters, or parameter groups `{ params, ...options }`
 * @param options {@link AdamOptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a negative lr/eps/weightDecay, betas outside
 *   [0, 1), an unknown option, an empty parameter list or a parameter that does not require
 *   grad; ERR_DTYPE for a non-floating parameter
 * @example
 * ```ts
 * const optimizer = new Adam(model.parameters(), { lr: 1e-3, betas: [0.9, 0.98] });
 * tidy(() => {
 *   optimizer.zeroGrad();
 *   lossFn(model.forward(input), target).backward();
 *   optimizer.step();
 * });
 * ```
 * PyTorch equivalent: `torch.optim.Adam(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
 * weight_decay=0, amsgrad=False, maximize=False, foreach=None)` (the single-tensor code path,
 * op for op, in one native call per group with `foreach`).
 */
export class Adam extends AdamBase {
  constructor(params: OptimizerParams<AdamGroupOptions>, options?: AdamOptions) {
    super(params, options, 'Adam', 0);
  }

  protected readonly decoupledWeightDecay = false;

  /** L2 penalty: λθ enters the gradient. */
  protected decay(param: Tensor, grad: Tensor, group: AdamGroupOptions): Tensor {
    return group.weightDecay === 0 ? grad : grad.add(param, group.weightDecay);
  }
}
