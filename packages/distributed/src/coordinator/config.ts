import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkInteger,
  checkNumberInRange,
  checkOneOf,
  checkOptionsObject,
  rejectUnknownKeys,
} from './validate.js';

/**
 * The five averaging modes of floDl 0.7.0 (`ElCheMode`). The first word is the backend
 * (`Nccl`: an in-place device collective; `Cpu`: parameters averaged by mass on the
 * coordinator host), the second the policy (when to average).
 */
export type ElCheMode = 'NcclSync' | 'NcclCadence' | 'CpuSync' | 'CpuCadence' | 'CpuAsync';

/** Every {@link ElCheMode}, in floDl's order. */
export const EL_CHE_MODES: readonly ElCheMode[] = [
  'NcclSync',
  'NcclCadence',
  'CpuSync',
  'CpuCadence',
  'CpuAsync',
];

/**
 * True for the modes whose coordinator hands out each epoch in chunks as the ranks ask
 * (progressive dispatch, `CoordinatorOptions.progressive`'s default): every mode but the Sync
 * ones, which split each epoch into whole partitions.
 */
export function isChunkedMode(mode: ElCheMode): boolean {
  return !mode.endsWith('Sync');
}

/**
 * When to average (floDl `ApplyPolicy`): `Sync` after every step, `Cadence` when the slowest
 * rank has spent the anchor's wall time, `Async` when every rank has done its batch count.
 */
export type ApplyPolicy = 'Sync' | 'Cadence' | 'Async';

/** How to average (floDl `AverageBackend`). */
export type AverageBackend = 'Nccl' | 'Cpu';

/** The policy half of a mode. */
export function policyOf(mode: ElCheMode): ApplyPolicy {
  if (mode.endsWith('Sync')) return 'Sync';
  return mode.endsWith('Cadence') ? 'Cadence' : 'Async';
}

/** The backend half of a mode. */
export function backendOf(mode: ElCheMode): AverageBackend {
  return mode.startsWith('Nccl') ? 'Nccl' : 'Cpu';
}

/** Which convergence guard watches divergence: floDl's `LevelGuard` (`TrendGuard`) or `NoGuard`. */
export type ConvergenceGuardKind = 'level' | 'none';

/** A speed hint before any measurement (floDl `with_speed_ratio`): the slow rank and how much faster the rest are. */
export interface SpeedHint {
  readonly slowRank: number;
  readonly ratio: number;
}

/**
 * ElChe's configuration (floDl `ElCheConfig`), every value resolved. Build one with
 * {@link ElCheConfig.resolve} or a mode preset such as {@link ElCheConfig.cpuCadence}.
 */
export interface ElCheConfig {
  /** Averaging mode. Default `'NcclCadence'`. */
  readonly mode: ElCheMode;
  /** Batches the slow rank runs per window at start. Default 10 (1 for `NcclSync`). */
  readonly anchor: number;
  /** Floor of the overhead auto-tune's shrink path. Default: the initial anchor. */
  readonly minAnchor: number;
  /** Ceiling of anchor growth (staleness limit). Default 200. */
  readonly maxAnchor: number;
  /** Target per-window fixed overhead (reduce + fill) as a fraction of window wall. Default 0.05. */
  readonly overheadTarget: number;
  /** Largest lead (batches) of the fastest over the slowest rank; also caps one update's count change. Default none. */
  readonly maxBatchDiff: number | undefined;
  /** Async overshoot allowance in batches; `undefined` auto-tunes it (floDl 0.5.3 rule). */
  readonly maxOvershoot: number | undefined;
  /** Mass exponent: a contribution weighs `steps^gamma`. Default 1. */
  readonly gamma: number;
  /** Async only: let a Stable verdict relax the anchor up by one. Default false. */
  readonly relaxUp: boolean;
  /** Fixed per-rank partition ratios (normalised); overrides throughput partitions. Default none. */
  readonly partitionRatios: readonly number[] | undefined;
  /** LR-aware meta-controller (LR-cliff and sustained-verdict nudges). Default true. */
  readonly metaController: boolean;
  /** Convergence guard. Default `'level'`. */
  readonly convergenceGuard: ConvergenceGuardKind;
  /** Level guard threshold on ‖pre−post‖/‖post‖. Default 0.05, or 0.3 with EASGD. */
  readonly divergenceThreshold: number;
  /** Disable the divergence guard entirely (same as `convergenceGuard: 'none'`). Default false. */
  readonly noDivergenceGuard: boolean;
  /** EASGD blend α (`CpuAsync` only): ranks adopt `(1−α)·W + α·W_avg`. Default none (overwrite). */
  readonly easgdAlpha: number | undefined;
  /** bf16 parameters on the CPU data wire (CPU modes only). Default false. */
  readonly bf16Wire: boolean;
  /** Speed hint before the first measurement. Default none. */
  readonly speedHint: SpeedHint | undefined;
}

