import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import type { Optimizer } from '../optim/optimizer.js';
import { cyclicMomentumBounds, LRScheduler, type MomentumBounds } from './lr-scheduler.js';
import {
  checkInteger,
  checkNumberInRange,
  checkOneOf,
  checkSchedulerOptions,
  checkStep,
  nonNegativePerGroup,
} from './validate.js';

/** Options of {@link OneCycleLR}; the pure {@link oneCycleLr} takes single numbers. */
export interface OneCycleLROptions {
  /** The peak learning rate: one number, or one per parameter group. */
  maxLr: number | readonly number[];
  /** The length of the cycle in steps (or give `epochs` and `stepsPerEpoch`). */
  totalSteps?: number;
  /** With `stepsPerEpoch`, sets totalSteps = epochs · stepsPerEpoch. */
  epochs?: number;
  /** With `epochs`, sets totalSteps = epochs · stepsPerEpoch. */
  stepsPerEpoch?: number;
  /** Fraction of the cycle spent raising the rate. Default 0.3. */
  pctStart?: number;
  /** `'cos'` (default) or `'linear'` annealing. */
  annealStrategy?: 'cos' | 'linear';
  /** Cycle momentum (or Adam's beta1) inversely to the rate. Default true. */
  cycleMomentum?: boolean;
  /** The lowest momentum, reached at the peak rate. Default 0.85. */
  baseMomentum?: number | readonly number[];
  /** The highest momentum, at the lowest rates. Default 0.95. */
  maxMomentum?: number | readonly number[];
  /** The starting rate is maxLr / divFactor. Default 25. */
  divFactor?: number;
  /** The final rate is maxLr / divFactor / finalDivFactor. Default 1e4. */
  finalDivFactor?: number;
  /** Three phases (up, back down to the start, annihilate) instead of two. Default false. */
  threePhase?: boolean;
}

const KEYS = [
  'maxLr',
  'totalSteps',
  'epochs',
  'stepsPerEpoch',
  'pctStart',
  'annealStrategy',
  'cycleMomentum',
  'baseMomentum',
  'maxMomentum',
  'divFactor',
  'finalDivFactor',
  'threePhase',
];

interface Cycle {
  totalSteps: number;
  pctStart: number;
  annealStrategy: 'cos' | 'linear';
  divFactor: number;
  finalDivFactor: number;
  threePhase: boolean;
}

/** One phase of the cycle: from its start to `endStep`, between two named anchors. */
interface Phase {
  endStep: number;
  lr: [Anchor, Anchor];
  momentum: [MomentumAnchor, MomentumAnchor];
}
type Anchor = 'initial' | 'max' | 'min';
type MomentumAnchor = 'max' | 'base';

function resolveCycle(op: string, options: OneCycleLROptions): Cycle {
  checkSchedulerOptions(op, options, KEYS);
  let totalSteps: number;
  if (options.totalSteps !== undefined) {
    totalSteps = checkInteger(op, 'options.totalSteps', options.totalSteps, 1);
  } else if (options.epochs !== undefined || options.stepsPerEpoch !== undefined) {
    totalSteps =
      checkInteger(op, 'options.epochs', options.epochs, 1) *
      checkInteger(op, 'options.stepsPerEpoch', options.stepsPerEpoch, 1);
  } else {
    throw invalidArgument(op, 'options', 'totalSteps, or epochs and stepsPerEpoch', 'neither');
  }
  const positive = (name: string, value: number) =>
    checkNumberInRange(op, `options.${name}`, value, Number.MIN_VALUE);
  const threePhase = options.threePhase ?? false;
  if (typeof threePhase !== 'boolean')
    throw invalidArgument(op, 'options.threePhase', 'a boolean', threePhase);
  return {
    totalSteps,
    pctStart: checkNumberInRange(op, 'options.pctStart', options.pctStart ?? 0.3, 0, 1),
    annealStrategy: checkOneOf(op, 'options.annealStrategy', options.annealStrategy ?? 'cos', [
      'cos',
      'linear',
    ]),
    divFactor: positive('divFactor', options.divFactor ?? 25),
    finalDivFactor: positive('finalDivFactor', options.finalDivFactor ?? 1e4),
    threePhase,
  };
}

