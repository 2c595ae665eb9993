// What a one-device run does after each epoch: the epoch's metrics (`metricsFn`, the monitor),
// the checkpoints due (`checkpointEvery`, `checkpointAtEpoch`) and the eval due (`evalEvery`).
// The managed loop and the cooperative Worker run it alike, with the same results surfaces.

import type { EpochMetrics } from '@flodl/distributed';
import { aggregateEpochMetrics } from '@flodl/distributed/coordinator';
import type { RankRuntime } from '../runtime/rank-runtime.js';
import type { AnyModule } from '../runtime/types.js';
import { warnCallback } from './build-rank.js';
import type { ResolvedTrainerOptions } from './options.js';
import type { RunMonitor } from './run-monitor.js';

/** The options the eval after an epoch reads. */
export type EpochEvalOptions = Pick<ResolvedTrainerOptions, 'evalEvery' | 'evalResultFn'>;

/** The options everything after an epoch reads. */
export type EpochEndOptions = EpochEvalOptions &
  Pick<ResolvedTrainerOptions, 'metricsFn' | 'checkpointEvery' | 'checkpointAtEpoch' | 'savePath'> & {
    /** Whether a `checkpointFn` is set (the runtime's callbacks call it). */
    checkpointFn?: unknown;
  };

/** Where an epoch's results go besides the callbacks and the monitor (the handle's or the Worker's polls). */
export interface EpochEndSinks {
  metrics(metrics: EpochMetrics): void;
  eval(epoch: number, metric: number): void;
}

/**
 * Ends `epoch` (0-based) of a one-device run: aggregates its reports into {@link EpochMetrics}
 * (to `metricsFn`, `sinks.metrics` and the monitor), writes the checkpoints due after it, then
 * runs the eval due after it ({@link evaluateAfterEpoch}). A failing callback is warned about,
 * not thrown, as on a cluster.
 */
export async function endSingleEpoch<M extends AnyModule>(
  runtime: RankRuntime<M>,
  options: EpochEndOptions,
  epoch: number,
  monitor: RunMonitor | undefined,
  sinks: EpochEndSinks,
): Promise<void> {
  const device = runtime.device;
  const metrics = aggregateEpochMetrics(epoch, runtime.takeReports(), {
    worldSize: 1,
    batchShare: [1],
    deviceIndices: [device.startsWith('cuda') ? Number(device.split(':')[1] ?? 0) : 0],
  });
  try {
    options.metricsFn?.(metrics);
  } catch (error) {
    warnCallback('metricsFn', error);
  }
  sinks.metrics(metrics);
  monitor?.epoch(metrics);
  const done = epoch + 1;
  await epochCheckpoints(runtime, options, done, monitor);
  await evaluateAfterEpoch(runtime, options, done, monitor, sinks.eval);
}

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

/** The checkpoints due after `done` epochs: `checkpointFn` and a bundle (`checkpointEvery`), a bundle (`checkpointAtEpoch`). */
async function epochCheckpoints<M extends AnyModule>(
  runtime: RankRuntime<M>,
  options: EpochEndOptions,
  done: number,
  monitor: RunMonitor | undefined,
): Promise<void> {
  const every = options.checkpointEvery !== undefined && done % options.checkpointEvery === 0;
  if (every && options.checkpointFn) {
    const { error } = await runtime.checkpoint(done);
    monitor?.checkpoint(done, error);
    if (error !== undefined) warnCallback('checkpointFn', error);
  }
  if (options.savePath === undefined) return;
  const atEpoch = options.checkpointAtEpoch === done;
  if (!every && !atEpoch) return;
  try {
    runtime.saveBundle(every ? 'every' : 'atEpoch');
    if (!options.checkpointFn) monitor?.checkpoint(done);
  } catch (error) {
    if (!options.checkpointFn)
      monitor?.checkpoint(done, error instanceof Error ? error.message : String(error));
    warnCallback('checkpoint', error);
  }
}
