import type { Optimizer } from '../optim/optimizer.js';
import { LRScheduler } from './lr-scheduler.js';
import { checkInteger, checkNumberInRange, checkSchedulerOptions, checkStep } from './validate.js';

/** Options of {@link StepLR} and {@link stepLr}. */
export interface StepLROptions {
  /** Steps between two decays. */
  stepSize: number;
  /** Multiplicative decay γ. Default 0.1. */
  gamma?: number;
}

function resolve(op: string, options: StepLROptions): Required<StepLROptions> {
  checkSchedulerOptions(op, options, ['stepSize', 'gamma']);
  return {
    stepSize: checkInteger(op, 'options.stepSize', options.stepSize, 1),
    gamma: checkNumberInRange(op, 'options.gamma', options.gamma ?? 0.1, 0),
  };
}

/**
 * The step-decay learning rate at `step`: `baseLr · γ^⌊step / stepSize⌋`.
 *
 * @param baseLr the learning rate at step 0
 * @param step the number of scheduler steps taken (an integer >= 0)
 * @param options {@link StepLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a stepSize that is not an integer >= 1, a
 *   negative gamma, a negative or fractional step, or an unknown option
 * @example stepLr(0.1, 65, { stepSize: 30, gamma: 0.1 }) // ≈ 0.001
 * PyTorch equivalent: `StepLR._get_closed_form_lr`.
 */
export function stepLr(baseLr: number, step: number, options: StepLROptions): number {
  const { stepSize, gamma } = resolve('stepLr', options);
  checkStep('stepLr', step);
  return baseLr * gamma ** Math.floor(step / stepSize);
}

/**
 * Decays every group's learning rate by γ every `stepSize` steps:
 * `lr = baseLr · γ^⌊step / stepSize⌋`.
 *
 * @param optimizer the optimizer whose groups to schedule (their current lr is `baseLr`)
 * @param options {@link StepLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, a stepSize that is not an
 *   integer >= 1, a negative gamma or an unknown option
 * @example
 * ```ts
 * const scheduler = new StepLR(optimizer, { stepSize: 30, gamma: 0.1 });
 * for (let epoch = 0; epoch < 100; epoch++) {
 *   train(); // optimizer.step() per batch
 *   scheduler.step();
 * }
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.StepLR(optimizer, step_size, gamma=0.1)`.
 */
export class StepLR extends LRScheduler {
  /** Steps between two decays. */
  readonly stepSize: number;
  /** Multiplicative decay γ. */
  readonly gamma: number;

  constructor(optimizer: Optimizer, options: StepLROptions) {
    const resolved = resolve('StepLR', options);
    super(optimizer, 'StepLR');
    this.stepSize = resolved.stepSize;
    this.gamma = resolved.gamma;
    this.initialStep();
  }

  lrAt(step: number): number[] {
    checkStep('StepLR.lrAt', step);
    const factor = this.gamma ** Math.floor(step / this.stepSize);
    return this.baseLrs.map((baseLr) => baseLr * factor);
  }
}
