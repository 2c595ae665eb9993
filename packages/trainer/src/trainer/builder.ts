// Trainer.builder(...): the fluent builder of a managed run, one method per option.

import type { EpochMetrics, LaunchMode, MaxFailureThreshold } from '@flodl/distributed';
import type { LRScheduler, Optimizer } from '@flodl/nn';
import { checkOptions, type Device, FlodlError } from '@flodl/tensor-native';
import { acquireSaveLock } from '../checkpoint/lock.js';
import type { ProgressSetting } from '../progress/progress.js';
import type { EpochContext, RankRuntime } from '../runtime/rank-runtime.js';
import type { AnyModule, ModelFactory, TrainingDataset, TrainStep } from '../runtime/types.js';
import { runCoordinatorProcess, runExternalRank } from './external-rank.js';
import { TrainerHandle } from './handle.js';
import { runLauncher } from './launcher.js';
import {
  type DashboardSetting,
  type ElCheKnobs,
  type EpochCallbackPolicyOption,
  refuseClusterBundleOptions,
  resolveTrainerOptions,
  TRAINER_OPTION_KEYS,
  type TrainerOptions,
} from './options.js';
import { runClusterRank } from './rank-entry.js';
import { detectRole } from './role.js';
import { runSingleDevice } from './single-device.js';
import type { OptimizerFactory, RunSpec } from './spec.js';

/**
 * Builds a managed training run. `dataset`, `batchSize` and `numEpochs` are required; every
 * other option has floDl's default. `run()` trains on one device in this process, or, with
 * several devices, makes this process the launcher of one rank process per device (each runs
 * this same script, where the same `run()` call becomes that rank).
 */
export class TrainerBuilder<M extends AnyModule = AnyModule> {
  readonly #options: TrainerOptions<M> = {};
  #used = false;

  /** @internal */
  constructor(
    private readonly modelFactory: ModelFactory<M>,
    private readonly optimizerFactory: OptimizerFactory,
    private readonly trainStepFn: TrainStep<M>,
  ) {
    for (const [name, value] of [
      ['modelFactory', modelFactory],
      ['optimizerFactory', optimizerFactory],
      ['trainStep', trainStepFn],
    ] as const) {
      if (typeof value !== 'function') {
        throw new FlodlError('ERR_INVALID_ARGUMENT', `Trainer.builder needs ${name} as a function`, {
          op: 'Trainer.builder',
          expected: 'Trainer.builder((device) => model, (params) => optimizer, (model, batch) => loss)',
          got: `${name}: ${value === null ? 'null' : typeof value}`,
        });
      }
    }
  }

