// A single-device run: in-process, no coordinator; epochFn before each epoch, metrics,
// checkpoint and eval after it.

import { aggregateEpochMetrics } from '@flodl/distributed/coordinator';
import { RankRuntime } from '../runtime/rank-runtime.js';
import type { AnyModule } from '../runtime/types.js';
import { buildRank, callbacksOf, warnCallback } from './build-rank.js';
import type { TrainedRun, TrainerHandle } from './handle.js';
import type { RunSpec } from './spec.js';

/** @internal Trains `spec` on its one device; resolves with the final state. */
export async function runSingleDevice<M extends AnyModule>(
  spec: RunSpec<M>,
  handle: TrainerHandle,
  stopped: () => boolean,
  onRuntime: (runtime: RankRuntime<M>) => void,
): Promise<TrainedRun> {
  const options = spec.options;
  const device = options.devices[0] ?? 'cpu';
  const { model, optimizer } = buildRank(spec, device);
  const scheduler = options.scheduler?.(optimizer, 1);
  const runtime = new RankRuntime<M>({
    model,
    optimizer,
    dataset: options.dataset,
    batchSize: options.batchSize,
    seed: options.seed,
    device,
    ...(options.maxGradNorm === undefined ? {} : { maxGradNorm: options.maxGradNorm }),
    ...(scheduler ? { scheduler } : {}),
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    ...(options.resident === undefined ? {} : { resident: options.resident }),
    callbacks: callbacksOf(spec),
  });
  onRuntime(runtime);
  const deviceIndex = device.startsWith('cuda') ? Number(device.split(':')[1] ?? 0) : 0;
  try {
    for (let epoch = 0; epoch < options.numEpochs && !stopped(); epoch++) {
      await runtime.fireEpochCallback(epoch);
      const plan = { epoch, partitionOffset: 0, partitionSize: runtime.totalSamples };
      const interrupted = await runtime.runEpochPlan(plan, spec.trainStep);
      if (interrupted) break;
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
      const done = epoch + 1;
      if (options.checkpointEvery !== undefined && done % options.checkpointEvery === 0) {
        const { error } = await runtime.checkpoint(done);
        if (error !== undefined) warnCallback('checkpointFn', error);
      }
      if (options.evalEvery > 0 && done % options.evalEvery === 0) {
        const { metric, error } = await runtime.evaluate();
        if (error !== undefined) warnCallback('evalFn', error);
        else {
          handle.pushEval(done, metric);
          try {
            options.evalResultFn?.(done, metric);
          } catch (callbackError) {
            warnCallback('evalResultFn', callbackError);
          }
        }
      }
      // Let the caller's metric consumers run between epochs.
      await new Promise((resolve) => setImmediate(resolve));
    }
    return { ...runtime.finalState(), lost: [] };
  } finally {
    // The caller holds copies (TrainedState): the run's own model and optimizer go with it.
    runtime.dispose();
    optimizer.dispose();
    model.dispose();
  }
}
