import { describeValue, FlodlError, invalidArgument, shareClassIdentity, Tensor } from '@flodl/tensor-native';
import { Optimizer } from '../optim/optimizer.js';
import { checkInteger, checkNumberInRange, checkOneOf, checkSchedulerOptions, perGroup } from './validate.js';

/** Options of {@link ReduceLROnPlateau}. */
export interface ReduceLROnPlateauOptions {
  /** `'min'` (default): the metric should fall (a loss); `'max'`: it should rise (an accuracy). */
  mode?: 'min' | 'max';
  /** Each reduction multiplies the rate by this factor (< 1). Default 0.1. */
  factor?: number;
  /** Steps without improvement tolerated before reducing. Default 10. */
  patience?: number;
  /** How much better than the best a metric must be to count as an improvement. Default 1e-4. */
  threshold?: number;
  /** `'rel'` (default): better by a fraction `threshold` of the best; `'abs'`: by `threshold`. */
  thresholdMode?: 'rel' | 'abs';
  /** Steps to wait after a reduction before counting bad steps again. Default 0. */
  cooldown?: number;
  /** The lowest rate: one number, or one per parameter group. Default 0. */
  minLr?: number | readonly number[];
  /** Reductions smaller than this are skipped. Default 1e-8. */
  eps?: number;
}

/** What {@link ReduceLROnPlateau} saves. */
export interface ReduceLROnPlateauState {
  lastEpoch: number;
  best: number;
  numBadEpochs: number;
  cooldownCounter: number;
  lastLr: number[];
}

const KEYS = ['mode', 'factor', 'patience', 'threshold', 'thresholdMode', 'cooldown', 'minLr', 'eps'];

/**
 * Reduces each group's learning rate by `factor` once the fed metric has not improved for
 * more than `patience` steps (then waits `cooldown` steps), never below `minLr`. Unlike the
 * other schedulers it is driven by a metric, not by the step: call `step(metric)` after each
 * evaluation.
 *
 *     improved = metric < best·(1 − threshold)   (min, rel; max/abs analogous)
 *     after more than `patience` steps without improvement: lr ← max(lr·factor, minLr)
 *
 * @param optimizer the optimizer whose groups to adjust
 * @param options {@link ReduceLROnPlateauOptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, a factor outside [0, 1), an
 *   unknown mode or thresholdMode, negative patience/cooldown/threshold/eps, a minLr array of
 *   the wrong length, or an unknown option
 * @example
 * ```ts
 * const scheduler = new ReduceLROnPlateau(optimizer, { patience: 5, factor: 0.5 });
 * for (let epoch = 0; epoch < 100; epoch++) {
 *   train();
 *   scheduler.step(validationLoss());
 * }
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode='min',
 * factor=0.1, patience=10, threshold=1e-4, threshold_mode='rel', cooldown=0, min_lr=0, eps=1e-8)`.
 */
export class ReduceLROnPlateau {
  /** The optimizer whose groups this scheduler adjusts. */
  readonly optimizer: Optimizer;
  readonly mode: 'min' | 'max';
  readonly factor: number;
  readonly patience: number;
  readonly threshold: number;
  readonly thresholdMode: 'rel' | 'abs';
  readonly cooldown: number;
  readonly minLrs: readonly number[];
  readonly eps: number;
  /** The best metric so far (±Infinity before the first). */
  best: number;
  /** Steps since the last improvement (reset by a reduction and during cooldown). */
  numBadEpochs = 0;
  /** Steps of cooldown left. */
  cooldownCounter = 0;
  /** The number of `step(metric)` calls so far. */
  lastEpoch = 0;
  private lastLr: number[];

  constructor(optimizer: Optimizer, options: ReduceLROnPlateauOptions = {}) {
    const op = 'ReduceLROnPlateau';
    if (!(optimizer instanceof Optimizer)) {
      throw invalidArgument(op, 'optimizer', 'an Optimizer (SGD, Adam, ...)', optimizer);
    }
    checkSchedulerOptions(op, options, KEYS);
    const nonNegative = (name: string, value: unknown) => checkNumberInRange(op, name, value, 0);
    this.optimizer = optimizer;
    this.mode = checkOneOf(op, 'options.mode', options.mode ?? 'min', ['min', 'max']);
    this.factor = checkNumberInRange(op, 'options.factor', options.factor ?? 0.1, 0, 1, {
      maximumExclusive: true,
    });
    this.patience = checkInteger(op, 'options.patience', options.patience ?? 10, 0);
    this.threshold = nonNegative('options.threshold', options.threshold ?? 1e-4);
    this.thresholdMode = checkOneOf(op, 'options.thresholdMode', options.thresholdMode ?? 'rel', [
      'rel',
      'abs',
    ]);
    this.cooldown = checkInteger(op, 'options.cooldown', options.cooldown ?? 0, 0);
    this.minLrs = Object.freeze(
      perGroup(op, 'options.minLr', options.minLr ?? 0, optimizer.paramGroups.length, nonNegative),
    );
    this.eps = nonNegative('options.eps', options.eps ?? 1e-8);
    this.best = this.worst();
    this.lastLr = optimizer.paramGroups.map((group) => group.lr);
  }

