// The optimizer-bound scheduler base: a pure per-group schedule `lrAt(step)` applied to the
// optimizer's groups at each `step()`.
import { describeValue, FlodlError, invalidArgument, shareClassIdentity } from '@flodl/tensor-native';
import { Optimizer } from '../optim/optimizer.js';
import { nonNegativePerGroup } from './validate.js';

/** A learning-rate schedule as a pure function of the step (0 = before the first update). */
export type LrSchedule = (step: number) => number;

/** What a step-based scheduler saves: its position and the learning rates it works from. */
export interface LRSchedulerState {
  /** The number of `step()` calls so far (PyTorch: `last_epoch`). */
  lastEpoch: number;
  /** Each group's starting learning rate (PyTorch: `base_lrs`). */
  baseLrs: number[];
  /** Each group's learning rate after the last step (PyTorch: `_last_lr`). */
  lastLr: number[];
}

type GroupWithMomentum = { lr: number; momentum?: number; betas?: [number, number] };

/** The schedulers whose base rates were read from the optimizer's groups (none given). */
const baseLrsFromGroups = new WeakSet<LRScheduler>();

/**
 * @internal True when `scheduler` read its base rates from the groups when it was built (every
 * scheduler but CyclicLR and OneCycleLR, which derive them from their options).
 */
export function readsBaseLrsFromGroups(scheduler: LRScheduler): boolean {
  return baseLrsFromGroups.has(scheduler);
}

/**
 * The base of the step-based schedulers. A scheduler reads each group's learning rate when it
 * is built (`baseLrs`), sets the step-0 rates at once, and on every `step()` advances
 * `lastEpoch` and sets each group's rate to `lrAt(lastEpoch)`. Call `optimizer.step()` first,
 * then `scheduler.step()`, once per batch or epoch.
 *
 * `lrAt` is a pure function of the step (PyTorch's closed form): the rates do not depend on
 * what the groups held before, so an `optimizer.setLr()` between steps is overwritten at the
 * next `step()` (PyTorch's chainable form would scale it instead).
 *
 * PyTorch equivalent: `torch.optim.lr_scheduler._LRScheduler`.
 */
export abstract class LRScheduler {
  /** The optimizer whose groups this scheduler sets. */
  readonly optimizer: Optimizer;
  /** Each group's starting learning rate. PyTorch: `base_lrs`. */
  baseLrs: number[];
  /** The number of `step()` calls so far. PyTorch: `last_epoch`. */
  lastEpoch = -1;
  /** @internal */
  protected lastLr: number[] = [];
  /** @internal the class name, for error messages */
  protected readonly name: string;

  protected constructor(optimizer: Optimizer, name: string, baseLrs?: number[]) {
    if (!(optimizer instanceof Optimizer)) {
      throw invalidArgument(name, 'optimizer', 'an Optimizer (SGD, Adam, ...)', optimizer);
    }
    this.optimizer = optimizer;
    this.name = name;
    this.baseLrs = baseLrs ?? optimizer.paramGroups.map((group) => group.lr);
    if (baseLrs === undefined) baseLrsFromGroups.add(this);
  }

  /** Each group's learning rate at `step`; pure (reads only the options and `baseLrs`). */
  abstract lrAt(step: number): number[];

  /** @internal Each group's momentum (or beta1) at `step`, for the schedulers that cycle it. */
  protected momentumAt(_step: number): number[] | null {
    return null;
  }

  /** @internal Sets the step-0 rates; each subclass calls it last in its constructor. */
  protected initialStep(): void {
    this.step();
  }

  /** Advances one step and sets every group's learning rate. PyTorch: `scheduler.step()`. */
  step(): void {
    // Applied before counting, so a step that throws (OneCycleLR past totalSteps) changes nothing.
    this.applyStep(this.lastEpoch + 1);
    this.lastEpoch += 1;
  }

  /** @internal Writes the rates (and momenta) of `step` into the optimizer's groups. */
  protected applyStep(step: number): void {
    const lrs = this.lrAt(step);
    const momenta = this.momentumAt(step);
    this.optimizer.paramGroups.forEach((group, g) => {
      group.lr = lrs[g]!;
      if (momenta !== null) setMomentum(group as GroupWithMomentum, momenta[g]!);
    });
    this.lastLr = lrs;
  }