function phasesOf(cycle: Cycle): Phase[] {
  const { totalSteps, pctStart } = cycle;
  const rise: Phase = {
    endStep: pctStart * totalSteps - 1,
    lr: ['initial', 'max'],
    momentum: ['max', 'base'],
  };
  if (!cycle.threePhase) {
    return [rise, { endStep: totalSteps - 1, lr: ['max', 'min'], momentum: ['base', 'max'] }];
  }
  return [
    rise,
    { endStep: 2 * pctStart * totalSteps - 2, lr: ['max', 'initial'], momentum: ['base', 'max'] },
    { endStep: totalSteps - 1, lr: ['initial', 'min'], momentum: ['max', 'max'] },
  ];
}

function anneal(strategy: 'cos' | 'linear', start: number, end: number, fraction: number): number {
  if (strategy === 'linear') return (end - start) * fraction + start;
  const cosine = Math.cos(Math.PI * fraction) + 1;
  return end + ((start - end) / 2) * cosine;
}

/** The phase of `step` and how far into it the step is (PyTorch's loop over `_schedule_phases`). */
function locate(op: string, cycle: Cycle, step: number): { phase: Phase; fraction: number } {
  if (step > cycle.totalSteps) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `tried to step ${step + 1} times`, {
      op,
      expected: `at most totalSteps + 1 = ${cycle.totalSteps + 1} steps (counting the one at construction)`,
      got: `step ${step}`,
    });
  }
  const phases = phasesOf(cycle);
  let startStep = 0;
  for (const [index, phase] of phases.entries()) {
    if (step <= phase.endStep || index === phases.length - 1) {
      return { phase, fraction: (step - startStep) / (phase.endStep - startStep) };
    }
    startStep = phase.endStep;
  }
  throw new Error('unreachable: the last phase always matches');
}

function lrOf(cycle: Cycle, maxLr: number, phase: Phase, fraction: number): number {
  const initial = maxLr / cycle.divFactor;
  const anchors: Record<Anchor, number> = { initial, max: maxLr, min: initial / cycle.finalDivFactor };
  return anneal(cycle.annealStrategy, anchors[phase.lr[0]], anchors[phase.lr[1]], fraction);
}

function momentumOf(cycle: Cycle, base: number, max: number, phase: Phase, fraction: number): number {
  const anchors: Record<MomentumAnchor, number> = { base, max };
  return anneal(cycle.annealStrategy, anchors[phase.momentum[0]], anchors[phase.momentum[1]], fraction);
}

function singleNumber(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number') throw invalidArgument(op, `options.${name}`, 'a number', value);
  return value;
}

/**
 * The 1cycle learning rate at `step`: from maxLr/divFactor up to maxLr over the first
 * `pctStart` of the cycle, then down to maxLr/divFactor/finalDivFactor (cosine or linear).
 *
 * @param step the number of scheduler steps taken (an integer in [0, totalSteps])
 * @param options {@link OneCycleLROptions} with a single `maxLr`
 * @throws FlodlError ERR_INVALID_ARGUMENT for invalid options or a step past totalSteps
 * @example oneCycleLr(0, { maxLr: 0.1, totalSteps: 1000 }) // ≈ 0.004 (maxLr / divFactor)
 * PyTorch equivalent: `OneCycleLR.get_lr` (the same formula, operation for operation).
 */
export function oneCycleLr(step: number, options: OneCycleLROptions): number {
  const cycle = resolveCycle('oneCycleLr', options);
  const maxLr = checkNumberInRange(
    'oneCycleLr',
    'options.maxLr',
    singleNumber('oneCycleLr', 'maxLr', options.maxLr),
    0,
    Infinity,
  );
  const { phase, fraction } = locate('oneCycleLr', cycle, checkStep('oneCycleLr', step));
  return lrOf(cycle, maxLr, phase, fraction);
}

