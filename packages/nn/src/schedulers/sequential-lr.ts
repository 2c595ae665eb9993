import { describeValue, FlodlError, invalidArgument } from '@flodl/tensor-native';
import { Optimizer } from '../optim/optimizer.js';
import { LRScheduler, type LRSchedulerState, readsBaseLrsFromGroups } from './lr-scheduler.js';
import { checkInteger, checkSchedulerOptions, checkStep } from './validate.js';

/** Options of {@link SequentialLR}. */
export interface SequentialLROptions {
  /** The schedulers to run one after another, each built on the same optimizer. */
  schedulers: readonly LRScheduler[];
  /** The steps at which each scheduler after the first takes over (one fewer than `schedulers`, increasing, >= 1). */
  milestones: readonly number[];
}

/** What {@link SequentialLR} saves: its own position and that of every scheduler it runs. */
export interface SequentialLRState extends LRSchedulerState {
  schedulers: LRSchedulerState[];
}

function resolveSchedulers(op: string, optimizer: Optimizer, value: unknown): LRScheduler[] {
  if (!Array.isArray(value) || value.length === 0) {
    throw invalidArgument(op, 'options.schedulers', 'a non-empty array of schedulers', value);
  }
  value.forEach((scheduler, k) => {
    if (!(scheduler instanceof LRScheduler)) {
      throw invalidArgument(
        op,
        `options.schedulers[${k}]`,
        'a step-based scheduler (StepLR, LinearLR, ...; ReduceLROnPlateau follows metrics, not steps)',
        scheduler,
      );
    }
    if (scheduler.optimizer !== optimizer) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `options.schedulers[${k}] schedules another optimizer`, {
        op,
        expected: 'schedulers built on the optimizer given to SequentialLR',
        got: `a ${scheduler.constructor.name} on another optimizer`,
      });
    }
  });
  return [...(value as LRScheduler[])];
}

function resolveMilestones(op: string, value: unknown, count: number): number[] {
  if (!Array.isArray(value)) {
    throw invalidArgument(op, 'options.milestones', 'an array of increasing integers >= 1', value);
  }
  const milestones = value.map((milestone, k) => checkInteger(op, `options.milestones[${k}]`, milestone, 1));
  if (milestones.length !== count - 1) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'one milestone is needed per scheduler after the first', {
      op,
      expected: `${count - 1} milestone(s) for ${count} schedulers`,
      got: `${milestones.length}: [${milestones.join(', ')}]`,
    });
  }
  milestones.forEach((milestone, k) => {
    if (k > 0 && milestone <= milestones[k - 1]!) {
      throw invalidArgument(op, 'options.milestones', 'strictly increasing milestones', value);
    }
  });
  return milestones;
}

/**
 * Runs schedulers one after another: the first from step 0, each next one from its milestone,
 * counted from its own step 0 there:
 *
 *     step < milestones[0]:                   schedulers[0] at step
 *     milestones[k−1] <= step < milestones[k]: schedulers[k] at step − milestones[k−1]
 *
 * Every scheduler starts from the same base rates, the first one's (PyTorch's `initial_lr`):
 * the groups are set back to them, and each later scheduler that read its base rates from the
 * groups (all but CyclicLR and OneCycleLR) takes them, whatever the earlier ones left in the
 * groups when it was built. Step only the SequentialLR; it steps the scheduler in charge, so
 * one that cycles momentum (OneCycleLR) still does.
 *
 * @param optimizer the optimizer every scheduler was built on
 * @param options {@link SequentialLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, an empty `schedulers`, an item
 *   that is not a step-based scheduler or schedules another optimizer, milestones that are not
 *   increasing integers >= 1 or not one fewer than the schedulers, or an unknown option
 * @example
 * ```ts
 * const warmup = new LinearLR(optimizer, { startFactor: 0.01, totalIters: 1000 });
 * const cosine = new CosineAnnealingLR(optimizer, { tMax: 9000 });
 * const scheduler = new SequentialLR(optimizer, { schedulers: [warmup, cosine], milestones: [1000] });
 * // per batch: optimizer.step(); scheduler.step();
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.SequentialLR(optimizer, schedulers, milestones)`.
 */
export class SequentialLR extends LRScheduler {
  /** The schedulers, in the order they take over. */
  readonly schedulers: readonly LRScheduler[];
  /** The steps at which each scheduler after the first takes over. */
  readonly milestones: readonly number[];

  constructor(optimizer: Optimizer, options: SequentialLROptions) {
    const op = 'SequentialLR';
    checkSchedulerOptions(op, options, ['schedulers', 'milestones']);
    if (!(optimizer instanceof Optimizer)) {
      throw invalidArgument(op, 'optimizer', 'an Optimizer (SGD, Adam, ...)', optimizer);
    }
    const schedulers = resolveSchedulers(op, optimizer, options.schedulers);
    const milestones = resolveMilestones(op, options.milestones, schedulers.length);
    const initialLrs = [...schedulers[0]!.baseLrs];
    super(optimizer, op, initialLrs);
    this.schedulers = Object.freeze(schedulers);
    this.milestones = Object.freeze(milestones);
    for (const scheduler of schedulers.slice(1)) {
      if (readsBaseLrsFromGroups(scheduler)) scheduler.baseLrs = [...initialLrs];
      scheduler.lastEpoch = -1; // not started: it takes over at its milestone
    }
    this.optimizer.paramGroups.forEach((group, g) => {
      group.lr = initialLrs[g]!;
    });
    this.initialStep();
  }

  /** The scheduler in charge at `step` and the step it is at there. */
  private locate(step: number): { scheduler: LRScheduler; local: number } {
    let index = 0;
    while (index < this.milestones.length && this.milestones[index]! <= step) index++;
    return {
      scheduler: this.schedulers[index]!,
      local: index === 0 ? step : step - this.milestones[index - 1]!,
    };
  }

  lrAt(step: number): number[] {
    checkStep('SequentialLR.lrAt', step);
    const { scheduler, local } = this.locate(step);
    return scheduler.lrAt(local);
  }

  /** Advances one step: steps the scheduler in charge (from its own step 0 at its milestone). */
  override step(): void {
    const step = this.lastEpoch + 1;
    const { scheduler, local } = this.locate(step);
    const before = scheduler.lastEpoch;
    scheduler.lastEpoch = local - 1;
    try {
      scheduler.step();
    } catch (error) {
      scheduler.lastEpoch = before;
      throw error;
    }
    this.lastLr = scheduler.getLastLr();
    this.lastEpoch = step;
  }

  override stateDict(): SequentialLRState {
    return { ...super.stateDict(), schedulers: this.schedulers.map((scheduler) => scheduler.stateDict()) };
  }

  /** @throws FlodlError ERR_CHECKPOINT when the state does not fit these schedulers */
  override loadStateDict(state: SequentialLRState): void {
    if (
      typeof state !== 'object' ||
      state === null ||
      !Array.isArray(state.schedulers) ||
      state.schedulers.length !== this.schedulers.length
    ) {
      throw new FlodlError('ERR_CHECKPOINT', 'not a SequentialLR state for these schedulers', {
        op: 'SequentialLR.loadStateDict',
        expected: `schedulers: the states of ${this.schedulers.length} scheduler(s)`,
        got: describeValue(state),
      });
    }
    super.loadStateDict(state);
    // Each scheduler checks its own state.
    this.schedulers.forEach((scheduler, k) => {
      scheduler.loadStateDict(state.schedulers[k]!);
    });
  }
}
