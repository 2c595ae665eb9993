import { invalidArgument } from '@flodl/tensor-native';
import type { Optimizer } from '../optim/optimizer.js';
import { LRScheduler } from './lr-scheduler.js';
import { checkInteger, checkNumberInRange, checkSchedulerOptions, checkStep } from './validate.js';

/** Options of {@link MultiStepLR} and {@link multiStepLr}. */
export interface MultiStepLROptions {
  /** The steps at which to decay; a step listed twice decays twice. */
  milestones: readonly number[];
  /** Multiplicative decay γ. Default 0.1. */
  gamma?: number;
}

function resolve(op: string, options: MultiStepLROptions): { milestones: number[]; gamma: number } {
  checkSchedulerOptions(op, options, ['milestones', 'gamma']);
  if (!Array.isArray(options.milestones)) {
    throw invalidArgument(op, 'options.milestones', 'an array of integers >= 0', options.milestones);
  }
  const milestones = options.milestones.map((milestone, k) =>
    checkInteger(op, `options.milestones[${k}]`, milestone, 0),
  );
  return {
    milestones: milestones.sort((a, b) => a - b),
    gamma: checkNumberInRange(op, 'options.gamma', options.gamma ?? 0.1, 0),
  };
}

/** How many of the sorted `milestones` are <= `step` (Python's `bisect_right`). */
function passed(milestones: readonly number[], step: number): number {
  let count = 0;
  while (count < milestones.length && milestones[count]! <= step) count++;
  return count;
}

/**
 * The multi-step learning rate at `step`: `baseLr · γ^(number of milestones <= step)`.
 *
 * @param baseLr the learning rate at step 0
 * @param step the number of scheduler steps taken (an integer >= 0)
 * @param options {@link MultiStepLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for milestones that are not integers >= 0, a
 *   negative gamma, a negative or fractional step, or an unknown option
 * @example multiStepLr(0.1, 350, { milestones: [100, 300], gamma: 0.1 }) // ≈ 0.001
 * PyTorch equivalent: `MultiStepLR._get_closed_form_lr`.
 */
export function multiStepLr(baseLr: number, step: number, options: MultiStepLROptions): number {
  const { milestones, gamma } = resolve('multiStepLr', options);
  checkStep('multiStepLr', step);
  return baseLr * gamma ** passed(milestones, step);
}

/**
 * Decays every group's learning rate by γ at each milestone:
 * `lr = baseLr · γ^(number of milestones <= step)`.
 *
 * @param optimizer the optimizer whose groups to schedule (their current lr is `baseLr`)
 * @param options {@link MultiStepLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, milestones that are not
 *   integers >= 0, a negative gamma or an unknown option
 * @example
 * ```ts
 * const scheduler = new MultiStepLR(optimizer, { milestones: [30, 80], gamma: 0.1 });
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones, gamma=0.1)`.
 */
export class MultiStepLR extends LRScheduler {
  /** The milestones, sorted. */
  readonly milestones: readonly number[];
  /** Multiplicative decay γ. */
  readonly gamma: number;

  constructor(optimizer: Optimizer, options: MultiStepLROptions) {
    const resolved = resolve('MultiStepLR', options);
    super(optimizer, 'MultiStepLR');
    this.milestones = Object.freeze(resolved.milestones);
    this.gamma = resolved.gamma;
    this.initialStep();
  }

  lrAt(step: number): number[] {
    checkStep('MultiStepLR.lrAt', step);
    const factor = this.gamma ** passed(this.milestones, step);
    return this.baseLrs.map((baseLr) => baseLr * factor);
  }
}
