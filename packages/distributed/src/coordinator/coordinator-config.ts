import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import { ElCheConfig, type ElCheConfigOptions, isChunkedMode } from './config.js';
import { MIN_CHUNK_BATCHES } from './dispatch/chunk-sizing.js';
import type { MaxFailureThreshold } from './membership.js';
import { type CoordinatorResume, checkResume } from './resume.js';
import type { EpochCallbackPolicy } from './roles.js';
import {
  checkBoolean,
  checkInteger,
  checkNumberInRange,
  checkOptionsObject,
  rejectUnknownKeys,
} from './validate.js';

/** Options of {@link ClusterCoordinator}; unset values take floDl's defaults. */
export interface CoordinatorOptions {
  /** Ranks at formation. */
  worldSize: number;
  /** Dataset size N (samples, or picks under augmentation). */
  totalSamples: number;
  /** Per-rank batch size. */
  batchSize: number;
  numEpochs: number;
  /** Shuffle seed of the `(seed, epoch)` permutation (recorded for resume). Default 42. */
  seed?: number;
  /** ElChe options or a resolved config. Default `ElCheConfig.resolve()`. */
  elche?: ElCheConfigOptions | ElCheConfig;
  /** Goyal LR scaling ratio: factor `1 + (W − 1)·ratio`. Default 1. */
  lrScaleRatio?: number;
  /** Who runs eval / checkpoint / epoch callbacks. Default `'Fastest'`. */
  epochCallbackPolicy?: EpochCallbackPolicy;
  /** Checkpoint at epoch boundaries that are multiples of this. Default none. */
  checkpointEvery?: number;
  /** Eval at epoch boundaries that are multiples of this, and once at the end. Default none. */
  evalEveryEpochs?: number;
  /** An epoch callback is registered (its cost is budgeted as slack in the epoch's last window). Default false. */
  epochCallback?: boolean;
  /** Rank heartbeat staleness that declares death (ms, scaled). Default 30 000. */
  heartbeatTimeoutMs?: number;
  /**
   * Stall suspicion: a live rank that owes work (a chunk in flight, a round to join) and made
   * no progress for `stallFactor ×` its own smoothed ms per batch (and at least `stallFloorMs`)
   * is suspected: it leaves the cohort at once (its work goes to the others, the round in
   * flight goes on without it) and is declared dead (`stalled`) once it went a whole
   * `heartbeatTimeoutMs` without progress. 0 turns suspicion off. Default 10.
   */
  stallFactor?: number;
  /** The least time without progress before a rank is suspected (ms, scaled). Default a third of `heartbeatTimeoutMs`. */
  stallFloorMs?: number;
  /** Multiplies every network deadline (floDl `FLODL_NET_TIMEOUT_SCALE`, floor 0.1). Default 1. */
  netTimeoutScale?: number;
  /** Coordinator → rank beacon period (ms, never scaled). Default 1000. */
  coordHeartbeatMs?: number;
  /** A reduce running longer than this ends the run with `ShutdownWithSave(ReduceStall)` (ms, scaled). Default 300 000. */
  reduceStallMs?: number;
  /** Longest wait for the final eval / checkpoint before shutting down anyway (ms, scaled). Default 600 000. */
  callbackTimeoutMs?: number;
  /** Dead ranks after which the run saves and exits. Default none (shrink while ranks remain). */
  maxFailure?: MaxFailureThreshold;
  /** Smallest chunk (batches). Default 4. */
  minChunkBatches?: number;
  /** Chunked dispatch. Default: true for Cadence and Async, false for Sync. */
  progressive?: boolean;
  /**
   * Under chunked dispatch, a rank whose chunk in flight has this many batches or fewer left to
   * run (by its step reports) gets its next chunk ahead, so it does not wait for it at the
   * chunk's end: one chunk at most waits per rank. 0 keeps one chunk in flight per rank
   * (floDl). Default 0.
   */
  lookaheadBatches?: number;
  /** CUDA device index per rank, for metrics. Default: the rank. */
  deviceIndices?: readonly number[];
  /** Continue a saved run (a checkpoint bundle's state) instead of starting at epoch 0. Default none. */
  resume?: CoordinatorResume;
}