/** Options accepted by {@link ElCheConfig.resolve}: any subset of {@link ElCheConfig}. */
export type ElCheConfigOptions = { -readonly [K in keyof ElCheConfig]?: ElCheConfig[K] };

/** floDl's default anchor. */
export const DEFAULT_ANCHOR = 10;
/** Default anchor ceiling (floDl 0.5.3's `max_anchor`). */
export const DEFAULT_MAX_ANCHOR = 200;
/** floDl 0.6+ default overhead target. */
export const DEFAULT_OVERHEAD_TARGET = 0.05;
/** Level guard threshold. */
export const DEFAULT_DIVERGENCE_THRESHOLD = 0.05;
/** Level guard threshold when EASGD blends (replicas legitimately stay apart). */
export const EASGD_DIVERGENCE_THRESHOLD = 0.3;

const KNOWN_KEYS: readonly (keyof ElCheConfig)[] = [
  'mode',
  'anchor',
  'minAnchor',
  'maxAnchor',
  'overheadTarget',
  'maxBatchDiff',
  'maxOvershoot',
  'gamma',
  'relaxUp',
  'partitionRatios',
  'metaController',
  'convergenceGuard',
  'divergenceThreshold',
  'noDivergenceGuard',
  'easgdAlpha',
  'bf16Wire',
  'speedHint',
];

const OP = 'ElCheConfig';

function resolve(options?: ElCheConfigOptions): ElCheConfig {
  const raw = checkOptionsObject(OP, 'options', options);
  rejectUnknownKeys(OP, 'options', raw, KNOWN_KEYS);
  const mode = raw.mode === undefined ? 'NcclCadence' : checkOneOf(OP, 'mode', raw.mode, EL_CHE_MODES);
  const defaultAnchor = mode === 'NcclSync' ? 1 : DEFAULT_ANCHOR;
  const anchor = raw.anchor === undefined ? defaultAnchor : checkInteger(OP, 'anchor', raw.anchor, 1);
  const maxAnchor =
    raw.maxAnchor === undefined
      ? Math.max(DEFAULT_MAX_ANCHOR, anchor)
      : checkInteger(OP, 'maxAnchor', raw.maxAnchor, 1);
  const minAnchor = raw.minAnchor === undefined ? anchor : checkInteger(OP, 'minAnchor', raw.minAnchor, 1);
  if (minAnchor > maxAnchor || anchor > maxAnchor) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'anchor bounds are inconsistent', {
      op: OP,
      expected: 'minAnchor <= maxAnchor and anchor <= maxAnchor',
      got: `anchor ${anchor}, minAnchor ${minAnchor}, maxAnchor ${maxAnchor}`,
    });
  }
  const overheadTarget =
    raw.overheadTarget === undefined
      ? DEFAULT_OVERHEAD_TARGET
      : checkNumberInRange(OP, 'overheadTarget', raw.overheadTarget, 0.01, 0.5);
  const maxBatchDiff =
    raw.maxBatchDiff === undefined ? undefined : checkInteger(OP, 'maxBatchDiff', raw.maxBatchDiff, 0);
  const maxOvershoot =
    raw.maxOvershoot === undefined ? undefined : checkInteger(OP, 'maxOvershoot', raw.maxOvershoot, 0);
  const gamma = raw.gamma === undefined ? 1 : checkNumberInRange(OP, 'gamma', raw.gamma, 0, 16);
  const relaxUp = raw.relaxUp === undefined ? false : checkBoolean(OP, 'relaxUp', raw.relaxUp);
  const partitionRatios = raw.partitionRatios === undefined ? undefined : checkRatios(raw.partitionRatios);
  const metaController =
    raw.metaController === undefined ? true : checkBoolean(OP, 'metaController', raw.metaController);
  const noDivergenceGuard =
    raw.noDivergenceGuard === undefined
      ? false
      : checkBoolean(OP, 'noDivergenceGuard', raw.noDivergenceGuard);
  const guardChoice =
    raw.convergenceGuard === undefined
      ? 'level'
      : checkOneOf(OP, 'convergenceGuard', raw.convergenceGuard, ['level', 'none'] as const);
  const easgdAlpha =
    raw.easgdAlpha === undefined ? undefined : checkNumberInRange(OP, 'easgdAlpha', raw.easgdAlpha, 0, 1);
  if (easgdAlpha !== undefined && (mode !== 'CpuAsync' || easgdAlpha === 0)) {
    throw invalidArgument(
      OP,
      'easgdAlpha',
      "a blend α in (0, 1] with mode 'CpuAsync'",
      `${easgdAlpha} with ${mode}`,
    );
  }
  const divergenceThreshold =
    raw.divergenceThreshold === undefined
      ? easgdAlpha === undefined
        ? DEFAULT_DIVERGENCE_THRESHOLD
        : EASGD_DIVERGENCE_THRESHOLD
      : checkNumberInRange(OP, 'divergenceThreshold', raw.divergenceThreshold, 0, Number.MAX_VALUE);
  const bf16Wire = raw.bf16Wire === undefined ? false : checkBoolean(OP, 'bf16Wire', raw.bf16Wire);
  if (bf16Wire && backendOf(mode) !== 'Cpu') {
    throw invalidArgument(OP, 'bf16Wire', 'a CPU mode (bf16 travels on the CPU data wire only)', mode);
  }
  const speedHint = raw.speedHint === undefined ? undefined : checkSpeedHint(raw.speedHint);
  return Object.freeze({
    mode,
    anchor,
    minAnchor,
    maxAnchor,
    overheadTarget,
    maxBatchDiff,
    maxOvershoot,
    gamma,
    relaxUp,
    partitionRatios,
    metaController,
    convergenceGuard: noDivergenceGuard ? 'none' : guardChoice,
    divergenceThreshold,
    noDivergenceGuard,
    easgdAlpha,
    bf16Wire,
    speedHint,
  });
}

