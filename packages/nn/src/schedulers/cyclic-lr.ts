import { invalidArgument } from '@flodl/tensor-native';
import type { Optimizer } from '../optim/optimizer.js';
import { cyclicMomentumBounds, LRScheduler, type MomentumBounds } from './lr-scheduler.js';
import {
  checkNumberInRange,
  checkOneOf,
  checkSchedulerOptions,
  checkStep,
  nonNegativePerGroup,
} from './validate.js';

/** Options of {@link CyclicLR}; the pure {@link cyclicLr} takes single numbers. */
export interface CyclicLROptions {
  /** The lower bound of the cycle: one number, or one per parameter group. */
  baseLr: number | readonly number[];
  /** The upper bound of the cycle: one number, or one per parameter group. */
  maxLr: number | readonly number[];
  /** Steps of the rising half of a cycle. Default 2000. */
  stepSizeUp?: number;
  /** Steps of the falling half. Default stepSizeUp. */
  stepSizeDown?: number;
  /** `'triangular'` (default), `'triangular2'` (amplitude halves each cycle) or `'exp_range'` (scaled by γ^step). */
  mode?: 'triangular' | 'triangular2' | 'exp_range';
  /** The decay of `'exp_range'`. Default 1. */
  gamma?: number;
  /** A custom amplitude scale (replaces `mode`), given the cycle number or the step per `scaleMode`. */
  scaleFn?: (x: number) => number;
  /** What `scaleFn` receives: `'cycle'` (default) or `'iterations'`. */
  scaleMode?: 'cycle' | 'iterations';
  /** Cycle momentum (or Adam's beta1) inversely to the rate. Default true. */
  cycleMomentum?: boolean;
  /** The lowest momentum, at the peak rate. Default 0.8. */
  baseMomentum?: number | readonly number[];
  /** The highest momentum, at the base rate. Default 0.9. */
  maxMomentum?: number | readonly number[];
}

const KEYS = [
  'baseLr',
  'maxLr',
  'stepSizeUp',
  'stepSizeDown',
  'mode',
  'gamma',
  'scaleFn',
  'scaleMode',
  'cycleMomentum',
  'baseMomentum',
  'maxMomentum',
];

interface Wave {
  totalSize: number;
  stepRatio: number;
  scale: (x: number) => number;
  scaleMode: 'cycle' | 'iterations';
}

function resolveWave(op: string, options: CyclicLROptions): Wave {
  checkSchedulerOptions(op, options, KEYS);
  const positive = (name: string, value: unknown) =>
    checkNumberInRange(op, `options.${name}`, value, Number.MIN_VALUE);
  const stepSizeUp = positive('stepSizeUp', options.stepSizeUp ?? 2000);
  const stepSizeDown = positive('stepSizeDown', options.stepSizeDown ?? stepSizeUp);
  const totalSize = stepSizeUp + stepSizeDown;
  const gamma = checkNumberInRange(op, 'options.gamma', options.gamma ?? 1, 0);
  if (options.scaleFn !== undefined) {
    if (typeof options.scaleFn !== 'function') {
      throw invalidArgument(op, 'options.scaleFn', 'a function of the cycle or step', options.scaleFn);
    }
    const scaleMode = checkOneOf(op, 'options.scaleMode', options.scaleMode ?? 'cycle', [
      'cycle',
      'iterations',
    ]);
    return { totalSize, stepRatio: stepSizeUp / totalSize, scale: options.scaleFn, scaleMode };
  }
  const mode = checkOneOf(op, 'options.mode', options.mode ?? 'triangular', [
    'triangular',
    'triangular2',
    'exp_range',
  ]);
  const scale =
    mode === 'triangular'
      ? () => 1
      : mode === 'triangular2'
        ? (cycle: number) => 1 / 2 ** (cycle - 1)
        : (step: number) => gamma ** step;
  return {
    totalSize,
    stepRatio: stepSizeUp / totalSize,
    scale,
    scaleMode: mode === 'exp_range' ? 'iterations' : 'cycle',
  };
}

/** Where `step` lies in its cycle: the cycle number, the triangle's height in [0, 1], the amplitude scale. */
function position(wave: Wave, step: number): { scaleFactor: number; amplitude: number } {
  const cycle = Math.floor(1 + step / wave.totalSize);
  const x = 1 + step / wave.totalSize - cycle;
  const scaleFactor = x <= wave.stepRatio ? x / wave.stepRatio : (x - 1) / (wave.stepRatio - 1);
  return { scaleFactor, amplitude: wave.scale(wave.scaleMode === 'cycle' ? cycle : step) };
}

function singleNumber(op: string, name: string, value: unknown): number {
  return checkNumberInRange(op, `options.${name}`, value, 0);
}