/** {@link CoordinatorOptions} resolved and validated. */
export interface CoordinatorConfig {
  readonly worldSize: number;
  readonly totalSamples: number;
  readonly batchSize: number;
  readonly numEpochs: number;
  readonly seed: number;
  readonly elche: ElCheConfig;
  readonly lrScaleRatio: number;
  readonly epochCallbackPolicy: EpochCallbackPolicy;
  readonly checkpointEvery: number | undefined;
  readonly evalEveryEpochs: number | undefined;
  readonly epochCallback: boolean;
  readonly heartbeatTimeoutMs: number;
  readonly stallFactor: number;
  readonly stallFloorMs: number;
  readonly coordHeartbeatMs: number;
  readonly reduceStallMs: number;
  readonly callbackTimeoutMs: number;
  readonly maxFailure: MaxFailureThreshold | undefined;
  readonly minChunkBatches: number;
  readonly progressive: boolean;
  readonly lookaheadBatches: number;
  readonly deviceIndices: readonly number[];
  readonly resume: CoordinatorResume | undefined;
}

const OP = 'ClusterCoordinator';

const KNOWN_KEYS: readonly (keyof CoordinatorOptions)[] = [
  'worldSize',
  'totalSamples',
  'batchSize',
  'numEpochs',
  'seed',
  'elche',
  'lrScaleRatio',
  'epochCallbackPolicy',
  'checkpointEvery',
  'evalEveryEpochs',
  'epochCallback',
  'heartbeatTimeoutMs',
  'stallFactor',
  'stallFloorMs',
  'netTimeoutScale',
  'coordHeartbeatMs',
  'reduceStallMs',
  'callbackTimeoutMs',
  'maxFailure',
  'minChunkBatches',
  'progressive',
  'lookaheadBatches',
  'deviceIndices',
  'resume',
];

/**
 * Validates {@link CoordinatorOptions} and fills the defaults.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` naming the offending option: an unknown key, a
 *   count out of range, fewer samples than one batch, ratios or a rank that do not fit the world.
 */
export function resolveCoordinatorConfig(options: CoordinatorOptions): CoordinatorConfig {
  const raw = checkOptionsObject(OP, 'options', options);
  rejectUnknownKeys(OP, 'options', raw, KNOWN_KEYS);
  const worldSize = checkInteger(OP, 'worldSize', raw.worldSize, 1);
  const batchSize = checkInteger(OP, 'batchSize', raw.batchSize, 1);
  const totalSamples = checkInteger(OP, 'totalSamples', raw.totalSamples, 1);
  if (totalSamples < batchSize) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the dataset holds less than one batch', {
      op: OP,
      expected: `totalSamples >= batchSize (${batchSize})`,
      got: String(totalSamples),
    });
  }
  const numEpochs = checkInteger(OP, 'numEpochs', raw.numEpochs, 1);
  const seed = raw.seed === undefined ? 42 : checkInteger(OP, 'seed', raw.seed, 0);
  const elche = ElCheConfig.resolve(raw.elche as ElCheConfigOptions | undefined);
  if (elche.partitionRatios && elche.partitionRatios.length !== worldSize) {
    throw invalidArgument(
      OP,
      'elche.partitionRatios',
      `${worldSize} ratios (one per rank)`,
      elche.partitionRatios,
    );
  }
  if (elche.speedHint && elche.speedHint.slowRank >= worldSize) {
    throw invalidArgument(OP, 'elche.speedHint.slowRank', `a rank < ${worldSize}`, elche.speedHint.slowRank);
  }
  const lrScaleRatio =
    raw.lrScaleRatio === undefined ? 1 : checkNumberInRange(OP, 'lrScaleRatio', raw.lrScaleRatio, 0, 1e6);
  const epochCallbackPolicy = checkPolicy(raw.epochCallbackPolicy, worldSize);
  const checkpointEvery =
    raw.checkpointEvery === undefined
      ? undefined
      : checkInteger(OP, 'checkpointEvery', raw.checkpointEvery, 1);
  const evalEveryEpochs =
    raw.evalEveryEpochs === undefined
      ? undefined
      : checkInteger(OP, 'evalEveryEpochs', raw.evalEveryEpochs, 1);
  const epochCallback =
    raw.epochCallback === undefined ? false : checkBoolean(OP, 'epochCallback', raw.epochCallback);
  const scale =
    raw.netTimeoutScale === undefined
      ? 1
      : Math.max(0.1, checkNumberInRange(OP, 'netTimeoutScale', raw.netTimeoutScale, 0, 1e6));
  const duration = (name: string, value: unknown, fallback: number) =>
    (value === undefined ? fallback : checkNumberInRange(OP, name, value, 1, 1e12)) * scale;
  const maxFailure = raw.maxFailure === undefined ? undefined : checkMaxFailure(raw.maxFailure);
  const heartbeatTimeoutMs = duration('heartbeatTimeoutMs', raw.heartbeatTimeoutMs, 30_000);
  const stallFactor =
    raw.stallFactor === undefined ? 10 : checkNumberInRange(OP, 'stallFactor', raw.stallFactor, 0, 1e6);
  const stallFloorMs =
    raw.stallFloorMs === undefined ? heartbeatTimeoutMs / 3 : duration('stallFloorMs', raw.stallFloorMs, 0);
  const minChunkBatches =
    raw.minChunkBatches === undefined
      ? MIN_CHUNK_BATCHES
      : checkInteger(OP, 'minChunkBatches', raw.minChunkBatches, 1);
  const progressive =
    raw.progressive === undefined
      ? isChunkedMode(elche.mode)
      : checkBoolean(OP, 'progressive', raw.progressive);
  const lookaheadBatches =
    raw.lookaheadBatches === undefined ? 0 : checkInteger(OP, 'lookaheadBatches', raw.lookaheadBatches, 0);
  const deviceIndices =
    raw.deviceIndices === undefined
      ? Array.from({ length: worldSize }, (_, rank) => rank)
      : checkDeviceIndices(raw.deviceIndices, worldSize);
  return Object.freeze({
    worldSize,
    totalSamples,
    batchSize,
    numEpochs,
    seed,
    elche,
    lrScaleRatio,
    epochCallbackPolicy,
    checkpointEvery,
    evalEveryEpochs,
    epochCallback,
    heartbeatTimeoutMs,
    stallFactor,
    stallFloorMs,
    // The beacon cadence is deliberately left unscaled (floDl).
    coordHeartbeatMs:
      raw.coordHeartbeatMs === undefined
        ? 1000
        : checkNumberInRange(OP, 'coordHeartbeatMs', raw.coordHeartbeatMs, 1, 1e12),
    reduceStallMs: duration('reduceStallMs', raw.reduceStallMs, 300_000),
    callbackTimeoutMs: duration('callbackTimeoutMs', raw.callbackTimeoutMs, 600_000),
    maxFailure,
    minChunkBatches,
    progressive,
    lookaheadBatches,
    deviceIndices,
    resume: raw.resume === undefined ? undefined : checkResume(raw.resume, numEpochs, totalSamples),
  });
}

