// A single-device run: in-process, no coordinator; epochFn before each epoch, metrics,
// checkpoint and eval after it.

import type { Optimizer } from '@flodl/nn';
import { type CheckpointBundle, readCheckpoint } from '../checkpoint/read.js';
import { RankRuntime, type RuntimeStep } from '../runtime/rank-runtime.js';
import { drainScalars } from '../runtime/scalars.js';
import type { AnyModule } from '../runtime/types.js';
import { buildRank, callbacksOf, warnCallback } from './build-rank.js';
import { endSingleEpoch } from './epoch-end.js';
import type { TrainedRun, TrainerHandle } from './handle.js';
import { openRunMonitor, type RunMonitor } from './run-monitor.js';
import { RunSignals } from './signals.js';
import type { RunSpec } from './spec.js';

/**
 * The rank runtime of a single-device run (rank 0 of 1, no coordinator), with the model and
 * optimizer it built: the managed loop and the cooperative Worker drive it alike.
 */
export function createSingleRuntime<M extends AnyModule>(
  spec: RunSpec<M>,
  onStep?: (step: RuntimeStep) => void,
): { runtime: RankRuntime<M>; model: M; optimizer: Optimizer } {
  const options = spec.options;
  const device = options.devices[0] ?? 'cpu';
  // The bundle is checked before anything is built; its shuffle seed is the run's.
  const bundle: CheckpointBundle | undefined =
    options.resumeFrom === undefined ? undefined : readCheckpoint(options.resumeFrom);
  const { model, optimizer } = buildRank(spec, device);
  const scheduler = options.scheduler?.(optimizer, 1);
  const runtime = new RankRuntime<M>({
    model,
    optimizer,
    dataset: options.dataset,
    batchSize: options.batchSize,
    seed: bundle?.meta.seed ?? options.seed,
    device,
    ...(options.savePath === undefined ? {} : { savePath: options.savePath }),
    ...(options.keepLast === undefined ? {} : { keepLast: options.keepLast }),
    ...(options.maxGradNorm === undefined ? {} : { maxGradNorm: options.maxGradNorm }),
    ...(scheduler ? { scheduler } : {}),
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    ...(options.resident === undefined ? {} : { resident: options.resident }),
    ...(options.cudaGraph ? { cudaGraph: true } : {}),
    callbacks: callbacksOf(spec),
    ...(onStep ? { onStep } : {}),
  });
  if (bundle) {
    try {
      runtime.restore(bundle);
    } catch (error) {
      runtime.dispose();
      optimizer.dispose();
      model.dispose();
      throw error;
    }
  }
  return { runtime, model, optimizer };
}

/**
 * {@link createSingleRuntime} with the run's monitor (the progress display, the metrics log, the
 * dashboard, as the options ask) fed from every step; the caller closes the monitor.
 */
export async function createWatchedSingleRuntime<M extends AnyModule>(
  spec: RunSpec<M>,
): Promise<{ runtime: RankRuntime<M>; model: M; optimizer: Optimizer; monitor: RunMonitor }> {
  const monitor = await openRunMonitor(spec.options, { worldSize: 1 });
  try {
    const created: { runtime: RankRuntime<M>; model: M; optimizer: Optimizer } = createSingleRuntime(
      spec,
      (step) => monitor.step(step, created.optimizer.getLr()),
    );
    if (spec.options.resumeFrom !== undefined) monitor.notice(resumedLine(created.runtime));
    return { ...created, monitor };
  } catch (error) {
    await monitor.close('Failed');
    throw error;
  }
}

/** @internal Trains `spec` on its one device; resolves with the final state. */
export async function runSingleDevice<M extends AnyModule>(
  spec: RunSpec<M>,
  handle: TrainerHandle,
  stopped: () => boolean,
  onRuntime: (runtime: RankRuntime<M>) => void,
): Promise<TrainedRun> {
  const options = spec.options;
  const { runtime, model, optimizer, monitor } = await createWatchedSingleRuntime(spec);
  let outcome: 'Completed' | 'Failed' = 'Failed';
  onRuntime(runtime);
  // Ctrl-C / SIGTERM: stop after the step in flight, save the stop bundle, then exit (130 / 143).
  const signals = watchSingleRunSignals(runtime, () => handle.stop(), monitor, options.handleSignals);
  try {
    let interruptedAt: number | undefined;
    for (let epoch = runtime.startEpoch; epoch < options.numEpochs && !stopped(); epoch++) {
      await runtime.fireEpochCallback(epoch);
      const plan = { epoch, partitionOffset: 0, partitionSize: runtime.totalSamples };
      const interrupted = await runtime.runEpochPlan(plan, spec.trainStep);
      if (interrupted) {
        interruptedAt = epoch;
        break;
      }
      await endSingleEpoch(runtime, options, epoch, monitor, {
        metrics: (metrics) => handle.pushMetrics(metrics),
        eval: (epoch, metric) => handle.pushEval(epoch, metric),
      });
      // Let the caller's metric consumers run between epochs.
      await new Promise((resolve) => setImmediate(resolve));
    }
    const state = { ...runtime.finalState(), lost: [] };
    if (options.savePath !== undefined)
      saveFinal(runtime, interruptedAt !== undefined || stopped() ? 'stop' : 'final');
    // The stopped epoch's scalars went into its bundle; the next run in this process starts clean.
    if (interruptedAt !== undefined) drainScalars();
    outcome = 'Completed';
    return state;
  } finally {
    await monitor.close(outcome);
    // The caller holds copies (TrainedState): the run's own model and optimizer go with it.
    runtime.dispose();
    optimizer.dispose();
    model.dispose();
    signals.release();
    if (outcome === 'Completed') signals.exitIfStopped();
  }
}

/**
 * The signal watch of a one-device run (both tiers): the first SIGINT / SIGTERM calls `stop`
 * and prints where the run stops and where it saves (see {@link RunSignals}).
 */
export function watchSingleRunSignals<M extends AnyModule>(
  runtime: RankRuntime<M>,
  stop: () => void,
  monitor: RunMonitor,
  enabled = true,
): RunSignals {
  return RunSignals.watch(
    {
      stop,
      where: () => `after step ${runtime.localStep}`,
      savePath: runtime.savePath,
      notice: (line) => monitor.notice(line),
    },
    enabled,
  );
}

/** `flodl: resumed from <bundle> at epoch E, batch B`: where a resumed one-device run goes on (0-based). */
function resumedLine<M extends AnyModule>(runtime: RankRuntime<M>): string {
  const cursor = runtime.dataCursor();
  return `flodl: resumed from ${runtime.resumedFrom ?? 'a bundle'} at epoch ${cursor.epoch}, batch ${cursor.batch}`;
}

/** The run's last state at `savePath` (a failure is reported: the trained state is still returned). */
export function saveFinal<M extends AnyModule>(runtime: RankRuntime<M>, reason: 'final' | 'stop'): void {
  try {
    runtime.saveBundle(reason);
  } catch (error) {
    warnCallback('checkpoint', error);
  }
}
