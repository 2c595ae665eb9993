import { describeValue, FlodlError, invalidArgument, type Tensor } from '@flodl/tensor-native';
import type { Optimizer } from '../optim/optimizer.js';
import { LRScheduler, type LRSchedulerState, type LrSchedule } from './lr-scheduler.js';
import { ReduceLROnPlateau, type ReduceLROnPlateauState } from './reduce-lr-on-plateau.js';
import { checkInteger, checkNumberInRange, checkSchedulerOptions, checkStep } from './validate.js';

/** Options of {@link linearWarmupLr}. */
export interface LinearWarmupOptions {
  /** Steps of the warmup: the full rate is reached at this step. */
  warmupSteps: number;
  /** The fraction of the rate at step 0, in [0, 1]. Default 1/3 (PyTorch's LinearLR default). */
  startFactor?: number;
}

/** Options of {@link LinearWarmup}: the warmup and the scheduler that takes over after it. */
export interface LinearWarmupSchedulerOptions extends LinearWarmupOptions {
  /** The scheduler that takes over at `warmupSteps`, built on the same optimizer just before this one. */
  after?: LRScheduler | ReduceLROnPlateau;
}

/** What {@link LinearWarmup} saves: its own position and that of the scheduler that follows. */
export interface LinearWarmupState extends LRSchedulerState {
  after: LRSchedulerState | ReduceLROnPlateauState | null;
}

function resolve(
  op: string,
  options: LinearWarmupOptions,
  extra: string[] = [],
): Required<LinearWarmupOptions> {
  checkSchedulerOptions(op, options, ['warmupSteps', 'startFactor', ...extra]);
  return {
    warmupSteps: checkInteger(op, 'options.warmupSteps', options.warmupSteps, 1),
    startFactor: checkNumberInRange(op, 'options.startFactor', options.startFactor ?? 1 / 3, 0, 1),
  };
}

function warmed(targetLr: number, step: number, warmupSteps: number, startFactor: number): number {
  return targetLr * (startFactor + ((1 - startFactor) * step) / warmupSteps);
}

/**
 * The learning rate at `step` of a linear warmup to `targetLr`, followed by `after`:
 *
 *     step < warmupSteps:  targetLr · (startFactor + (1 − startFactor) · step / warmupSteps)
 *     otherwise:           after(step − warmupSteps), or targetLr without `after`
 *
 * @param targetLr the rate reached at the end of the warmup
 * @param step the number of scheduler steps taken (an integer >= 0)
 * @param options {@link LinearWarmupOptions}
 * @param after the schedule that follows, counted from its own step 0
 * @throws FlodlError ERR_INVALID_ARGUMENT for a warmupSteps that is not an integer >= 1, a
 *   startFactor outside [0, 1], a negative or fractional step, or an unknown option
 * @example linearWarmupLr(0.1, 150, { warmupSteps: 100 }, (step) => cosineAnnealingLr(0.1, step, { tMax: 900 }))
 * PyTorch equivalent: `SequentialLR([LinearLR(start_factor, end_factor=1, total_iters=warmupSteps),
 * after], milestones=[warmupSteps])` whenever `after(0)` is `targetLr` (StepLR, MultiStepLR,
 * ExponentialLR and CosineAnnealingLR from the same base rate all start there).
 */
export function linearWarmupLr(
  targetLr: number,
  step: number,
  options: LinearWarmupOptions,
  after?: LrSchedule,
): number {
  const { warmupSteps, startFactor } = resolve('linearWarmupLr', options);
  checkStep('linearWarmupLr', step);
  if (after !== undefined && typeof after !== 'function') {
    throw invalidArgument('linearWarmupLr', 'after', 'a function of the step', after);
  }
  if (step < warmupSteps) return warmed(targetLr, step, warmupSteps, startFactor);
  return after === undefined ? targetLr : after(step - warmupSteps);
}

/**
 * Warms every group's learning rate up linearly over `warmupSteps`, then hands over to the
 * scheduler `after` (any step-based scheduler, or a ReduceLROnPlateau fed through `step(metric)`):
 *
 *     step < warmupSteps:  lr = target · (startFactor + (1 − startFactor) · step / warmupSteps)
 *     otherwise:           lr = after.lrAt(step − warmupSteps)   (target without `after`)
 *
 * The target of each group is its learning rate when the warmup is built, which is the rate
 * `after` starts from: build `after` first, then the warmup around it, and step only the warmup.
 *
 * @param optimizer the optimizer whose groups to schedule
 * @param options {@link LinearWarmupSchedulerOptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, a warmupSteps that is not an
 *   integer >= 1, a startFactor outside [0, 1], an `after` on another optimizer, or an unknown option
 * @example
 * ```ts
 * const cosine = new CosineAnnealingLR(optimizer, { tMax: 9000 });
 * const scheduler = new LinearWarmup(optimizer, { warmupSteps: 1000, startFactor: 0.01, after: cosine });
 * // per batch: optimizer.step(); scheduler.step();
 * ```
 * PyTorch equivalent: `SequentialLR(optimizer, [LinearLR(optimizer, start_factor, end_factor=1,
 * total_iters=warmupSteps), after], milestones=[warmupSteps])` (the same rates when `after` is
 * step-based; SequentialLR cannot hand over to ReduceLROnPlateau).
 */
