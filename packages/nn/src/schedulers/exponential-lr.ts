import type { Optimizer } from '../optim/optimizer.js';
import { LRScheduler } from './lr-scheduler.js';
import { checkNumberInRange, checkSchedulerOptions, checkStep } from './validate.js';

/** Options of {@link ExponentialLR} and {@link exponentialLr}. */
export interface ExponentialLROptions {
  /** Multiplicative decay γ per step. */
  gamma: number;
}

function resolve(op: string, options: ExponentialLROptions): Required<ExponentialLROptions> {
  checkSchedulerOptions(op, options, ['gamma']);
  return { gamma: checkNumberInRange(op, 'options.gamma', options.gamma, 0) };
}

/**
 * The exponentially decayed learning rate at `step`: `baseLr · γ^step`.
 *
 * @param baseLr the learning rate at step 0
 * @param step the number of scheduler steps taken (an integer >= 0)
 * @param options {@link ExponentialLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a missing or negative gamma, a negative or
 *   fractional step, or an unknown option
 * @example exponentialLr(0.1, 10, { gamma: 0.9 }) // 0.0348678...
 * PyTorch equivalent: `ExponentialLR._get_closed_form_lr` (within 1e-13 of the values its
 * recursive `step()` produces over 1000 steps).
 */
export function exponentialLr(baseLr: number, step: number, options: ExponentialLROptions): number {
  const { gamma } = resolve('exponentialLr', options);
  checkStep('exponentialLr', step);
  return baseLr * gamma ** step;
}

/**
 * Decays every group's learning rate by γ at every step: `lr = baseLr · γ^step`.
 *
 * @param optimizer the optimizer whose groups to schedule (their current lr is `baseLr`)
 * @param options {@link ExponentialLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, a missing or negative gamma or
 *   an unknown option
 * @example
 * ```ts
 * const scheduler = new ExponentialLR(optimizer, { gamma: 0.95 });
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma)`.
 */
export class ExponentialLR extends LRScheduler {
  /** Multiplicative decay γ per step. */
  readonly gamma: number;

  constructor(optimizer: Optimizer, options: ExponentialLROptions) {
    const resolved = resolve('ExponentialLR', options);
    super(optimizer, 'ExponentialLR');
    this.gamma = resolved.gamma;
    this.initialStep();
  }

  lrAt(step: number): number[] {
    checkStep('ExponentialLR.lrAt', step);
    const factor = this.gamma ** step;
    return this.baseLrs.map((baseLr) => baseLr * factor);
  }
}
