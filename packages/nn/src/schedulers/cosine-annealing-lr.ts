import type { Optimizer } from '../optim/optimizer.js';
import { LRScheduler } from './lr-scheduler.js';
import { checkInteger, checkNumberInRange, checkSchedulerOptions, checkStep } from './validate.js';

/** Options of {@link CosineAnnealingLR} and {@link cosineAnnealingLr}. */
export interface CosineAnnealingLROptions {
  /** Steps of the half period: the rate reaches `etaMin` at step `tMax`. */
  tMax: number;
  /** The lowest learning rate. Default 0. */
  etaMin?: number;
}

function resolve(op: string, options: CosineAnnealingLROptions): Required<CosineAnnealingLROptions> {
  checkSchedulerOptions(op, options, ['tMax', 'etaMin']);
  return {
    tMax: checkInteger(op, 'options.tMax', options.tMax, 1),
    etaMin: checkNumberInRange(op, 'options.etaMin', options.etaMin ?? 0, 0),
  };
}

function annealed(baseLr: number, step: number, tMax: number, etaMin: number): number {
  if (step === 0) return baseLr;
  if (step <= tMax) return etaMin + ((baseLr - etaMin) * (1 + Math.cos((Math.PI * step) / tMax))) / 2;
  // Past tMax the rate follows the same cosine back up (period 2·tMax). PyTorch's recursive
  // step() enters each rising half at step tMax + 1 + 2·tMax·k through 1 − cos(π/tMax) and then
  // scales by ratios of consecutive 1 + cos terms, which telescope; computing it that way keeps
  // these rates within ~1e-15 of PyTorch's instead of up to ~1e-11 (1 − cos(π/tMax) cancels).
  const risingStart = tMax + 1 + 2 * tMax * Math.floor((step - tMax - 1) / (2 * tMax));
  const firstRise = ((baseLr - etaMin) * (1 - Math.cos(Math.PI / tMax))) / 2;
  const ratio = (1 + Math.cos((Math.PI * step) / tMax)) / (1 + Math.cos((Math.PI * risingStart) / tMax));
  return etaMin + firstRise * ratio;
}

/**
 * The cosine-annealed learning rate at `step`:
 * `etaMin + (baseLr − etaMin)·(1 + cos(π·step/tMax))/2`, continuing as a cosine of period
 * `2·tMax` past `tMax`.
 *
 * @param baseLr the learning rate at step 0
 * @param step the number of scheduler steps taken (an integer >= 0)
 * @param options {@link CosineAnnealingLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a tMax that is not an integer >= 1, a negative
 *   etaMin, a negative or fractional step, or an unknown option
 * @example cosineAnnealingLr(0.1, 50, { tMax: 100 }) // 0.05
 * PyTorch equivalent: `CosineAnnealingLR` (the closed form, evaluated so that it stays within
 * 1e-14 of what its recursive `step()` produces).
 */
export function cosineAnnealingLr(baseLr: number, step: number, options: CosineAnnealingLROptions): number {
  const { tMax, etaMin } = resolve('cosineAnnealingLr', options);
  checkStep('cosineAnnealingLr', step);
  return annealed(baseLr, step, tMax, etaMin);
}

/**
 * Anneals every group's learning rate from its starting value to `etaMin` along a half cosine
 * over `tMax` steps (and back up along the next half, as PyTorch does, if stepped further):
 *
 *     lr = etaMin + (baseLr − etaMin)·(1 + cos(π·step/tMax))/2
 *
 * @param optimizer the optimizer whose groups to schedule (their current lr is `baseLr`)
 * @param options {@link CosineAnnealingLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, a tMax that is not an integer
 *   >= 1, a negative etaMin or an unknown option
 * @example
 * ```ts
 * const scheduler = new CosineAnnealingLR(optimizer, { tMax: totalSteps, etaMin: 1e-5 });
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max, eta_min=0)`.
 */
export class CosineAnnealingLR extends LRScheduler {
  /** Steps of the half period. */
  readonly tMax: number;
  /** The lowest learning rate. */
  readonly etaMin: number;

  constructor(optimizer: Optimizer, options: CosineAnnealingLROptions) {
    const resolved = resolve('CosineAnnealingLR', options);
    super(optimizer, 'CosineAnnealingLR');
    this.tMax = resolved.tMax;
    this.etaMin = resolved.etaMin;
    this.initialStep();
  }

  lrAt(step: number): number[] {
    checkStep('CosineAnnealingLR.lrAt', step);
    return this.baseLrs.map((baseLr) => annealed(baseLr, step, this.tMax, this.etaMin));
  }
}