export class LinearWarmup extends LRScheduler {
  /** Steps of the warmup. */
  readonly warmupSteps: number;
  /** The fraction of the rate at step 0. */
  readonly startFactor: number;
  /** The scheduler that takes over after the warmup, if any. */
  readonly after: LRScheduler | ReduceLROnPlateau | undefined;

  constructor(optimizer: Optimizer, options: LinearWarmupSchedulerOptions) {
    const resolved = resolve('LinearWarmup', options, ['after']);
    super(optimizer, 'LinearWarmup');
    const after = options.after;
    if (after !== undefined) {
      if (!(after instanceof LRScheduler) && !(after instanceof ReduceLROnPlateau)) {
        throw invalidArgument(
          'LinearWarmup',
          'options.after',
          'a scheduler (StepLR, ..., ReduceLROnPlateau)',
          after,
        );
      }
      if (after.optimizer !== optimizer) {
        throw new FlodlError('ERR_INVALID_ARGUMENT', 'options.after schedules another optimizer', {
          op: 'LinearWarmup',
          expected: 'a scheduler built on the optimizer given to LinearWarmup',
          got: `a ${after.constructor.name} on another optimizer`,
        });
      }
    }
    this.warmupSteps = resolved.warmupSteps;
    this.startFactor = resolved.startFactor;
    this.after = after;
    this.initialStep();
  }

  /**
   * Each group's learning rate at `step`.
   * @throws FlodlError ERR_INVALID_ARGUMENT past the warmup when a ReduceLROnPlateau follows
   *   (its rates depend on metrics, not on the step)
   */
  lrAt(step: number): number[] {
    checkStep('LinearWarmup.lrAt', step);
    if (step < this.warmupSteps) {
      return this.baseLrs.map((targetLr) => warmed(targetLr, step, this.warmupSteps, this.startFactor));
    }
    if (this.after instanceof LRScheduler) return this.after.lrAt(step - this.warmupSteps);
    if (this.after instanceof ReduceLROnPlateau) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'the rates after the warmup depend on the fed metrics', {
        op: 'LinearWarmup.lrAt',
        expected: `a step < warmupSteps (${this.warmupSteps}) when ReduceLROnPlateau follows`,
        got: `step ${step}`,
      });
    }
    return [...this.baseLrs];
  }

  /**
   * Advances one step: warms up, then steps the scheduler that follows (feeding it `metric`
   * when it is a ReduceLROnPlateau; the metric is ignored during the warmup).
   * @throws FlodlError ERR_INVALID_ARGUMENT when a ReduceLROnPlateau follows, the warmup is
   *   over, and no metric is given
   */
  override step(metric?: number | Tensor): void {
    const step = this.lastEpoch + 1;
    const after = this.after;
    if (step < this.warmupSteps || after === undefined) {
      super.step();
      return;
    }
    if (after instanceof ReduceLROnPlateau) {
      if (metric === undefined) {
        throw invalidArgument(
          'LinearWarmup.step',
          'metric',
          'the metric that ReduceLROnPlateau needs',
          metric,
        );
      }
      if (step === this.warmupSteps) {
        this.optimizer.paramGroups.forEach((group, g) => {
          group.lr = this.baseLrs[g]!;
        });
      }
      after.step(metric);
      this.lastLr = after.getLastLr();
    } else {
      after.lastEpoch = step - this.warmupSteps - 1;
      after.step();
      this.lastLr = after.getLastLr();
    }
    this.lastEpoch = step;
  }

  override stateDict(): LinearWarmupState {
    return { ...super.stateDict(), after: this.after?.stateDict() ?? null };
  }

  /** @throws FlodlError ERR_CHECKPOINT when the state does not fit this warmup and its `after` */
  override loadStateDict(state: LinearWarmupState): void {
    if (
      typeof state !== 'object' ||
      state === null ||
      (state.after === null) !== (this.after === undefined)
    ) {
      throw new FlodlError('ERR_CHECKPOINT', 'not a LinearWarmup state for this scheduler', {
        op: 'LinearWarmup.loadStateDict',
        expected:
          this.after === undefined ? 'after: null' : `after: the state of a ${this.after.constructor.name}`,
        got: describeValue(state),
      });
    }
    super.loadStateDict(state);
    if (this.after !== undefined && state.after !== null) {
      // Each scheduler checks its own state.
      (this.after.loadStateDict as (inner: unknown) => void).call(this.after, state.after);
    }
  }
}
