// The Trainer's options: what the builder records, its defaults (floDl's), and the checks run
// before anything starts.

import type { ElCheConfigOptions, EpochMetrics, LaunchMode, MaxFailureThreshold } from '@flodl/distributed';
import { isChunkedMode, LAUNCH_MODES, livenessTimeouts } from '@flodl/distributed';
import { checkMaxFailure, ElCheConfig } from '@flodl/distributed/coordinator';
import type { LRScheduler, Optimizer } from '@flodl/nn';
import {
  checkInteger,
  checkOptions,
  cuda,
  type Device,
  FlodlError,
  invalidArgument,
} from '@flodl/tensor-native';
import { createProgress, type ProgressSetting } from '../progress/progress.js';
import type { EpochContext } from '../runtime/rank-runtime.js';
import type { AnyModule, TrainingDataset } from '../runtime/types.js';

/** Who runs eval, checkpoint and the epoch callback: the fastest rank (sticky), or a fixed one. */
export type EpochCallbackPolicyOption = 'fastest' | { rank: number };

/** ElChe's knobs (the mode is `mode`). */
export type ElCheKnobs = Omit<ElCheConfigOptions, 'mode'>;

/** Where the live dashboard listens (see `startDashboard` of `@flodl/distributed`). */
export interface DashboardSetting {
  /** TCP port; 0 picks a free one (printed at start). */
  port: number;
  /** Address to bind. Default `127.0.0.1`; any other requires the token printed at start. */
  host?: string;
}

/** Every option of the managed Trainer; see the builder's methods for each. */
export interface TrainerOptions<M extends AnyModule = AnyModule> {
  dataset?: TrainingDataset;
  batchSize?: number;
  numEpochs?: number;
  devices?: Device[];
  mode?: LaunchMode;
  elche?: ElCheKnobs;
  seed?: number;
  maxGradNorm?: number;
  scheduler?: (optimizer: Optimizer, worldSize: number) => LRScheduler;
  lrScaleRatio?: number;
  checkpointEvery?: number;
  checkpointFn?: (version: number, model: M) => void | Promise<void>;
  savePath?: string;
  /** Resume from the checkpoint bundle at this stem (or the newest under this `savePath`). */
  resumeFrom?: string;
  /** Write one bundle after this many epochs (1-based, like `checkpointFn`'s version). */
  checkpointAtEpoch?: number;
  /** Periodic bundles kept under `savePath`. Default 3. */
  keepLast?: number;
  epochFn?: (epoch: number, context: EpochContext<M>) => void | Promise<void>;
  metricsFn?: (metrics: EpochMetrics) => void;
  evalDataset?: TrainingDataset;
  evalFn?: (model: M, dataset: TrainingDataset | undefined) => number | Promise<number>;
  evalResultFn?: (epoch: number, metric: number) => void;
  evalEvery?: number;
  epochCallbackPolicy?: EpochCallbackPolicyOption;
  maxFailure?: number | MaxFailureThreshold;
  elastic?: boolean;
  heartbeatTimeoutMs?: number;
  /**
   * The run's one liveness setting, ms (default 30 000, or `FLODL_LIVENESS_MS`): a rank silent
   * that long is declared dead and ended; the heartbeat period, the server's idle drop and the
   * ranks' waits derive from it. A cluster run passes it to `launch` and its ranks.
   */
  livenessMs?: number;
  prefetch?: number;
  /**
   * Chunked dispatch (CpuCadence, CpuAsync, NcclCadence: `isChunkedMode`): a rank whose chunk
   * has this many batches left gets its next chunk at once, so it never idles between two
   * (`CoordinatorOptions.lookaheadBatches`). 0 keeps floDl's one chunk in flight. Default 3 in
   * CpuCadence and CpuAsync, 0 in NcclCadence; the Sync modes take 0 only.
   */
  lookaheadBatches?: number;
  resident?: boolean | 'auto';
  /** Capture each rank's training step into a CUDA graph (`CapturedStep`); CUDA devices only. */
  cudaGraph?: boolean;
  /** Bound on each wait of a rank's session (formation, a round, the shutdown), ms. Default twice the run's liveness setting (`FLODL_LIVENESS_MS`): 60 000. */
  timeoutMs?: number;
  /** The terminal progress display: `true` (default), `false`, or `createProgress` options. */
  progress?: ProgressSetting;
  /** Write the run's metrics as JSON Lines to this path (read back with `readMetricsLog`). */
  metricsLog?: string;
  /** Serve the live dashboard from the launching process. */
  dashboard?: DashboardSetting;
  /**
   * Stop and save on the first SIGINT / SIGTERM, exit with 130 / 143 (a second one exits at
   * once); a cluster's ranks leave Ctrl-C to their launcher. Default true; false leaves the
   * signals alone (the process dies on them).
   */
  handleSignals?: boolean;
}