  /** The training data (a pure function of the index in every process). Required. */
  dataset(dataset: TrainingDataset): this {
    return this.#set('dataset', dataset);
  }
  /** Samples per batch, per rank. Required. */
  batchSize(batchSize: number): this {
    return this.#set('batchSize', batchSize);
  }
  /** Epochs to train. Required. */
  numEpochs(numEpochs: number): this {
    return this.#set('numEpochs', numEpochs);
  }
  /** One rank per device. Default: every visible CUDA device, else one CPU; `['cpu', 'cpu', 'cpu']` gives CPU ranks. */
  devices(devices: Device[]): this {
    return this.#set('devices', devices);
  }
  /** Averaging mode. Default `NcclCadence` on 2+ CUDA devices, `CpuCadence` otherwise. */
  mode(mode: LaunchMode): this {
    return this.#set('mode', mode);
  }
  /** ElChe's knobs: `anchor`, `minAnchor`, `maxAnchor`, `overheadTarget`, `maxBatchDiff`, `maxOvershoot`, `gamma`, `relaxUp`, `partitionRatios`, … */
  elche(knobs: ElCheKnobs): this {
    return this.#set('elche', knobs);
  }
  /** Seed of the model init and of every epoch's shuffle. Default 42. */
  seed(seed: number): this {
    return this.#set('seed', seed);
  }
  /** Clip the global gradient norm before each step. Default none. */
  maxGradNorm(maxNorm: number): this {
    return this.#set('maxGradNorm', maxNorm);
  }
  /** The LR schedule, built per rank for the run's world size; the step is `globalStep + stepsSinceAvg`. */
  scheduler(factory: (optimizer: Optimizer, worldSize: number) => LRScheduler): this {
    return this.#set('scheduler', factory);
  }
  /** Goyal LR scaling: the LR is multiplied by `1 + (worldSize − 1)·ratio`. Default 0 (none). */
  lrScaleRatio(ratio: number): this {
    return this.#set('lrScaleRatio', ratio);
  }
  /**
   * Checkpoint every `epochs` epochs: a bundle under `savePath` (kept: the last `keepLast`),
   * and the `checkpointFn` callback when one is set.
   */
  checkpointEvery(epochs: number): this {
    return this.#set('checkpointEvery', epochs);
  }
  /** One bundle after `epochs` epochs (1-based), under `savePath`. */
  checkpointAtEpoch(epochs: number): this {
    return this.#set('checkpointAtEpoch', epochs);
  }
  /** Periodic bundles kept under `savePath` (older ones are removed). Default 3. */
  keepLast(bundles: number): this {
    return this.#set('keepLast', bundles);
  }
  /**
   * Continues the run saved in the checkpoint bundle at `stem` (or, when `stem` holds no
   * bundle, the newest complete `<stem>.step-<N>` one): weights, optimizer, scheduler, every
   * generator state, the step counters and the data cursor, mid-epoch included. The bundle's
   * shuffle seed is used; the batch size and dataset must be the saved run's.
   */
  resumeFrom(stem: string): this {
    return this.#set('resumeFrom', stem);
  }
  /** Saves a checkpoint: `(version, model)`; version is the epoch count (1-based). */
  checkpointFn(fn: (version: number, model: M) => void | Promise<void>): this {
    return this.#set('checkpointFn', fn);
  }
  /**
   * Stem of the run's checkpoint bundles: `<stem>.safetensors` (the model, PyTorch-loadable),
   * `<stem>.optim.safetensors`, `<stem>.scheduler.json`, `<stem>.meta.json`. The run's last
   * state is written there at its end (completed or stopped); periodic bundles go to
   * `<stem>.step-<N>`.
   */
  savePath(stem: string): this {
    return this.#set('savePath', stem);
  }
  /** Runs before each epoch (0-based) on the elected rank; `context.setLr` changes the LR. */
  epochFn(fn: (epoch: number, context: EpochContext<M>) => void | Promise<void>): this {
    return this.#set('epochFn', fn);
  }
  /** Called with every epoch's aggregated metrics in the launching process. */
  metricsFn(fn: (metrics: EpochMetrics) => void): this {
    return this.#set('metricsFn', fn);
  }
  /** The data `evalFn` receives. */
  evalDataset(dataset: TrainingDataset): this {
    return this.#set('evalDataset', dataset);
  }
  /** Evaluates the model (eval mode, no grad) on the elected rank; returns the metric. */
  evalFn(fn: (model: M, dataset: TrainingDataset | undefined) => number | Promise<number>): this {
    return this.#set('evalFn', fn);
  }
  /** Called with each eval result `(epoch, metric)` in the launching process. */
  evalResultFn(fn: (epoch: number, metric: number) => void): this {
    return this.#set('evalResultFn', fn);
  }
  /** Evaluate every `epochs` epochs (0 = never). Default 1 when an `evalFn` is set. */
  evalEvery(epochs: number): this {
    return this.#set('evalEvery', epochs);
  }
  /** Which rank runs eval, checkpoint and epochFn: `'fastest'` (sticky, re-elected on death) or `{ rank }`. */
  epochCallbackPolicy(policy: EpochCallbackPolicyOption): this {
    return this.#set('epochCallbackPolicy', policy);
  }
  /** Dead ranks at which the run saves and stops (`n`, `{ absolute }` or `{ percent }`); makes the run elastic. */
  maxFailure(threshold: number | MaxFailureThreshold): this {
    return this.#set('maxFailure', threshold);
  }
  /** A rank's death does not stop the others (survivors take its work). Default false. */
  elastic(elastic = true): this {
    return this.#set('elastic', elastic);
  }
  /** Rank silence that declares it dead, ms. Default 30 000. */
  heartbeatTimeoutMs(ms: number): this {
    return this.#set('heartbeatTimeoutMs', ms);
  }
  /**
   * The run's liveness setting, ms (default 30 000): a rank silent that long is declared dead
   * and ended; heartbeats, the server's idle drop and the ranks' waits follow from it.
   */
  livenessMs(ms: number): this {
    return this.#set('livenessMs', ms);
  }
  /** Batches prepared ahead of the step. Default 2. */
  prefetch(batches: number): this {
    return this.#set('prefetch', batches);
  }
  /**
   * The chunked modes (CpuCadence, CpuAsync, NcclCadence): a rank whose chunk has this many
   * batches left gets its next chunk at once, so it never idles between two. 0 keeps floDl's one
   * chunk in flight. Default 3 in CpuCadence and CpuAsync, 0 in NcclCadence.
   */
  lookaheadBatches(batches: number): this {
    return this.#set('lookaheadBatches', batches);
  }
  /**
   * Capture each rank's step (forward, loss, backward, clipping, update) into a CUDA graph and
   * replay it per batch: one launch per step for small models. CUDA devices, static shapes
   * (a last partial batch trains eagerly), and an optimizer that updates on the device (SGD;
   * Adam/AdamW on the fused kernel, their default on CUDA); a per-step LR schedule re-captures every step, so use it
   * with a constant or per-epoch schedule. Default off. See `CapturedStep` in `@flodl/nn`.
   */
  cudaGraph(enabled = true): this {
    return this.#set('cudaGraph', enabled);
  }
  /** Keep the dataset on the device (`'auto'` when it fits). Default `'auto'`. */
  resident(resident: boolean | 'auto'): this {
    return this.#set('resident', resident);
  }
  /** Bound on each wait of a rank (formation, a round, the shutdown), ms. Default 60 000. */
  timeoutMs(ms: number): this {
    return this.#set('timeoutMs', ms);
  }

