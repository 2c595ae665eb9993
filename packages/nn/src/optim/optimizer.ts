// The optimizer base class: parameter groups, per-parameter state, zeroGrad, step, state dicts.
// Each optimizer supplies its options, its state layout and `stepParameter` (one file each).
import { enableGrad, noGrad } from '@flodl/autograd';
import {
  aten,
  FlodlError,
  invalidArgument,
  keep,
  shareClassIdentity,
  Tensor,
  tidy,
} from '@flodl/tensor-native';
import { foreachChosen } from './foreach.js';
import { checkNumberInRange, checkOptionsObject, rejectUnknownKeys } from './options.js';
import {
  type BaseGroupOptions,
  type OptimizerParams,
  type ParamGroup,
  type ParamGroupInput,
  readGroupInput,
  splitParams,
} from './param-groups.js';
import {
  checkStateDict,
  type OptimizerStateDict,
  type ParameterState,
  type StateLayout,
} from './state-dict.js';

/** What an optimizer tells the base class about itself (needed to write a new optimizer). */
export interface OptimizerDefinition<TOptions extends BaseGroupOptions> {
  /** The class name, used in error messages (`SGD`). */
  name: string;
  /** Every option with its default; `lr` is NaN where the optimizer has no default (SGD). */
  defaults: TOptions;
  /** Checks the options present in `options`; names them as `${where}.${key}`. */
  validate(options: Partial<TOptions>, where: string): void;
  /** The per-parameter state, for checking state dicts on load. */
  stateLayout: StateLayout;
  /** Checks combinations of resolved options (SGD: nesterov needs momentum), before anything is kept. */
  checkCombination?(options: TOptions, where: string): void;
}

/** One parameter to update in a step, with its gradient and its state. */
export interface StepItem<TState extends ParameterState> {
  param: Tensor;
  grad: Tensor;
  state: TState;
}

/**
 * One parameter of a whole-group step ({@link Optimizer.stepGroupWhole}) with its state; its
 * gradient stays in native code, where the multi-tensor update reads it.
 */
export interface GroupItem<TState extends ParameterState> {
  param: Tensor;
  state: TState;
}

/**
 * The base of every optimizer: parameter groups with per-group options, per-parameter state
 * kept across tidy scopes, `zeroGrad`, `step`, and state dicts in PyTorch's structure.
 *
 * Subclasses implement `createState` and `stepParameter` (one parameter's update with
 * in-place libtorch ops); `stepGroup` is the seam where a fused multi-tensor backend can take
 * over a whole group, and `takesGroupWhole`/`stepGroupWhole` the one where it does so without a
 * gradient handle per parameter (the foreach updates of SGD, Adam and AdamW, one native call
 * per group).
 *
 * PyTorch equivalent: `torch.optim.Optimizer`.
 */
export abstract class Optimizer<
  TOptions extends BaseGroupOptions = BaseGroupOptions,
  TState extends ParameterState = ParameterState,