/** The option names, for `options({...})` and error messages. */
export const TRAINER_OPTION_KEYS = [
  'dataset',
  'batchSize',
  'numEpochs',
  'devices',
  'mode',
  'elche',
  'seed',
  'maxGradNorm',
  'scheduler',
  'lrScaleRatio',
  'checkpointEvery',
  'checkpointFn',
  'savePath',
  'resumeFrom',
  'checkpointAtEpoch',
  'keepLast',
  'epochFn',
  'metricsFn',
  'evalDataset',
  'evalFn',
  'evalResultFn',
  'evalEvery',
  'epochCallbackPolicy',
  'maxFailure',
  'elastic',
  'heartbeatTimeoutMs',
  'livenessMs',
  'prefetch',
  'lookaheadBatches',
  'resident',
  'cudaGraph',
  'timeoutMs',
  'progress',
  'metricsLog',
  'dashboard',
  'handleSignals',
] as const satisfies readonly (keyof TrainerOptions)[];

/** {@link TrainerOptions} with the defaults applied and every check passed. */
export interface ResolvedTrainerOptions<M extends AnyModule = AnyModule>
  extends Omit<
    TrainerOptions<M>,
    'dataset' | 'batchSize' | 'numEpochs' | 'devices' | 'mode' | 'seed' | 'maxFailure'
  > {
  dataset: TrainingDataset;
  batchSize: number;
  numEpochs: number;
  devices: Device[];
  mode: LaunchMode;
  seed: number;
  /** Eval cadence in epochs (0 = never); 1 when an `evalFn` is set and `evalEvery` is not. */
  evalEvery: number;
  maxFailure?: MaxFailureThreshold;
}

const OP = 'Trainer';

/** Every visible CUDA device, else one CPU (floDl's default). */
export function defaultDevices(): Device[] {
  const count = cuda.isAvailable() ? cuda.deviceCount() : 0;
  return count > 0 ? Array.from({ length: count }, (_, index) => `cuda:${index}` as Device) : ['cpu'];
}

/**
 * Applies the defaults and checks the options.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT naming every missing required option, or the first
 *   bad or contradictory one
 */