  /**
   * The terminal progress display (epoch, batch, samples/s, smoothed loss, ETA, eval results;
   * on a cluster a line of per-rank share and speed), shown by the launching process only.
   * `false` turns it off; an object is `createProgress`'s options. Default on (when stdout is
   * the user's).
   */
  progress(setting: ProgressSetting = true): this {
    return this.#set('progress', setting);
  }
  /**
   * Writes the run's metrics as JSON Lines at `path` (per epoch, sampled steps, ElChe events,
   * averaging rounds, deaths, checkpoints, eval results); `readMetricsLog(path)` reads it back.
   */
  metricsLog(path: string): this {
    return this.#set('metricsLog', path);
  }
  /**
   * Serves the live dashboard from the launching process (never a rank): `{ port }` (0 picks
   * a free one), `host` 127.0.0.1 by default (any other address needs the printed token).
   */
  dashboard(setting: DashboardSetting): this {
    return this.#set('dashboard', setting);
  }

  /**
   * What Ctrl-C (SIGINT) and SIGTERM do while the run trains. On (the default): the first one
   * stops the run after the step in flight, writes a stop bundle at `savePath` (when set),
   * closes the monitor, prints one line saying so, and exits with 130 (SIGINT) or 143
   * (SIGTERM); a second one exits at once. On a cluster the launcher does this and stops the
   * ranks together (they ignore the terminal's Ctrl-C meanwhile). A script with its own
   * listener for the signal keeps the process: the run still stops and saves, `join()`
   * resolves, nothing exits. The listeners exist only while a run is active.
   * `handleSignals(false)` leaves the signals alone.
   */
  handleSignals(enabled = true): this {
    return this.#set('handleSignals', enabled);
  }

  /**
   * Sets several options at once (the same names as the methods).
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for an unknown option name
   */
  options(options: TrainerOptions<M>): this {
    checkOptions('Trainer.options', options, TRAINER_OPTION_KEYS);
    for (const [key, value] of Object.entries(options))
      this.#set(key as keyof TrainerOptions<M>, value as never);
    return this;
  }