> {
  /** The options each new group starts from. PyTorch: `optimizer.defaults`. */
  readonly defaults: Readonly<TOptions>;
  /** The parameter groups; set `paramGroups[i].lr` for a per-group learning rate. PyTorch: `param_groups`. */
  readonly paramGroups: ParamGroup<TOptions>[] = [];
  /** @internal per-parameter state; its tensors are kept (they survive tidy scopes) */
  protected state = new Map<Tensor, TState>();
  private readonly definition: OptimizerDefinition<TOptions>;
  private disposed = false;

  protected constructor(
    params: OptimizerParams<TOptions>,
    options: Partial<TOptions> | undefined,
    definition: OptimizerDefinition<TOptions>,
  ) {
    this.definition = definition;
    const op = definition.name;
    const given = checkOptionsObject(op, 'options', options);
    rejectUnknownKeys(op, 'options', given, Object.keys(definition.defaults));
    const present = withoutUndefined(given);
    definition.validate(present as Partial<TOptions>, 'options');
    this.defaults = Object.freeze(mergeOptions<TOptions>(definition.defaults, present));
    definition.checkCombination?.(this.defaults, 'options');
    const { groups, flat } = splitParams(op, params);
    groups.forEach((group, g) => {
      this.addGroup(group, flat ? 'params' : `paramGroups[${g}]`, flat);
    });
  }

  /**
   * Adds a group of parameters with its own options (the others come from `defaults`), for
   * example layers unfrozen during fine-tuning. PyTorch: `optimizer.add_param_group(group)`.
   * @throws FlodlError ERR_INVALID_ARGUMENT for an unknown or invalid option, a parameter that
   *   does not require grad or is already optimized; ERR_DTYPE for a non-floating parameter
   */
  addParamGroup(group: ParamGroupInput<TOptions>): void {
    this.checkLive('addParamGroup');
    this.addGroup(group, `paramGroups[${this.paramGroups.length}]`, false);
  }

  private addGroup(input: unknown, where: string, flat: boolean): void {
    const op = this.definition.name;
    const taken = new Set(this.paramGroups.flatMap((group) => group.params));
    const label = (k: number) => (flat ? `params[${k}]` : `${where}.params[${k}]`);
    const { params, options } = readGroupInput(op, where, input, label, taken);
    rejectUnknownKeys(op, where, options, Object.keys(this.definition.defaults));
    const present = withoutUndefined(options);
    this.definition.validate(present as Partial<TOptions>, where);
    const resolved = mergeOptions(this.defaults, present);
    if (Number.isNaN(resolved.lr)) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `${op} needs a learning rate`, {
        op,
        expected: `options.lr, or lr in every parameter group (${where} has none)`,
        got: 'no lr',
      });
    }
    this.definition.checkCombination?.(resolved, where);
    this.paramGroups.push({ params, ...resolved } as ParamGroup<TOptions>);
    this.onParamGroupAdded(this.paramGroups[this.paramGroups.length - 1]!);
  }

  /**
   * @internal Why this optimizer's step cannot be captured into a CUDA graph, or null when it
   * can: a captured step replays its GPU work only, so an update that computes a value on the
   * host each step (a bias correction from the step count) would replay a stale one. The base
   * refuses; optimizers whose update is GPU work with constant scalars say null.
   */
  captureRefusal(): string | null {
    return `${this.definition.name} computes part of its update on the host each step`;
  }

  /** @internal Called once before a step is captured (state the graph must update on the GPU). */
  prepareCapture(): void {}

  /**
   * @internal Called after each replay of a captured step: the host-side counters a step
   * advances (the GPU ones advanced in the replay).
   */
  noteReplayedStep(): void {}

  /** @internal Called after a group is added (Adagrad fills its accumulators here). */
  protected onParamGroupAdded(_group: ParamGroup<TOptions>): void {}

  /** The learning rate of group `groupIndex` (default the first). */
  getLr(groupIndex = 0): number {
    return this.groupAt('getLr', groupIndex).lr;
  }

  /**
   * Sets the learning rate of every group (use `setGroupLr` or `paramGroups[i].lr` for one).
   * @throws FlodlError ERR_INVALID_ARGUMENT when `lr` is not a finite number >= 0
   */
  setLr(lr: number): void {
    checkNumberInRange(`${this.definition.name}.setLr`, 'lr', lr, 0);
    for (const group of this.paramGroups) group.lr = lr;
  }

  /** Sets the learning rate of one group. @throws FlodlError ERR_INVALID_ARGUMENT */
  setGroupLr(groupIndex: number, lr: number): void {
    const group = this.groupAt('setGroupLr', groupIndex);
    checkNumberInRange(`${this.definition.name}.setGroupLr`, 'lr', lr, 0);
    group.lr = lr;
  }

  private groupAt(method: string, groupIndex: number): ParamGroup<TOptions> {
    const group = Number.isInteger(groupIndex) ? this.paramGroups[groupIndex] : undefined;
    if (group === undefined) {
      throw invalidArgument(
        `${this.definition.name}.${method}`,
        'groupIndex',
        `an integer in [0, ${this.paramGroups.length - 1}]`,
        groupIndex,
      );
    }
    return group;
  }

  /**
   * Clears the gradients of every parameter: set to none (default, as PyTorch 2.x; the next
   * backward writes fresh ones and a parameter that gets none is skipped by `step`) or, with
   * `false`, filled with zeros in place (a gradient built with `createGraph` is cut from its
   * graph first). One native call for all of them. PyTorch: `optimizer.zero_grad(set_to_none)`.
   */
  zeroGrad(setToNone = true): void {
    if (typeof setToNone !== 'boolean') {
      throw invalidArgument(`${this.definition.name}.zeroGrad`, 'setToNone', 'a boolean', setToNone);
    }
    const params =
      this.paramGroups.length === 1
        ? this.paramGroups[0]!.params
        : this.paramGroups.flatMap((group) => group.params);
    aten.call('zeroGrads', params, setToNone);
  }

  /**
   * Performs one update of every parameter that has a gradient (parameters whose `grad` is
   * null are skipped), with autograd off and every temporary freed. With a `closure`, first
   * re-evaluates the loss with grad enabled and returns what the closure returns.
   * PyTorch: `optimizer.step(closure=None)`.
   * @throws FlodlError ERR_DISPOSED after `dispose()`; ERR_INVALID_ARGUMENT when a group's lr
   *   was set to something other than a finite number >= 0
   */
  step(): void;
  step<T>(closure: () => T): T;
  step<T>(closure?: () => T): T | undefined {
    this.checkLive('step');
    let loss: T | undefined;
    if (closure !== undefined) {
      if (typeof closure !== 'function') {
        throw invalidArgument(`${this.definition.name}.step`, 'closure', 'a function', closure);
      }
      loss = enableGrad(closure);
    }
    // Checked for every group before any parameter moves, so a bad lr leaves no half-step.
    this.paramGroups.forEach((group, g) => {
      checkNumberInRange(`${this.definition.name}.step`, `paramGroups[${g}].lr`, group.lr, 0);
    });
    noGrad(() =>
      tidy(() => {
        for (const group of this.paramGroups) {
          if (this.takesGroupWhole(group)) {
            this.stepWhole(group);
            continue;
          }
          const items: StepItem<TState>[] = [];
          for (const param of group.params) {
            const grad = param.grad;
            if (grad === null) continue;
            items.push({ param, grad, state: this.stateOf(param, group) });
          }
          if (items.length > 0) this.stepGroup(group, items);
        }
      }),
    );
    return loss;
  }

  /**
   * Updates the parameters of one group. The default runs `stepParameter` on each; a fused
   * multi-tensor backend overrides this for the groups it can take whole.
   */
  protected stepGroup(group: ParamGroup<TOptions>, items: readonly StepItem<TState>[]): void {
    for (const { param, grad, state } of items) this.stepParameter(param, grad, state, group);
  }

  /** Steps the parameters of `group` that have a gradient, asking native code which those are. */
  private stepWhole(group: ParamGroup<TOptions>): void {
    const present = aten.call('hasGrads', group.params);
    const items: GroupItem<TState>[] = [];
    group.params.forEach((param, k) => {
      if (present[k]) items.push({ param, state: this.stateOf(param, group) });
    });
    if (items.length > 0) this.stepGroupWhole(group, items);
  }

  /**
   * True when `group` is updated by `stepGroupWhole` this step (a multi-tensor update that
   * reads the gradients natively). The default follows the group's `foreach` option where the
   * optimizer has one (null: on), else false, which runs `stepGroup`.
   */
  protected takesGroupWhole(group: ParamGroup<TOptions>): boolean {
    const { foreach } = group as { foreach?: boolean | null };
    return foreach !== undefined && foreachChosen(foreach);
  }

  /**
   * Updates the parameters of `group` that have a gradient, all at once, for the groups
   * `takesGroupWhole` accepts. The default hands each gradient to `stepGroup`.
   */
  protected stepGroupWhole(group: ParamGroup<TOptions>, items: readonly GroupItem<TState>[]): void {
    this.stepGroup(
      group,
      items.map(({ param, state }) => ({ param, grad: param.grad!, state })),
    );
  }

  /** Creates the state of a parameter at its first update; its tensors are kept by the caller. */
  protected abstract createState(param: Tensor, group: ParamGroup<TOptions>): TState;

  /**
   * Updates one parameter in place from its gradient and state, inside `noGrad` and `tidy`:
   * temporaries are freed on return; tensors stored into `state` must be `keep()`-ed.
   */
  protected abstract stepParameter(
    param: Tensor,
    grad: Tensor,
    state: TState,
    group: ParamGroup<TOptions>,
  ): void;

  /** @internal The state of `param`, created (and kept) at first use. */
  protected stateOf(param: Tensor, group: ParamGroup<TOptions>): TState {
    let state = this.state.get(param);
    if (state === undefined) {
      state = this.createState(param, group);
      for (const value of Object.values(state)) if (value instanceof Tensor) keep(value);
      this.state.set(param, state);
    }
    return state;
  }

  /** The state of one parameter (read-only; undefined before its first update). PyTorch: `optimizer.state[p]`. */
  getState(param: Tensor): Readonly<TState> | undefined {
    return this.state.get(param);
  }

  /**
   * The optimizer's state as PyTorch structures it: `{ state: { [paramIndex]: {...} },
   * paramGroups: [{ ...options, params: [paramIndex, ...] }] }`, parameters counted across
   * groups in order. The tensors are copies owned by the caller: dispose them, or call this
   * inside `tidy`. PyTorch: `optimizer.state_dict()`.
   */
  stateDict(): OptimizerStateDict<TOptions> {
    this.checkLive('stateDict');
    const indices = new Map<Tensor, number>();
    const paramGroups = this.paramGroups.map((group) => {
      const { params, ...options } = group;
      const packed: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(options))
        packed[key] = Array.isArray(value) ? [...value] : value;
      packed.params = params.map((param) => {
        indices.set(param, indices.size);
        return indices.size - 1;
      });
      return packed as unknown as TOptions & { params: number[] };
    });
    const state: Record<number, ParameterState> = {};
    noGrad(() => {
      for (const [param, entry] of this.state) {
        const copy: ParameterState = {};
        for (const [key, value] of Object.entries(entry)) {
          if (value !== undefined) copy[key] = value instanceof Tensor ? value.clone() : value;
        }
        state[indices.get(param)!] = copy;
      }
    });
    return { state, paramGroups };
  }

  /**
   * Restores state saved by `stateDict()` (from this or an identically built optimizer): the
   * group options, each parameter's tensors (copied, cast to the parameter's dtype and device)
   * and step counts. Everything is checked first; on any error the optimizer is unchanged.
   * PyTorch: `optimizer.load_state_dict(state_dict)`.
   * @throws FlodlError ERR_CHECKPOINT naming the group, parameter or tensor that does not
   *   match (group count, group sizes, unknown keys, invalid options, shapes)
   */
  loadStateDict(stateDict: OptimizerStateDict<TOptions>): void {
    this.checkLive('loadStateDict');
    const op = `${this.definition.name}.loadStateDict`;
    const { groupOptions, entries } = checkStateDict(
      op,
      stateDict,
      this.paramGroups,
      this.definition.defaults,
      (options, where) => this.definition.validate(options, where),
      this.definition.stateLayout,
    );
    const loaded = new Map<Tensor, TState>();
    const created: Tensor[] = [];
    try {
      noGrad(() => {
        for (const { param, entry } of entries) {
          const state: ParameterState = {};
          for (const [key, value] of Object.entries(entry)) {
            if (value instanceof Tensor) {
              const copy = keep(value.to({ dtype: param.dtype, device: param.device, copy: true }));
              created.push(copy);
              state[key] = copy;
            } else {
              state[key] = value as number | null;
            }
          }
          loaded.set(param, state as TState);
        }
      });
    } catch (error) {
      for (const tensor of created) tensor.dispose();
      throw error;
    }
    this.disposeState();
    this.state = loaded;
    this.paramGroups.forEach((group, g) => {
      Object.assign(group, groupOptions[g]);
    });
  }

  /** Frees every state tensor; the optimizer cannot step afterwards. Safe to call twice. */
  dispose(): void {
    this.disposeState();
    this.disposed = true;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  /** Lists the groups and their options, like PyTorch's `repr(optimizer)`. */
  toString(): string {
    const lines = [`${this.definition.name} (`];
    this.paramGroups.forEach((group, g) => {
      lines.push(`Parameter Group ${g}`);
      for (const key of Object.keys(group).sort()) {
        if (key === 'params') continue;
        const value = (group as unknown as Record<string, unknown>)[key];
        lines.push(`    ${key}: ${Array.isArray(value) ? `[${value.join(', ')}]` : String(value)}`);
      }
    });
    lines.push(')');
    return lines.join('\n');
  }

  private disposeState(): void {
    for (const entry of this.state.values()) {
      for (const value of Object.values(entry)) if (value instanceof Tensor) value.dispose();
    }
    this.state.clear();
  }

  private checkLive(method: string): void {
    if (this.disposed) {
      throw new FlodlError('ERR_DISPOSED', 'the optimizer was disposed', {
        op: `${this.definition.name}.${method}`,
        expected: 'an optimizer that was not disposed (build a new one)',
        got: 'a disposed optimizer',
      });
    }
  }
}

function withoutUndefined(options: Record<string, unknown>): Record<string, unknown> {
  const present: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options)) if (value !== undefined) present[key] = value;
  return present;
}

function mergeOptions<TOptions>(base: Readonly<TOptions>, overrides: Record<string, unknown>): TOptions {
  const merged: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(base as Record<string, unknown>)) {
    merged[key] = Array.isArray(value) ? [...value] : value;
  }
  for (const [key, value] of Object.entries(overrides))
    merged[key] = Array.isArray(value) ? [...value] : value;
  return merged as TOptions;
}

shareClassIdentity(Optimizer, 'flodl.nn.Optimizer');