export function resolveTrainerOptions<M extends AnyModule>(
  options: TrainerOptions<M>,
): ResolvedTrainerOptions<M> {
  // `null` is no option's value: leaving the option out is how to keep its default.
  for (const [key, value] of Object.entries(options)) {
    if (value === null)
      throw invalidArgument(`${OP}.${key}`, key, 'a value (leave the option out for its default)', value);
  }
  const missing = (['dataset', 'batchSize', 'numEpochs'] as const).filter(
    (key) => options[key] === undefined,
  );
  if (missing.length > 0) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `the Trainer needs ${missing.join(', ')}`, {
      op: `${OP}.run`,
      expected: missing.map((key) => `.${key}(...)`).join(' '),
      got: `no ${missing.join(', no ')}`,
    });
  }
  const dataset = checkDataset('dataset', options.dataset);
  if (options.evalDataset !== undefined) checkDataset('evalDataset', options.evalDataset);
  const batchSize = positiveInteger('batchSize', options.batchSize);
  const numEpochs = positiveInteger('numEpochs', options.numEpochs);
  if (batchSize > dataset.length) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the dataset holds less than one batch', {
      op: `${OP}.batchSize`,
      expected: `batchSize <= ${dataset.length} (the dataset's length)`,
      got: `batchSize ${batchSize}`,
    });
  }
  const devices = options.devices ?? defaultDevices();
  if (!Array.isArray(devices) || devices.length === 0) {
    throw invalidArgument(
      `${OP}.devices`,
      'devices',
      "a non-empty list like ['cuda:0', 'cuda:1'] or ['cpu', 'cpu']",
      devices,
    );
  }
  for (const device of devices) {
    if (typeof device !== 'string' || !/^(cpu|cuda(:\d+)?)$/.test(device)) {
      throw invalidArgument(`${OP}.devices`, 'devices[i]', "'cpu', 'cuda' or 'cuda:N'", device);
    }
  }
  const cudaDevices = devices.filter((device) => device.startsWith('cuda')).length;
  const mode = options.mode ?? (cudaDevices >= 2 ? 'NcclCadence' : 'CpuCadence');
  if (!LAUNCH_MODES.includes(mode))
    throw invalidArgument(`${OP}.mode`, 'mode', LAUNCH_MODES.join(' | '), mode);
  if (mode.startsWith('Nccl') && cudaDevices > 0 && cudaDevices < devices.length) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `${mode} needs every rank on the same kind of device`, {
      op: `${OP}.mode`,
      expected: 'all CUDA devices, or all CPUs (Gloo), or a Cpu* mode for mixed devices',
      got: devices.join(', '),
    });
  }
  const seed = options.seed ?? 42;
  if (!Number.isSafeInteger(seed) || seed < 0)
    throw invalidArgument(`${OP}.seed`, 'seed', 'a non-negative integer', seed);
  if (options.cudaGraph !== undefined) {
    if (typeof options.cudaGraph !== 'boolean')
      throw invalidArgument(`${OP}.cudaGraph`, 'cudaGraph', 'a boolean', options.cudaGraph);
    const offCuda = devices.filter((device) => !device.startsWith('cuda'));
    if (options.cudaGraph && offCuda.length > 0) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'a CUDA graph step needs CUDA devices', {
        op: `${OP}.cudaGraph`,
        expected: 'every device a CUDA one (or cudaGraph(false))',
        got: devices.join(', '),
      });
    }
  }
  for (const key of ['maxGradNorm', 'lrScaleRatio'] as const) {
    const value = options[key];
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < 0)) {
      throw invalidArgument(`${OP}.${key}`, key, 'a finite number >= 0', value);
    }
  }
  for (const key of [
    'scheduler',
    'checkpointFn',
    'epochFn',
    'metricsFn',
    'evalFn',
    'evalResultFn',
  ] as const) {
    const value = options[key];
    if (value !== undefined && typeof value !== 'function')
      throw invalidArgument(`${OP}.${key}`, key, 'a function', value);
  }
  if (options.checkpointEvery !== undefined) {
    positiveInteger('checkpointEvery', options.checkpointEvery);
    if (!options.checkpointFn && options.savePath === undefined) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'checkpointEvery needs a savePath or a checkpointFn', {
        op: `${OP}.checkpointEvery`,
        expected:
          ".savePath('runs/model') (bundles) or .checkpointFn((version, model) => ...) beside .checkpointEvery(n)",
        got: 'neither',
      });
    }
  }
  checkBundleOptions(options, numEpochs);
  if (options.evalEvery !== undefined) {
    if (!Number.isSafeInteger(options.evalEvery) || options.evalEvery < 0) {
      throw invalidArgument(`${OP}.evalEvery`, 'evalEvery', 'an integer >= 0 (0 = never)', options.evalEvery);
    }
    if (options.evalEvery > 0 && !options.evalFn) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'evalEvery needs an evalFn', {
        op: `${OP}.evalEvery`,
        expected: '.evalFn((model, dataset) => metric) beside .evalEvery(n)',
        got: 'no evalFn',
      });
    }
  }
  if ((options.evalResultFn || options.evalDataset) && !options.evalFn) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'evalDataset / evalResultFn need an evalFn', {
      op: `${OP}.evalFn`,
      expected: '.evalFn((model, dataset) => metric)',
      got: 'no evalFn',
    });
  }
  const policy = options.epochCallbackPolicy;
  if (policy !== undefined && policy !== 'fastest') {
    const rank = (policy as { rank?: unknown }).rank;
    if (!Number.isSafeInteger(rank) || (rank as number) < 0 || (rank as number) >= devices.length) {
      throw invalidArgument(
        `${OP}.epochCallbackPolicy`,
        'epochCallbackPolicy',
        `'fastest' or { rank } with 0 <= rank < ${devices.length}`,
        policy,
      );
    }
  }
  const maxFailure =
    typeof options.maxFailure === 'number'
      ? { absolute: positiveInteger('maxFailure', options.maxFailure) }
      : options.maxFailure === undefined
        ? undefined
        : checkMaxFailure(options.maxFailure, `${OP}.maxFailure`);
  if (options.elastic !== undefined && typeof options.elastic !== 'boolean')
    throw invalidArgument(`${OP}.elastic`, 'elastic', 'true or false', options.elastic);
  if (options.handleSignals !== undefined && typeof options.handleSignals !== 'boolean')
    throw invalidArgument(`${OP}.handleSignals`, 'handleSignals', 'true or false', options.handleSignals);
  if (options.resident !== undefined && typeof options.resident !== 'boolean' && options.resident !== 'auto')
    throw invalidArgument(`${OP}.resident`, 'resident', "true, false or 'auto'", options.resident);
  if (options.elche !== undefined) {
    if (typeof options.elche !== 'object' || Array.isArray(options.elche))
      throw invalidArgument(`${OP}.elche`, 'elche', "ElChe's knobs, e.g. { anchor: 3 }", options.elche);
    // ElChe's own checks (unknown knobs, ranges), run before anything starts.
    ElCheConfig.resolve({ ...options.elche, mode });
  }
  if (options.heartbeatTimeoutMs !== undefined)
    positiveInteger('heartbeatTimeoutMs', options.heartbeatTimeoutMs);
  if (options.timeoutMs !== undefined) positiveInteger('timeoutMs', options.timeoutMs);
  if (options.livenessMs !== undefined) livenessTimeouts(options.livenessMs, `${OP}.livenessMs`);
  if (options.prefetch !== undefined && (!Number.isSafeInteger(options.prefetch) || options.prefetch < 0)) {
    throw invalidArgument(`${OP}.prefetch`, 'prefetch', 'an integer >= 0', options.prefetch);
  }
  checkLookahead(options.lookaheadBatches, mode);
  checkMonitorOptions(options);
  const { maxFailure: _given, ...rest } = options;
  return {
    ...rest,
    dataset,
    batchSize,
    numEpochs,
    devices: [...devices],
    mode,
    seed,
    evalEvery: options.evalEvery ?? (options.evalFn ? 1 : 0),
    ...(maxFailure ? { maxFailure } : {}),
  };
}

