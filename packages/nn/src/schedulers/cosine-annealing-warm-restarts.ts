import { describeValue, FlodlError, invalidArgument } from '@flodl/tensor-native';
import type { Optimizer } from '../optim/optimizer.js';
import { LRScheduler, type LRSchedulerState } from './lr-scheduler.js';
import { checkInteger, checkNumberInRange, checkSchedulerOptions } from './validate.js';

/** Options of {@link CosineAnnealingWarmRestarts} and {@link cosineAnnealingWarmRestartsLr}. */
export interface CosineAnnealingWarmRestartsOptions {
  /** Steps (epochs) until the first restart. */
  t0: number;
  /** Each period is `tMult` times the one before. Default 1. */
  tMult?: number;
  /** The lowest learning rate. Default 0. */
  etaMin?: number;
}

/** What {@link CosineAnnealingWarmRestarts} saves: the step-based state and where in its period it is. */
export interface CosineAnnealingWarmRestartsState extends LRSchedulerState {
  /** Epochs since the last restart (fractional after a fractional `step(epoch)`). PyTorch: `T_cur`. */
  tCur: number;
  /** The current period. PyTorch: `T_i`. */
  tI: number;
}

/** Where an epoch falls: epochs since the last restart and the length of the current period. */
interface Position {
  tCur: number;
  tI: number;
}

function resolve(
  op: string,
  options: CosineAnnealingWarmRestartsOptions,
): Required<CosineAnnealingWarmRestartsOptions> {
  checkSchedulerOptions(op, options, ['t0', 'tMult', 'etaMin']);
  return {
    t0: checkInteger(op, 'options.t0', options.t0, 1),
    tMult: checkInteger(op, 'options.tMult', options.tMult ?? 1, 1),
    etaMin: checkNumberInRange(op, 'options.etaMin', options.etaMin ?? 0, 0),
  };
}

function checkEpoch(op: string, epoch: unknown): number {
  if (typeof epoch !== 'number' || !Number.isFinite(epoch) || epoch < 0) {
    throw invalidArgument(op, 'epoch', 'a finite number >= 0 (fractions allowed)', epoch);
  }
  return epoch;
}

/** The position of `epoch` (PyTorch's `step(epoch)`), with the period found exactly, not by a logarithm. */
function locate(epoch: number, { t0, tMult }: Required<CosineAnnealingWarmRestartsOptions>): Position {
  if (epoch < t0) return { tCur: epoch, tI: t0 };
  if (tMult === 1) return { tCur: epoch % t0, tI: t0 };
  // The n-th period starts at t0·(tMult^n − 1)/(tMult − 1); PyTorch takes n from a float
  // logarithm, which lands one period short at some restarts (log(243, 3) < 5).
  const start = (n: number) => (t0 * (tMult ** n - 1)) / (tMult - 1);
  let n = 0;
  while (start(n + 1) <= epoch) n++;
  return { tCur: epoch - start(n), tI: t0 * tMult ** n };
}

function annealed(baseLr: number, { tCur, tI }: Position, etaMin: number): number {
  return etaMin + ((baseLr - etaMin) * (1 + Math.cos((Math.PI * tCur) / tI))) / 2;
}

/**
 * The learning rate at `epoch` of a cosine annealing restarted every period (SGDR):
 * `etaMin + (baseLr − etaMin)·(1 + cos(π·tCur/tI))/2`, where `tCur` is the time since the last
 * restart and `tI` the current period (`t0`, then `t0·tMult`, `t0·tMult²`, …).
 *
 * @param baseLr the learning rate at each restart
 * @param epoch the epoch, fractions allowed (`epoch + batch / batches`), >= 0
 * @param options {@link CosineAnnealingWarmRestartsOptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a t0 or tMult that is not an integer >= 1, a
 *   negative etaMin, a negative or non-finite epoch, or an unknown option
 * @example cosineAnnealingWarmRestartsLr(0.1, 15, { t0: 10 }) // 0.05 (half way through the second period)
 * PyTorch equivalent: `CosineAnnealingWarmRestarts.step(epoch)` then `get_last_lr()`.
 */
export function cosineAnnealingWarmRestartsLr(
  baseLr: number,
  epoch: number,
  options: CosineAnnealingWarmRestartsOptions,
): number {
  const resolved = resolve('cosineAnnealingWarmRestartsLr', options);
  checkEpoch('cosineAnnealingWarmRestartsLr', epoch);
  return annealed(baseLr, locate(epoch, resolved), resolved.etaMin);
}

