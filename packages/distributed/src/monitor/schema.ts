/**
 * The metrics log's records: one JSON object per line (JSON Lines), the first line a
 * {@link RunStartRecord} naming the schema version.
 *
 * Every record has `kind` (its variant) and `t` (wall-clock ms since the Unix epoch, when the
 * launcher saw it). Version 1 is append-only: new kinds and new optional fields may come; a
 * field's meaning never changes. A reader skips kinds it does not know.
 */
import type { RankDeathRecord } from '../coordinator/membership.js';
import type { VerdictKind } from '../coordinator/messages.js';
import type { EpochMetrics, SaveReason } from '../wire/messages.js';

/** The schema version this package writes (the `version` of the first line). */
export const METRICS_LOG_VERSION = 1;

/** The first line of every log: what ran. */
export interface RunStartRecord {
  kind: 'run';
  t: number;
  /** {@link METRICS_LOG_VERSION} of the writer. */
  version: number;
  /** A label for the run (the script, the model). */
  name?: string;
  /** The launch mode, e.g. `CpuCadence`; absent for a single-process run. */
  mode?: string;
  /** Ranks at start (1 for a single-process run). */
  worldSize: number;
  /** Planned epochs, when known. */
  epochs?: number;
  /** Samples per epoch, when known. */
  samplesPerEpoch?: number;
}

/** The cohort formed: every rank joined. */
export interface FormedRecord {
  kind: 'formed';
  t: number;
  worldSize: number;
}

/** One epoch, aggregated over every rank by the coordinator (the wire's `EpochMetrics`, whole). */
export interface EpochRecord {
  kind: 'epoch';
  t: number;
  metrics: EpochMetrics;
}

/** One sampled training step of one rank. */
export interface StepRecord {
  kind: 'step';
  t: number;
  rank: number;
  /** The rank's step count, this step included. */
  step: number;
  /** The step's loss (`null` when it was not finite). */
  loss: number | null;
  /** Wall time of the step, ms. */
  stepMs: number;
  /** Part of it spent waiting for data, ms. */
  dataMs?: number;
  /** The rank's learning rate (its last `LrUpdate`), when it reported one. */
  lr?: number;
}

/** An eval result (the elected rank's, on a cluster). */
export interface EvalRecord {
  kind: 'eval';
  t: number;
  epoch: number;
  metric: number;
  rank?: number;
  /** The eval callback failed: `metric` is meaningless. */
  error?: string;
}

/** An ElChe averaging decision: the cadence (anchor, per-rank window) and the phase. */
export interface ElcheRecord {
  kind: 'elche';
  t: number;
  /** The averaging round. */
  version: number;
  /** The ElChe phase after the round, e.g. `Warmup`, `Stable`. */
  phase: string;
  /** Batches the slowest rank runs per window. */
  anchor: number;
  /** Batches each rank runs per window from now on (the window size), by rank. */
  window: number[];
  /** Realized steps per rank in the averaged window. */
  steps: number[];
  globalStep: number;
  verdict: VerdictKind;
  /** Time the round took, ms. */
  syncMs: number;
}

/** ElChe moved its anchor outside a round. */
export interface AnchorRecord {
  kind: 'anchor';
  t: number;
  from: number;
  to: number;
}

/** An averaging round started (`ranks` asked for their state). */
export interface RoundStartRecord {
  kind: 'round-start';
  t: number;
  version: number;
  ranks: number[];
}

/** An averaging round completed. */
export interface RoundRecord {
  kind: 'round';
  t: number;
  version: number;
  /** Ranks whose contributions entered the average. */
  accepted: number[];
  /** Σ mass of the accepted contributions (the divisor). */
  totalMass: number;
  /** Host modes: each accepted rank's mass, by rank. */
  masses?: Record<string, number>;
  /** Host modes: ranks of the round that died before it completed. */
  dropped?: number[];
}

/** A rank was declared dead. */
export interface RankDeathLogRecord {
  kind: 'death';
  t: number;
  rank: number;
  cause: string;
  message: string;
  exitCode?: number;
  signal?: string;
  lastStep?: number;
}

/** Collective modes: the survivors re-formed their process group. */
export interface ReformRecord {
  kind: 'reform';
  t: number;
  /** The survivors, by global rank. */
  ranks: number[];
  worldSize: number;
}

/** A rank process ended. */
export interface ExitRecord {
  kind: 'exit';
  t: number;
  rank: number;
  exitCode: number | null;
  signal: string | null;
}

/** A checkpoint was saved (or failed). */
export interface CheckpointRecord {
  kind: 'checkpoint';
  t: number;
  /** The averaging round it captures (or the epoch, single-process). */
  version: number;
  rank?: number;
  /** Where it was written, when known. */
  path?: string;
  error?: string;
  /** Every live rank failed this version. */
  gaveUp?: boolean;
}

/** The run ended. */
export interface FinishedRecord {
  kind: 'finished';
  t: number;
  reason: 'Completed' | SaveReason | 'Failed';
  failedRanks: number[];
}

/** Every record of version 1. */
export type MonitorRecord =
  | RunStartRecord
  | FormedRecord
  | EpochRecord
  | StepRecord
  | EvalRecord
  | ElcheRecord
  | AnchorRecord
  | RoundStartRecord
  | RoundRecord
  | RankDeathLogRecord
  | ReformRecord
  | ExitRecord
  | CheckpointRecord
  | FinishedRecord;

/** The `kind` of a record. */
export type MonitorRecordKind = MonitorRecord['kind'];

/** The kinds of version 1, in the order they were added. */
export const MONITOR_RECORD_KINDS = [
  'run',
  'formed',
  'epoch',
  'step',
  'eval',
  'elche',
  'anchor',
  'round-start',
  'round',
  'death',
  'reform',
  'exit',
  'checkpoint',
  'finished',
] as const satisfies readonly MonitorRecordKind[];

/** A record as given to a writer: `t` is filled in when absent. */
export type MonitorRecordInput = MonitorRecord extends infer R
  ? R extends MonitorRecord
    ? Omit<R, 't'> & { t?: number }
    : never
  : never;

/** The death record's log form. */
export function deathRecord(record: RankDeathRecord, t: number): RankDeathLogRecord {
  return {
    kind: 'death',
    t,
    rank: record.rank,
    cause: record.cause,
    message: record.message,
    ...(record.exitCode === undefined ? {} : { exitCode: record.exitCode }),
    ...(record.signal === undefined ? {} : { signal: record.signal }),
    ...(record.lastStepCount === undefined ? {} : { lastStep: record.lastStepCount }),
  };
}
