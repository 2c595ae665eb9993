// The Trainer of the cooperative package: the managed builder plus `intoWorker()`.
import { installDeathRecord, writeDeathRecord } from '@flodl/distributed';
import {
  type AnyModule,
  acquireSaveLock,
  cohortProgress,
  createProgress,
  createWatchedSingleRuntime,
  detectRole,
  joinClusterRank,
  type ModelFactory,
  type OptimizerFactory,
  prepareExternalRank,
  startRun,
  TrainerBuilder,
  type TrainStep,
  watchSingleRunSignals,
} from '@flodl/trainer';
import { Worker } from './worker.js';

/** The managed builder with the cooperative terminal `intoWorker()`. */
export class CooperativeTrainerBuilder<M extends AnyModule = AnyModule> extends TrainerBuilder<M> {
  /**
   * Forms this process's {@link Worker}: on one device a Worker over the whole dataset; in a
   * rank process (under `flodl launch`, a Trainer launcher, torchrun-style or SLURM variables)
   * the rank joins the coordinator and the Worker follows it. With several devices and no
   * launcher around, this process becomes the launcher: it starts one rank per device running
   * this same script, waits for the run, and exits (it never gets a Worker).
   *
   * The `trainStep` given to the builder is called only by `worker.trainStep()`; a loop that
   * does its own forward and calls `step(loss)` never runs it.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for missing, bad or contradictory options
   */
  async intoWorker(): Promise<Worker<M>> {
    const spec = this.resolveSpec();
    const role = detectRole(spec.options.devices);
    if (role.kind === 'single') {
      // The savePath's lock, until finish() (or this process's exit).
      const lock = acquireSaveLock(spec.options.savePath, 'Trainer.intoWorker');
      // This process owns the run's view: the progress display, the metrics log, the dashboard.
      const { runtime, model, optimizer, monitor } = await createWatchedSingleRuntime(spec).catch(
        (error: unknown) => {
          lock?.release();
          throw error;
        },
      );
      // Ctrl-C / SIGTERM: the step in flight reports shutdown, finish() saves the stop bundle,
      // and once it closed the monitor (its last act) the process exits with 130 / 143.
      const signals = watchSingleRunSignals(
        runtime,
        () => runtime.requestStop(),
        monitor,
        spec.options.handleSignals,
      );
      const watched = {
        ...monitor,
        async close(outcome: 'Completed' | 'Failed') {
          await monitor.close(outcome);
          signals.release();
          if (outcome === 'Completed') signals.exitIfStopped();
        },
      };
      return new Worker<M>({
        kind: 'single',
        runtime,
        numEpochs: spec.options.numEpochs,
        monitor: watched,
        epochEnd: { ...spec.options, evaluates: spec.options.evalFn !== undefined },
        release: () => {
          runtime.dispose();
          optimizer.dispose();
          model.dispose();
          lock?.release();
        },
        trainStep: spec.trainStep as TrainStep<AnyModule>,
        cudaGraph: spec.options.cudaGraph === true,
      });
    }
    if (role.kind === 'rank') {
      installDeathRecord();
      const { options } = spec;
      const external = role.launchedBy === 'external';
      // Rank 0 of an externally launched run speaks for the cohort; every other rank draws nothing.
      const progress = createProgress(external && role.rank === 0 ? (options.progress ?? true) : false);
      const cohort = cohortProgress(
        progress,
        Math.floor(options.dataset.length / options.batchSize),
        options.batchSize,
      );
      try {
        const prepared = external ? await prepareExternalRank(role, options.mode, cohort.notice) : undefined;
        const rank = await joinClusterRank(spec, role);
        progress.start({ epochs: options.numEpochs });
        const afterFinish = async (): Promise<void> => {
          await prepared?.stop();
          progress.finish('training done');
        };
        return new Worker<M>({
          kind: 'cluster',
          rank,
          afterFinish,
          trainStep: spec.trainStep as TrainStep<AnyModule>,
          cudaGraph: spec.options.cudaGraph === true,
        });
      } catch (error) {
        writeDeathRecord(error);
        throw error;
      }
    }
    // The launcher, or the coordinator of an externally launched run: the run happens elsewhere.
    const handle = startRun(spec);
    try {
      const run = await handle.join();
      for (const lost of run.lost) process.stderr.write(`flodl: lost rank ${lost.rank}: ${lost.message}\n`);
      process.exit(0);
    } catch (error) {
      process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    }
  }
}

/**
 * The training tiers from one import: `Trainer.builder(...).run()` (managed) and
 * `Trainer.builder(...).intoWorker()` (cooperative: the loop is yours).
 *
 * floDl: `Trainer::builder(model_factory, optim_factory, train_fn)`.
 */
export const Trainer = {
  builder<M extends AnyModule>(
    modelFactory: ModelFactory<M>,
    optimizerFactory: OptimizerFactory,
    trainStep: TrainStep<M>,
  ): CooperativeTrainerBuilder<M> {
    return new CooperativeTrainerBuilder(modelFactory, optimizerFactory, trainStep);
  },
};