/** `lookaheadBatches`: an integer >= 0, above 0 only where chunks are handed out. */
function checkLookahead(batches: number | undefined, mode: LaunchMode): void {
  if (batches === undefined) return;
  checkInteger(`${OP}.lookaheadBatches`, 'lookaheadBatches', batches, 0);
  if (batches > 0 && !isChunkedMode(mode)) {
    throw invalidArgument(
      `${OP}.lookaheadBatches`,
      'lookaheadBatches',
      `0 in ${mode}, which hands out no chunks (the Cadence and Async modes do)`,
      batches,
    );
  }
}

/** `savePath`, `resumeFrom`, `checkpointAtEpoch`, `keepLast`. */
function checkBundleOptions(
  options: Pick<TrainerOptions, 'savePath' | 'resumeFrom' | 'checkpointAtEpoch' | 'keepLast'>,
  numEpochs: number,
): void {
  if (options.savePath !== undefined && (typeof options.savePath !== 'string' || options.savePath === '')) {
    throw invalidArgument(`${OP}.savePath`, 'savePath', 'a file path stem', options.savePath);
  }
  if (
    options.resumeFrom !== undefined &&
    (typeof options.resumeFrom !== 'string' || options.resumeFrom === '')
  ) {
    throw invalidArgument(
      `${OP}.resumeFrom`,
      'resumeFrom',
      "a bundle stem like 'runs/model'",
      options.resumeFrom,
    );
  }
  if (options.keepLast !== undefined) positiveInteger('keepLast', options.keepLast);
  if (options.checkpointAtEpoch !== undefined) {
    const epoch = positiveInteger('checkpointAtEpoch', options.checkpointAtEpoch);
    if (epoch > numEpochs)
      throw invalidArgument(
        `${OP}.checkpointAtEpoch`,
        'checkpointAtEpoch',
        `1..${numEpochs} (numEpochs)`,
        epoch,
      );
  }
  for (const key of ['checkpointAtEpoch', 'keepLast'] as const) {
    if (options[key] !== undefined && options.savePath === undefined) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `${key} needs a savePath`, {
        op: `${OP}.${key}`,
        expected: `.savePath('runs/model') beside .${key}(n)`,
        got: 'no savePath',
      });
    }
  }
}

