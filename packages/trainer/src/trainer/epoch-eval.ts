// The eval a one-device run owes after an epoch (`evalEvery`): the managed loop and the
// cooperative Worker run it alike, with the same results surfaces.

import type { RankRuntime } from '../runtime/rank-runtime.js';
import type { AnyModule } from '../runtime/types.js';
import { warnCallback } from './build-rank.js';
import type { ResolvedTrainerOptions } from './options.js';
import type { RunMonitor } from './run-monitor.js';

/** The options the eval after an epoch reads. */
export type EpochEvalOptions = Pick<ResolvedTrainerOptions, 'evalEvery' | 'evalResultFn'>;

/**
 * Runs the eval due after `done` epochs (1-based) of a one-device run, when `evalEvery` says
 * one is due: `runtime.evaluate()` (eval mode, no grad), its result (or its failure) to the
 * monitor, then a metric to `record` (the handle's or the Worker's `pollEval`) and to
 * `evalResultFn`. A failing `evalFn` or `evalResultFn` is warned about, not thrown, as on a
 * cluster. Resolves with the metric, or `undefined` when no eval was due or it failed.
 */
export async function evaluateAfterEpoch<M extends AnyModule>(
  runtime: RankRuntime<M>,
  options: EpochEvalOptions,
  done: number,
  monitor: RunMonitor | undefined,
  record: (epoch: number, metric: number) => void,
): Promise<number | undefined> {
  if (options.evalEvery <= 0 || done % options.evalEvery !== 0) return undefined;
  const { metric, error } = await runtime.evaluate();
  monitor?.eval(done, metric, error);
  if (error !== undefined) {
    warnCallback('evalFn', error);
    return undefined;
  }
  record(done, metric);
  try {
    options.evalResultFn?.(done, metric);
  } catch (callbackError) {
    warnCallback('evalResultFn', callbackError);
  }
  return metric;
}