  /** Each group's learning rate after the last step. PyTorch: `scheduler.get_last_lr()`. */
  getLastLr(): number[] {
    return [...this.lastLr];
  }

  /** The scheduler's position, for checkpoints. PyTorch: `scheduler.state_dict()`. */
  stateDict(): LRSchedulerState {
    return { lastEpoch: this.lastEpoch, baseLrs: [...this.baseLrs], lastLr: [...this.lastLr] };
  }

  /**
   * Restores a position saved by `stateDict()`; the groups' learning rates come back with the
   * optimizer's own state dict. PyTorch: `scheduler.load_state_dict(state)`.
   * @throws FlodlError ERR_CHECKPOINT when the state does not fit this optimizer's groups
   */
  loadStateDict(state: LRSchedulerState): void {
    const op = `${this.name}.loadStateDict`;
    const groups = this.optimizer.paramGroups.length;
    const valid =
      typeof state === 'object' &&
      state !== null &&
      Number.isInteger(state.lastEpoch) &&
      state.lastEpoch >= -1 &&
      isNumberList(state.baseLrs, groups) &&
      isNumberList(state.lastLr, groups);
    if (!valid) {
      throw new FlodlError('ERR_CHECKPOINT', 'not a scheduler state for this optimizer', {
        op,
        expected: `{ lastEpoch: integer >= -1, baseLrs and lastLr: ${groups} number(s) each }`,
        got: describeValue(state),
      });
    }
    this.lastEpoch = state.lastEpoch;
    this.baseLrs = [...state.baseLrs];
    this.lastLr = [...state.lastLr];
  }
}

function isNumberList(value: unknown, length: number): value is number[] {
  return Array.isArray(value) && value.length === length && value.every((item) => typeof item === 'number');
}

/** @internal Sets SGD/RMSprop's `momentum` or the Adam family's beta1. */
export function setMomentum(group: GroupWithMomentum, momentum: number): void {
  if (Array.isArray(group.betas)) group.betas = [momentum, group.betas[1]];
  else group.momentum = momentum;
}

/** @internal Checks that the optimizer has a momentum (SGD, RMSprop) or betas (Adam family) to cycle. */
export function checkCyclableMomentum(op: string, optimizer: Optimizer): void {
  const defaults = optimizer.defaults as Readonly<Record<string, unknown>>;
  if ('momentum' in defaults || 'betas' in defaults) return;
  throw new FlodlError('ERR_INVALID_ARGUMENT', 'the optimizer has no momentum to cycle', {
    op,
    expected: 'an optimizer with momentum or betas (SGD, RMSprop, Adam, ...), or cycleMomentum: false',
    got: optimizer.constructor.name,
  });
}

/** @internal The options of the schedulers that cycle momentum (CyclicLR, OneCycleLR). */
export interface CyclicMomentumOptions {
  cycleMomentum?: boolean;
  baseMomentum?: number | readonly number[];
  maxMomentum?: number | readonly number[];
}

/** @internal Each group's lowest (`base`) and highest (`max`) momentum. */
export interface MomentumBounds {
  base: number[];
  max: number[];
}

/**
 * @internal Each group's momentum bounds for a scheduler that cycles momentum (or beta1), the
 * options' or else `defaults`; null when `cycleMomentum` is false.
 */
export function cyclicMomentumBounds(
  op: string,
  optimizer: Optimizer,
  options: CyclicMomentumOptions,
  defaults: { base: number; max: number },
): MomentumBounds | null {
  const cycleMomentum = options.cycleMomentum ?? true;
  if (typeof cycleMomentum !== 'boolean')
    throw invalidArgument(op, 'options.cycleMomentum', 'a boolean', cycleMomentum);
  if (!cycleMomentum) return null;
  checkCyclableMomentum(op, optimizer);
  const groups = optimizer.paramGroups.length;
  return {
    base: nonNegativePerGroup(op, 'options.baseMomentum', options.baseMomentum ?? defaults.base, groups),
    max: nonNegativePerGroup(op, 'options.maxMomentum', options.maxMomentum ?? defaults.max, groups),
  };
}

shareClassIdentity(LRScheduler, 'flodl.nn.LRScheduler');