/**
 * The 1cycle momentum at `step`: from maxMomentum down to baseMomentum while the rate rises,
 * then back up. @throws FlodlError ERR_INVALID_ARGUMENT as {@link oneCycleLr}
 * @example oneCycleMomentum(0, { maxLr: 0.1, totalSteps: 1000 }) // 0.95
 */
export function oneCycleMomentum(step: number, options: OneCycleLROptions): number {
  const cycle = resolveCycle('oneCycleMomentum', options);
  const base = singleNumber('oneCycleMomentum', 'baseMomentum', options.baseMomentum ?? 0.85);
  const max = singleNumber('oneCycleMomentum', 'maxMomentum', options.maxMomentum ?? 0.95);
  const { phase, fraction } = locate('oneCycleMomentum', cycle, checkStep('oneCycleMomentum', step));
  return momentumOf(cycle, base, max, phase, fraction);
}

/**
 * The 1cycle policy (Smith & Topin): each group's rate rises from maxLr/divFactor to maxLr
 * over the first `pctStart` of `totalSteps`, then anneals to maxLr/divFactor/finalDivFactor;
 * momentum (or beta1) moves the other way between maxMomentum and baseMomentum. Step it once
 * per batch; stepping past totalSteps throws.
 *
 * @param optimizer the optimizer whose groups to schedule (their own lr is replaced)
 * @param options {@link OneCycleLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, missing totalSteps (and
 *   epochs/stepsPerEpoch), a pctStart outside [0, 1], a per-group array of the wrong length,
 *   momentum cycling on an optimizer without momentum or betas, or an unknown option
 * @example
 * ```ts
 * const scheduler = new OneCycleLR(optimizer, { maxLr: 0.1, totalSteps: epochs * batches });
 * // per batch: optimizer.step(); scheduler.step();
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr, total_steps,
 * epochs, steps_per_epoch, pct_start=0.3, anneal_strategy='cos', cycle_momentum=True,
 * base_momentum=0.85, max_momentum=0.95, div_factor=25, final_div_factor=1e4, three_phase=False)`.
 */
export class OneCycleLR extends LRScheduler {
  /** The cycle's length in steps. */
  readonly totalSteps: number;
  /** Each group's peak learning rate. */
  readonly maxLrs: readonly number[];
  private readonly cycle: Cycle;
  private readonly momenta: MomentumBounds | null;

  constructor(optimizer: Optimizer, options: OneCycleLROptions) {
    const op = 'OneCycleLR';
    const cycle = resolveCycle(op, options);
    const groups = optimizer?.paramGroups?.length ?? 0;
    const maxLrs = nonNegativePerGroup(op, 'options.maxLr', options.maxLr, groups);
    super(
      optimizer,
      op,
      maxLrs.map((maxLr) => maxLr / cycle.divFactor),
    );
    this.cycle = cycle;
    this.totalSteps = cycle.totalSteps;
    this.maxLrs = Object.freeze(maxLrs);
    this.momenta = cyclicMomentumBounds(op, optimizer, options, { base: 0.85, max: 0.95 });
    this.initialStep();
  }

  lrAt(step: number): number[] {
    const { phase, fraction } = locate('OneCycleLR.lrAt', this.cycle, checkStep('OneCycleLR.lrAt', step));
    return this.maxLrs.map((maxLr) => lrOf(this.cycle, maxLr, phase, fraction));
  }

  /** Each group's momentum (or beta1) at `step`, or null without momentum cycling. */
  override momentumAt(step: number): number[] | null {
    if (this.momenta === null) return null;
    const { base, max } = this.momenta;
    const { phase, fraction } = locate(
      'OneCycleLR.momentumAt',
      this.cycle,
      checkStep('OneCycleLR.momentumAt', step),
    );
    return base.map((baseMomentum, g) => momentumOf(this.cycle, baseMomentum, max[g]!, phase, fraction));
  }
}