function checkRatios(value: unknown): readonly number[] {
  const ok =
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((entry) => typeof entry === 'number' && Number.isFinite(entry) && entry >= 0) &&
    value.reduce((sum: number, entry: number) => sum + entry, 0) > 0;
  if (!ok) throw invalidArgument(OP, 'partitionRatios', 'finite ratios >= 0 with a positive sum', value);
  return Object.freeze([...(value as number[])]);
}

function checkSpeedHint(value: unknown): SpeedHint {
  const hint = checkOptionsObject(OP, 'speedHint', value);
  rejectUnknownKeys(OP, 'speedHint', hint, ['slowRank', 'ratio']);
  const slowRank = checkInteger(OP, 'speedHint.slowRank', hint.slowRank, 0);
  const ratio = checkNumberInRange(OP, 'speedHint.ratio', hint.ratio, 1, 1e6);
  return Object.freeze({ slowRank, ratio });
}

function preset(mode: ElCheMode) {
  return (options?: Omit<ElCheConfigOptions, 'mode'>): ElCheConfig => resolve({ ...options, mode });
}

/**
 * Builders of {@link ElCheConfig}: `resolve(options)` validates and fills floDl's defaults;
 * the five presets fix the mode. `ncclSync()` is the degenerate anchor = 1 case, so all five
 * modes share one code path.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` for an unknown option, a value out of range,
 *   `easgdAlpha` outside `CpuAsync`, or `bf16Wire` on an NCCL mode.
 * @example
 * ```ts
 * const config = ElCheConfig.cpuAsync({ easgdAlpha: 0.5 });
 * config.divergenceThreshold; // 0.3
 * ```
 * floDl: `ElCheConfig::cpu_async().easgd_alpha(0.5)`.
 */
export const ElCheConfig = Object.freeze({
  resolve,
  ncclSync: preset('NcclSync'),
  ncclCadence: preset('NcclCadence'),
  cpuSync: preset('CpuSync'),
  cpuCadence: preset('CpuCadence'),
  cpuAsync: preset('CpuAsync'),
});