/**
 * Anneals every group's learning rate along a half cosine from its starting value to `etaMin`,
 * then restarts at the starting value, the period growing by `tMult` at each restart (SGDR,
 * Loshchilov & Hutter):
 *
 *     lr = etaMin + (baseLr − etaMin)·(1 + cos(π·tCur/tI))/2
 *
 * `step()` advances one epoch; `step(epoch)` jumps to `epoch`, which may be fractional, for
 * updates within an epoch (`scheduler.step(epoch + batch / batches)`); a plain `step()` after it
 * goes on from there, as in PyTorch. `lrAt(epoch)` is what `step(epoch)` would set.
 *
 * @param optimizer the optimizer whose groups to schedule (their current lr is `baseLr`)
 * @param options {@link CosineAnnealingWarmRestartsOptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, a t0 or tMult that is not an
 *   integer >= 1, a negative etaMin or an unknown option
 * @example
 * ```ts
 * const scheduler = new CosineAnnealingWarmRestarts(optimizer, { t0: 10, tMult: 2 });
 * for (let epoch = 0; epoch < 70; epoch++) {
 *   for (let batch = 0; batch < batches; batch++) {
 *     train(batch); // optimizer.step() inside
 *     scheduler.step(epoch + batch / batches);
 *   }
 * }
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0,
 * T_mult=1, eta_min=0)`; the period of an epoch is found exactly where PyTorch's logarithm
 * can land one period short (tMult > 1, at a few restarts).
 */
export class CosineAnnealingWarmRestarts extends LRScheduler {
  /** Epochs until the first restart. */
  readonly t0: number;
  /** The growth of the period at each restart. */
  readonly tMult: number;
  /** The lowest learning rate. */
  readonly etaMin: number;
  /** Epochs since the last restart. PyTorch: `T_cur`. */
  tCur = 0;
  /** The current period. PyTorch: `T_i`. */
  tI: number;

  constructor(optimizer: Optimizer, options: CosineAnnealingWarmRestartsOptions) {
    const resolved = resolve('CosineAnnealingWarmRestarts', options);
    super(optimizer, 'CosineAnnealingWarmRestarts');
    this.t0 = resolved.t0;
    this.tMult = resolved.tMult;
    this.etaMin = resolved.etaMin;
    this.tI = resolved.t0;
    this.initialStep();
  }

  /** Each group's learning rate at `epoch` (fractions allowed), as `step(epoch)` would set it. */
  lrAt(epoch: number): number[] {
    checkEpoch('CosineAnnealingWarmRestarts.lrAt', epoch);
    const position = locate(epoch, this);
    return this.baseLrs.map((baseLr) => annealed(baseLr, position, this.etaMin));
  }

  /**
   * Advances one epoch, or jumps to `epoch` (fractions allowed), and sets every group's rate.
   * PyTorch: `scheduler.step()` / `scheduler.step(epoch)`.
   * @throws FlodlError ERR_INVALID_ARGUMENT for a negative or non-finite epoch
   */
  override step(epoch?: number): void {
    let position: Position;
    let lastEpoch: number;
    if (epoch === undefined && this.lastEpoch >= 0) {
      // PyTorch's recursive form: one epoch on from wherever the last step left it.
      position = { tCur: this.tCur + 1, tI: this.tI };
      if (position.tCur >= position.tI)
        position = { tCur: position.tCur - position.tI, tI: position.tI * this.tMult };
      lastEpoch = this.lastEpoch + 1;
    } else {
      const target = epoch === undefined ? 0 : checkEpoch('CosineAnnealingWarmRestarts.step', epoch);
      position = locate(target, this);
      lastEpoch = Math.floor(target);
    }
    const lrs = this.baseLrs.map((baseLr) => annealed(baseLr, position, this.etaMin));
    this.optimizer.paramGroups.forEach((group, g) => {
      group.lr = lrs[g]!;
    });
    this.lastLr = lrs;
    this.tCur = position.tCur;
    this.tI = position.tI;
    this.lastEpoch = lastEpoch;
  }

  override stateDict(): CosineAnnealingWarmRestartsState {
    return { ...super.stateDict(), tCur: this.tCur, tI: this.tI };
  }

  /** @throws FlodlError ERR_CHECKPOINT when the state does not fit this scheduler */
  override loadStateDict(state: CosineAnnealingWarmRestartsState): void {
    const valid =
      typeof state === 'object' &&
      state !== null &&
      typeof state.tCur === 'number' &&
      Number.isFinite(state.tCur) &&
      state.tCur >= 0 &&
      Number.isSafeInteger(state.tI) &&
      state.tI >= 1;
    if (!valid) {
      throw new FlodlError('ERR_CHECKPOINT', 'not a CosineAnnealingWarmRestarts state', {
        op: 'CosineAnnealingWarmRestarts.loadStateDict',
        expected: '{ lastEpoch, baseLrs, lastLr, tCur: a number >= 0, tI: an integer >= 1 }',
        got: describeValue(state),
      });
    }
    super.loadStateDict(state);
    this.tCur = state.tCur;
    this.tI = state.tI;
  }
}