/**
 * Refuses the bundle option a cluster run does not serve yet: `checkpointAtEpoch` (use
 * `checkpointEvery`).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT
 */
export function refuseClusterBundleOptions(options: Pick<TrainerOptions, 'checkpointAtEpoch'>): void {
  if (options.checkpointAtEpoch === undefined) return;
  throw new FlodlError('ERR_INVALID_ARGUMENT', 'checkpointAtEpoch is not served on a cluster run yet', {
    op: `${OP}.checkpointAtEpoch`,
    expected: '.checkpointEvery(n) with a savePath (the elected rank writes each bundle)',
    got: 'checkpointAtEpoch with several ranks',
  });
}

/** `progress`, `metricsLog`, `dashboard`: checked before anything starts. */
function checkMonitorOptions(options: Pick<TrainerOptions, 'progress' | 'metricsLog' | 'dashboard'>): void {
  const { progress, metricsLog, dashboard } = options;
  if (progress !== undefined && typeof progress !== 'boolean') {
    if (typeof progress !== 'object' || progress === null || Array.isArray(progress))
      throw invalidArgument(`${OP}.progress`, 'progress', 'true, false or createProgress options', progress);
    // The display's own checks (unknown options, ranges) run here, off any stream.
    createProgress(progress.stream === undefined ? { ...progress, stream: { write: () => true } } : progress);
  }
  if (metricsLog !== undefined && (typeof metricsLog !== 'string' || metricsLog === ''))
    throw invalidArgument(`${OP}.metricsLog`, 'metricsLog', 'a file path', metricsLog);
  if (dashboard !== undefined) {
    const { port, host } = (dashboard ?? {}) as Partial<DashboardSetting>;
    if (
      typeof dashboard !== 'object' ||
      dashboard === null ||
      !Number.isSafeInteger(port) ||
      (port as number) < 0 ||
      (port as number) > 65535
    )
      throw invalidArgument(`${OP}.dashboard`, 'dashboard', '{ port: 0..65535, host? }', dashboard);
    checkOptions(`${OP}.dashboard`, dashboard, ['port', 'host']);
    if (host !== undefined && (typeof host !== 'string' || host === ''))
      throw invalidArgument(`${OP}.dashboard`, 'dashboard.host', 'an address like 127.0.0.1', host);
  }
}

/** A Dataset (length, get) or BatchDataset (length, getBatch). */
function checkDataset(name: 'dataset' | 'evalDataset', value: unknown): TrainingDataset {
  const dataset = value as TrainingDataset;
  if (
    typeof dataset !== 'object' ||
    dataset === null ||
    !Number.isSafeInteger(dataset.length) ||
    dataset.length < 0 ||
    (typeof (dataset as { get?: unknown }).get !== 'function' &&
      typeof (dataset as { getBatch?: unknown }).getBatch !== 'function')
  ) {
    throw invalidArgument(
      `${OP}.${name}`,
      name,
      'a Dataset (length, get) or BatchDataset (length, getBatch)',
      dataset,
    );
  }
  return dataset;
}

function positiveInteger(name: string, value: unknown): number {
  if (!Number.isSafeInteger(value) || (value as number) < 1) {
    throw invalidArgument(`${OP}.${name}`, name, 'a positive integer', value);
  }
  return value as number;
}