/**
 * The cyclical learning rate at `step`: a triangle wave between baseLr and maxLr (rising for
 * stepSizeUp steps, falling for stepSizeDown), its amplitude scaled per `mode`:
 * `lr = baseLr + (maxLr − baseLr) · triangle(step) · scale`.
 *
 * @param step the number of scheduler steps taken (an integer >= 0)
 * @param options {@link CyclicLROptions} with single numbers for baseLr and maxLr
 * @throws FlodlError ERR_INVALID_ARGUMENT for invalid options or a negative or fractional step
 * @example cyclicLr(50, { baseLr: 0.001, maxLr: 0.1, stepSizeUp: 50 }) // 0.1
 * PyTorch equivalent: `CyclicLR.get_lr` (the same formula, operation for operation).
 */
export function cyclicLr(step: number, options: CyclicLROptions): number {
  const wave = resolveWave('cyclicLr', options);
  const baseLr = singleNumber('cyclicLr', 'baseLr', options.baseLr);
  const maxLr = singleNumber('cyclicLr', 'maxLr', options.maxLr);
  const { scaleFactor, amplitude } = position(wave, checkStep('cyclicLr', step));
  return baseLr + (maxLr - baseLr) * scaleFactor * amplitude;
}

/**
 * The cyclical momentum at `step`: maxMomentum at the base rate, baseMomentum at the peak.
 * @throws FlodlError ERR_INVALID_ARGUMENT as {@link cyclicLr}
 * @example cyclicMomentum(0, { baseLr: 0.001, maxLr: 0.1 }) // 0.9
 */
export function cyclicMomentum(step: number, options: CyclicLROptions): number {
  const wave = resolveWave('cyclicMomentum', options);
  const base = singleNumber('cyclicMomentum', 'baseMomentum', options.baseMomentum ?? 0.8);
  const max = singleNumber('cyclicMomentum', 'maxMomentum', options.maxMomentum ?? 0.9);
  const { scaleFactor, amplitude } = position(wave, checkStep('cyclicMomentum', step));
  return max - (max - base) * scaleFactor * amplitude;
}

/**
 * Cyclical learning rates (Smith, 2017): each group's rate runs a triangle wave between its
 * baseLr and maxLr, and its momentum (or beta1) the opposite wave between maxMomentum and
 * baseMomentum. Step it once per batch. The groups' own learning rates are replaced.
 *
 * @param optimizer the optimizer whose groups to schedule
 * @param options {@link CyclicLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, a non-positive step size, an
 *   unknown mode, a per-group array of the wrong length, momentum cycling on an optimizer
 *   without momentum or betas, or an unknown option
 * @example
 * ```ts
 * const scheduler = new CyclicLR(optimizer, { baseLr: 1e-3, maxLr: 0.1, stepSizeUp: 500, mode: 'triangular2' });
 * // per batch: optimizer.step(); scheduler.step();
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.CyclicLR(optimizer, base_lr, max_lr,
 * step_size_up=2000, step_size_down=None, mode='triangular', gamma=1.0, scale_fn=None,
 * scale_mode='cycle', cycle_momentum=True, base_momentum=0.8, max_momentum=0.9)`; like
 * PyTorch 2, it also cycles the Adam family's beta1 (PyTorch 1.13 refuses such optimizers).
 */
export class CyclicLR extends LRScheduler {
  /** Each group's upper bound. */
  readonly maxLrs: readonly number[];
  private readonly wave: Wave;
  private readonly momenta: MomentumBounds | null;

  constructor(optimizer: Optimizer, options: CyclicLROptions) {
    const op = 'CyclicLR';
    const wave = resolveWave(op, options);
    const groups = optimizer?.paramGroups?.length ?? 0;
    super(optimizer, op, nonNegativePerGroup(op, 'options.baseLr', options.baseLr, groups));
    this.wave = wave;
    this.maxLrs = Object.freeze(nonNegativePerGroup(op, 'options.maxLr', options.maxLr, groups));
    this.momenta = cyclicMomentumBounds(op, optimizer, options, { base: 0.8, max: 0.9 });
    this.initialStep();
  }

  lrAt(step: number): number[] {
    const { scaleFactor, amplitude } = position(this.wave, checkStep('CyclicLR.lrAt', step));
    return this.baseLrs.map((baseLr, g) => baseLr + (this.maxLrs[g]! - baseLr) * scaleFactor * amplitude);
  }

  /** Each group's momentum (or beta1) at `step`, or null without momentum cycling. */
  override momentumAt(step: number): number[] | null {
    if (this.momenta === null) return null;
    const { base, max } = this.momenta;
    const { scaleFactor, amplitude } = position(this.wave, checkStep('CyclicLR.momentumAt', step));
    return max.map((maxMomentum, g) => maxMomentum - (maxMomentum - base[g]!) * scaleFactor * amplitude);
  }
}
