import { invalidArgument } from '@flodl/tensor-native';
import type { Optimizer } from '../optim/optimizer.js';
import { LRScheduler } from './lr-scheduler.js';
import { checkInteger, checkNumberInRange, checkSchedulerOptions, checkStep } from './validate.js';

/** Options of {@link LinearLR} and {@link linearLr}. */
export interface LinearLROptions {
  /** The factor of the starting rate at step 0, in (0, 1]. Default 1/3. */
  startFactor?: number;
  /** The factor reached at `totalIters` and kept after it, in [0, 1]. Default 1. */
  endFactor?: number;
  /** Steps over which the factor moves from `startFactor` to `endFactor`. Default 5. */
  totalIters?: number;
}

function resolve(op: string, options: LinearLROptions): Required<LinearLROptions> {
  checkSchedulerOptions(op, options, ['startFactor', 'endFactor', 'totalIters']);
  const startFactor = options.startFactor ?? 1 / 3;
  // Above 0: PyTorch's recursive form divides by it.
  if (typeof startFactor !== 'number' || !(startFactor > 0 && startFactor <= 1)) {
    throw invalidArgument(op, 'options.startFactor', 'a number in (0, 1]', startFactor);
  }
  return {
    startFactor,
    endFactor: checkNumberInRange(op, 'options.endFactor', options.endFactor ?? 1, 0, 1),
    totalIters: checkInteger(op, 'options.totalIters', options.totalIters ?? 5, 1),
  };
}

function factorAt(step: number, { startFactor, endFactor, totalIters }: Required<LinearLROptions>): number {
  return startFactor + ((endFactor - startFactor) * Math.min(totalIters, step)) / totalIters;
}

/**
 * The linearly scaled learning rate at `step`:
 * `baseLr · (startFactor + (endFactor − startFactor) · min(step, totalIters) / totalIters)`.
 *
 * @param baseLr the learning rate the factors scale
 * @param step the number of scheduler steps taken (an integer >= 0)
 * @param options {@link LinearLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a startFactor outside (0, 1], an endFactor
 *   outside [0, 1], a totalIters that is not an integer >= 1, a negative or fractional step,
 *   or an unknown option
 * @example linearLr(0.1, 2, { startFactor: 0.5, totalIters: 4 }) // 0.075
 * PyTorch equivalent: `LinearLR._get_closed_form_lr` (within 1e-15 of its recursive `step()`).
 */
export function linearLr(baseLr: number, step: number, options: LinearLROptions = {}): number {
  const resolved = resolve('linearLr', options);
  checkStep('linearLr', step);
  return baseLr * factorAt(step, resolved);
}

/**
 * Scales every group's starting learning rate by a factor that moves linearly from
 * `startFactor` to `endFactor` over `totalIters` steps, then stays there (a warmup with the
 * defaults, a linear decay with `startFactor: 1, endFactor: 0.01`):
 *
 *     lr = baseLr · (startFactor + (endFactor − startFactor) · min(step, totalIters) / totalIters)
 *
 * @param optimizer the optimizer whose groups to schedule (their current lr is `baseLr`)
 * @param options {@link LinearLROptions}; PyTorch's defaults (1/3, 1, 5) when left out
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, a startFactor outside (0, 1],
 *   an endFactor outside [0, 1], a totalIters that is not an integer >= 1, or an unknown option
 * @example
 * ```ts
 * const scheduler = new LinearLR(optimizer, { startFactor: 0.1, totalIters: 500 });
 * // per batch: optimizer.step(); scheduler.step();
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=1/3,
 * end_factor=1.0, total_iters=5)`.
 */
export class LinearLR extends LRScheduler {
  /** The factor at step 0. */
  readonly startFactor: number;
  /** The factor from `totalIters` on. */
  readonly endFactor: number;
  /** Steps of the linear part. */
  readonly totalIters: number;

  constructor(optimizer: Optimizer, options: LinearLROptions = {}) {
    const resolved = resolve('LinearLR', options);
    super(optimizer, 'LinearLR');
    this.startFactor = resolved.startFactor;
    this.endFactor = resolved.endFactor;
    this.totalIters = resolved.totalIters;
    this.initialStep();
  }

  lrAt(step: number): number[] {
    checkStep('LinearLR.lrAt', step);
    const factor = factorAt(step, this);
    return this.baseLrs.map((baseLr) => baseLr * factor);
  }
}
