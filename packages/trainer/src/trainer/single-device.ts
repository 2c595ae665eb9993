// A single-device run: in-process, no coordinator; epochFn before each epoch, metrics,
// checkpoint and eval after it.

import { aggregateEpochMetrics } from '@flodl/distributed/coordinator';
import type { Optimizer } from '@flodl/nn';
import { type CheckpointBundle, readCheckpoint } from '../checkpoint/read.js';
import { RankRuntime, type RuntimeStep } from '../runtime/rank-runtime.js';
import { drainScalars } from '../runtime/scalars.js';
import type { AnyModule } from '../runtime/types.js';
import { buildRank, callbacksOf, warnCallback } from './build-rank.js';
import { evaluateAfterEpoch } from './epoch-eval.js';
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
  const device = runtime.device;
  onRuntime(runtime);
  // Ctrl-C / SIGTERM: stop after the step in flight, save the stop bundle, then exit (130 / 143).
  const signals = watchSingleRunSignals(runtime, () => handle.stop(), monitor, options.handleSignals);
  const deviceIndex = device.startsWith('cuda') ? Number(device.split(':')[1] ?? 0) : 0;
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
      const metrics = aggregateEpochMetrics(epoch, runtime.takeReports(), {
        worldSize: 1,
        batchShare: [1],
        deviceIndices: [deviceIndex],
      });
      try {
        options.metricsFn?.(metrics);
      } catch (error) {
        warnCallback('metricsFn', error);
      }
      handle.pushMetrics(metrics);
      monitor.epoch(metrics);
      const done = epoch + 1;
      await epochCheckpoints(runtime, options, done, monitor);
      await evaluateAfterEpoch(runtime, options, done, monitor, (epoch, metric) =>
        handle.pushEval(epoch, metric),
      );
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

/** The checkpoints due after `done` epochs: `checkpointFn` and a bundle (`checkpointEvery`), a bundle (`checkpointAtEpoch`). */
async function epochCheckpoints<M extends AnyModule>(
  runtime: RankRuntime<M>,
  options: RunSpec<M>['options'],
  done: number,
  monitor: RunMonitor,
): Promise<void> {
  const every = options.checkpointEvery !== undefined && done % options.checkpointEvery === 0;
  if (every && options.checkpointFn) {
    const { error } = await runtime.checkpoint(done);
    monitor.checkpoint(done, error);
    if (error !== undefined) warnCallback('checkpointFn', error);
  }
  if (options.savePath === undefined) return;
  const atEpoch = options.checkpointAtEpoch === done;
  if (!every && !atEpoch) return;
  try {
    runtime.saveBundle(every ? 'every' : 'atEpoch');
    if (!options.checkpointFn) monitor.checkpoint(done);
  } catch (error) {
    if (!options.checkpointFn) monitor.checkpoint(done, messageOf(error));
    warnCallback('checkpoint', error);
  }
}

/** The run's last state at `savePath` (a failure is reported: the trained state is still returned). */
export function saveFinal<M extends AnyModule>(runtime: RankRuntime<M>, reason: 'final' | 'stop'): void {
  try {
    runtime.saveBundle(reason);
  } catch (error) {
    warnCallback('checkpoint', error);
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
