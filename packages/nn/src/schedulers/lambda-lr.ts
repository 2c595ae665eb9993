import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import type { Optimizer } from '../optim/optimizer.js';
import { LRScheduler } from './lr-scheduler.js';
import { checkSchedulerOptions, checkStep } from './validate.js';

/** A multiplicative factor of the starting learning rate as a function of the step (epoch). */
export type LrLambda = (epoch: number) => number;

/** Options of {@link LambdaLR}. */
export interface LambdaLROptions {
  /** The factor of each group's starting rate at each step: one function for every group, or one per group. */
  lrLambda: LrLambda | readonly LrLambda[];
}

/**
 * Sets every group's learning rate to its starting rate times a function of the step:
 *
 *     lr = baseLr · lrLambda(step)
 *
 * The functions are not saved by `stateDict()` (as in PyTorch, where only callable objects
 * are): a resumed run builds the scheduler with the same functions, then loads its position.
 *
 * @param optimizer the optimizer whose groups to schedule (their current lr is `baseLr`)
 * @param options {@link LambdaLROptions}
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-optimizer, an `lrLambda` that is not a
 *   function or one function per parameter group, a factor that is not a finite number (at the
 *   step that returns it), or an unknown option
 * @example
 * ```ts
 * const scheduler = new LambdaLR(optimizer, { lrLambda: (epoch) => 0.95 ** epoch });
 * // per epoch: optimizer.step(); scheduler.step();
 * ```
 * PyTorch equivalent: `torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)`.
 */
export class LambdaLR extends LRScheduler {
  /** One factor function per parameter group. */
  readonly lrLambdas: readonly LrLambda[];

  constructor(optimizer: Optimizer, options: LambdaLROptions) {
    const op = 'LambdaLR';
    checkSchedulerOptions(op, options, ['lrLambda']);
    super(optimizer, op);
    this.lrLambdas = Object.freeze(resolveLambdas(op, options.lrLambda, optimizer.paramGroups.length));
    this.initialStep();
  }

  lrAt(step: number): number[] {
    checkStep('LambdaLR.lrAt', step);
    return this.baseLrs.map((baseLr, g) => {
      const factor = this.lrLambdas[g]!(step);
      if (typeof factor !== 'number' || !Number.isFinite(factor)) {
        throw new FlodlError(
          'ERR_INVALID_ARGUMENT',
          `lrLambda${this.lrLambdas.length > 1 ? `[${g}]` : ''} returned ${String(factor)} at step ${step}`,
          {
            op: 'LambdaLR.lrAt',
            expected: 'a finite number (the factor of the starting learning rate)',
            got: typeof factor === 'number' ? String(factor) : typeof factor,
          },
        );
      }
      return baseLr * factor;
    });
  }
}

function resolveLambdas(op: string, value: unknown, groups: number): LrLambda[] {
  if (typeof value === 'function') return new Array<LrLambda>(groups).fill(value as LrLambda);
  if (Array.isArray(value) && value.length === groups && value.every((item) => typeof item === 'function')) {
    return [...(value as LrLambda[])];
  }
  throw invalidArgument(
    op,
    'options.lrLambda',
    `a function of the step, or ${groups} functions (one per parameter group)`,
    value,
  );
}