function checkPolicy(value: unknown, worldSize: number): EpochCallbackPolicy {
  if (value === undefined || value === 'Fastest') return 'Fastest';
  const policy = checkOptionsObject(OP, 'epochCallbackPolicy', value);
  rejectUnknownKeys(OP, 'epochCallbackPolicy', policy, ['rank']);
  const rank = checkInteger(OP, 'epochCallbackPolicy.rank', policy.rank, 0);
  if (rank >= worldSize) throw invalidArgument(OP, 'epochCallbackPolicy.rank', `a rank < ${worldSize}`, rank);
  return Object.freeze({ rank });
}

/**
 * Validates a {@link MaxFailureThreshold}: `{ absolute: n ≥ 1 }` or `{ percent: p ∈ [0, 1] }`.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` naming `maxFailure` under `op`
 */
export function checkMaxFailure(value: unknown, op: string = OP): MaxFailureThreshold {
  const threshold = checkOptionsObject(op, 'maxFailure', value);
  if ('absolute' in threshold) {
    rejectUnknownKeys(op, 'maxFailure', threshold, ['absolute']);
    return Object.freeze({ absolute: checkInteger(op, 'maxFailure.absolute', threshold.absolute, 1) });
  }
  rejectUnknownKeys(op, 'maxFailure', threshold, ['percent']);
  return Object.freeze({ percent: checkNumberInRange(op, 'maxFailure.percent', threshold.percent, 0, 1) });
}

function checkDeviceIndices(value: unknown, worldSize: number): readonly number[] {
  if (
    !Array.isArray(value) ||
    value.length !== worldSize ||
    !value.every((entry) => Number.isInteger(entry) && entry >= 0)
  ) {
    throw invalidArgument(OP, 'deviceIndices', `${worldSize} integers >= 0`, value);
  }
  return Object.freeze([...(value as number[])]);
}