  /**
   * Starts the run and returns its handle at once.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for missing, bad or contradictory options (before anything starts)
   */
  run(): TrainerHandle {
    return startRun(this.#spec());
  }

  /** @internal The checked run description (`run` and `intoWorker`). */
  resolveSpec(): RunSpec<M> {
    return this.#spec();
  }

  #spec(): RunSpec<M> {
    if (this.#used) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'this builder already started a run', {
        op: 'Trainer.run',
        expected: 'a new Trainer.builder(...) per run',
        got: 'run() called twice',
      });
    }
    const options = resolveTrainerOptions(this.#options);
    this.#used = true;
    return {
      modelFactory: this.modelFactory,
      optimizerFactory: this.optimizerFactory,
      trainStep: this.trainStepFn,
      options,
    };
  }

  #set<K extends keyof TrainerOptions<M>>(key: K, value: TrainerOptions<M>[K]): this {
    // The run took its options when it started: a later change would be silently lost.
    if (this.#used) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `${String(key)}() on a builder whose run started`, {
        op: `Trainer.${String(key)}`,
        expected: 'every option set before run() / intoWorker()',
        got: `${String(key)}() after the run started`,
      });
    }
    this.#options[key] = value;
    return this;
  }
}

/**
 * Starts the run `spec` describes, in the role this process plays (single device, launcher,
 * a rank, or the coordinator of an externally launched run), and returns its handle.
 */
export function startRun<M extends AnyModule>(spec: RunSpec<M>): TrainerHandle {
  const options = spec.options;
  const role = detectRole(options.devices);
  if (role.kind !== 'single') refuseClusterBundleOptions(options);
  // The savePath's lock, for the run's life: the launching (or coordinator) process holds it
  // for a whole cluster, so a rank process takes none.
  const lock = role.kind === 'rank' ? undefined : acquireSaveLock(options.savePath, 'Trainer.run');
  const locked = <T>(run: Promise<T>): Promise<T> => run.finally(() => lock?.release());
  const abort = new AbortController();
  let runtime: RankRuntime<M> | undefined;
  let stopped = false;
  let stopCluster: (() => void) | undefined;
  let requestedEarly = false;
  const stop = (): void => {
    stopped = true;
    runtime?.requestStop();
    // Before the coordinator formed there is nothing to stop gracefully: stop the ranks.
    if (role.kind === 'launcher') (stopCluster ?? (() => abort.abort()))();
  };
  if (role.kind === 'coordinator') {
    // This process only hosts the coordinator of an externally launched run.
    return new TrainerHandle(role.rank.worldSize, [], () => locked(runCoordinatorProcess(role.rank)), stop);
  }
  if (role.kind === 'rank') {
    return new TrainerHandle(
      role.worldSize,
      [role.device],
      async (handle) => {
        if (role.launchedBy === 'external') return runExternalRank(spec, role, handle);
        try {
          await runClusterRank(spec, role);
        } catch (error) {
          process.stderr.write(
            `${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
          );
          process.exit(1);
        }
        // A rank started by a launcher is done: the launcher reads its state.
        process.exit(0);
      },
      stop,
      role.launchedBy === 'flodl',
    );
  }
  if (role.kind === 'launcher') {
    return new TrainerHandle(
      options.devices.length,
      options.devices,
      (handle) =>
        locked(
          runLauncher(spec, handle, abort.signal, (graceful) => {
            stopCluster = graceful;
          }),
        ),
      stop,
    );
  }
  const single = new TrainerHandle(
    1,
    options.devices,
    (handle) =>
      locked(
        runSingleDevice(
          spec,
          handle,
          () => stopped,
          (created) => {
            runtime = created;
            // A request made before the runtime existed is served after the first step.
            if (requestedEarly) created.requestCheckpoint();
          },
        ),
      ),
    stop,
  );
  if (options.savePath !== undefined) {
    single.setCheckpointRequest(() => {
      if (runtime) runtime.requestCheckpoint();
      else requestedEarly = true;
    });
  }
  return single;
}