  private worst(): number {
    return this.mode === 'min' ? Number.POSITIVE_INFINITY : Number.NEGATIVE_INFINITY;
  }

  /** True when `metric` beats `best` by more than the threshold. */
  isBetter(metric: number, best: number): boolean {
    if (this.mode === 'min') {
      return this.thresholdMode === 'rel'
        ? metric < best * (1 - this.threshold)
        : metric < best - this.threshold;
    }
    return this.thresholdMode === 'rel'
      ? metric > best * (this.threshold + 1)
      : metric > best + this.threshold;
  }

  /** True while waiting after a reduction. */
  get inCooldown(): boolean {
    return this.cooldownCounter > 0;
  }

  /**
   * Records one evaluation and reduces the rates when the metric has stalled.
   * PyTorch: `scheduler.step(metrics)`.
   * @param metric the evaluated metric: a number or a one-element Tensor
   * @throws FlodlError ERR_INVALID_ARGUMENT when the metric is not a number or a one-element tensor
   */
  step(metric: number | Tensor): void {
    const current = metric instanceof Tensor && metric.numel === 1 ? Number(metric.item()) : metric;
    if (typeof current !== 'number') {
      throw invalidArgument('ReduceLROnPlateau.step', 'metric', 'a number or a one-element Tensor', metric);
    }
    this.lastEpoch += 1;
    if (this.isBetter(current, this.best)) {
      this.best = current;
      this.numBadEpochs = 0;
    } else {
      this.numBadEpochs += 1;
    }
    if (this.inCooldown) {
      this.cooldownCounter -= 1;
      this.numBadEpochs = 0; // bad steps during cooldown do not count
    }
    if (this.numBadEpochs > this.patience) {
      this.reduce();
      this.cooldownCounter = this.cooldown;
      this.numBadEpochs = 0;
    }
    this.lastLr = this.optimizer.paramGroups.map((group) => group.lr);
  }

  private reduce(): void {
    this.optimizer.paramGroups.forEach((group, g) => {
      const reduced = Math.max(group.lr * this.factor, this.minLrs[g]!);
      if (group.lr - reduced > this.eps) group.lr = reduced;
    });
  }

  /** Each group's learning rate after the last step. PyTorch: `scheduler.get_last_lr()`. */
  getLastLr(): number[] {
    return [...this.lastLr];
  }

  /** The scheduler's counters, for checkpoints. PyTorch: `scheduler.state_dict()`. */
  stateDict(): ReduceLROnPlateauState {
    return {
      lastEpoch: this.lastEpoch,
      best: this.best,
      numBadEpochs: this.numBadEpochs,
      cooldownCounter: this.cooldownCounter,
      lastLr: [...this.lastLr],
    };
  }

  /**
   * Restores counters saved by `stateDict()`. PyTorch: `scheduler.load_state_dict(state)`.
   * @throws FlodlError ERR_CHECKPOINT when the state is malformed or has another group count
   */
  loadStateDict(state: ReduceLROnPlateauState): void {
    const groups = this.optimizer.paramGroups.length;
    const count = (value: unknown) => Number.isInteger(value) && (value as number) >= 0;
    const valid =
      typeof state === 'object' &&
      state !== null &&
      count(state.lastEpoch) &&
      count(state.numBadEpochs) &&
      count(state.cooldownCounter) &&
      typeof state.best === 'number' &&
      !Number.isNaN(state.best) &&
      Array.isArray(state.lastLr) &&
      state.lastLr.length === groups &&
      state.lastLr.every((lr) => typeof lr === 'number');
    if (!valid) {
      throw new FlodlError('ERR_CHECKPOINT', 'not a ReduceLROnPlateau state for this optimizer', {
        op: 'ReduceLROnPlateau.loadStateDict',
        expected: `{ lastEpoch, best, numBadEpochs, cooldownCounter, lastLr: ${groups} number(s) }`,
        got: describeValue(state),
      });
    }
    this.lastEpoch = state.lastEpoch;
    this.best = state.best;
    this.numBadEpochs = state.numBadEpochs;
    this.cooldownCounter = state.cooldownCounter;
    this.lastLr = [...state.lastLr];
  }
}

shareClassIdentity(ReduceLROnPlateau, 'flodl.nn.ReduceLROnPlateau');
