// A checkpoint bundle's `<stem>.meta.json`: what a run needs to continue exactly where it was
// saved, beside the weights and optimizer files. It is written last, so it marks the bundle
// complete; reading it checks every field before anything is restored.

import { readFileSync, statSync } from 'node:fs';
import type { ElCheState } from '@flodl/distributed';
import { isSpanList } from '@flodl/distributed/coordinator';
import { FlodlError } from '@flodl/tensor-native';
import { isChecksum } from './checksum.js';

/** The `format` of every bundle's meta file. */
export const CHECKPOINT_FORMAT = 'flodl.checkpoint';
/**
 * The meta version this flodl writes (and the newest it reads). Version 2 added the
 * coordinator's state (`elche` typed, `guardHistory`) and the live membership (`live`,
 * `lost`); version 1 metas read with those empty. Version 3 added each file's SHA-256
 * (`files.*.sha256`); the files of an older bundle are checked by size and bundle id only.
 */
export const CHECKPOINT_VERSION = 3;
/** The first meta version whose files carry a checksum. */
export const CHECKSUM_VERSION = 3;
/** Meta files larger than this are refused before they are read. */
export const MAX_META_BYTES = 16 * 1024 * 1024;
/** A generator state (base64) longer than this is refused (the CPU's is 5 056 bytes). */
const MAX_RNG_STATE_CHARS = 1024 * 1024;

/** Why a bundle was written. */
export type BundleReason =
  /** `checkpointEvery(n)`. */
  | 'every'
  /** `checkpointAtEpoch(e)`. */
  | 'atEpoch'
  /** `requestCheckpoint()`. */
  | 'request'
  /** The coordinator ended the run with ShutdownWithSave. */
  | 'shutdownWithSave'
  /** The run was stopped (`handle.stop()`, a Worker finished early). */
  | 'stop'
  /** The run completed. */
  | 'final';

const BUNDLE_REASONS: readonly BundleReason[] = [
  'every',
  'atEpoch',
  'request',
  'shutdownWithSave',
  'stop',
  'final',
];

/**
 * Where training stands in the data: the epoch in progress and the batches of it already
 * trained (their steps taken), with the epoch's running totals so its metrics come out whole.
 */
export interface DataCursor {
  epoch: number;
  /** Batches of `epoch` trained; 0 at an epoch boundary. */
  batch: number;
  /** Σ of those batches' losses. */
  totalLoss: number;
  /** Their compute and data-wait time, ms. */
  computeMs: number;
  dataMs: number;
  /** The `recordScalar` totals of those batches, by name. */
  scalars?: Record<string, { sum: number; count: number }>;
}

/** One file of the bundle, as the meta names it. */
export interface BundleFile {
  /** The file name, in the meta file's folder. */
  name: string;
  bytes: number;
  /** The file's SHA-256, lowercase hex (version 3; absent in an older meta). */
  sha256?: string;
}

/** The contents of `<stem>.meta.json`. */
export interface CheckpointMeta {
  format: typeof CHECKPOINT_FORMAT;
  version: number;
  /** Random id shared by every file of the bundle (a file of another bundle is refused). */
  bundleId: string;
  reason: BundleReason;
  /** ISO time of the save. */
  savedAt: string;
  /** The epoch in progress (`cursor.epoch`). */
  epoch: number;
  /** The LR clock the coordinator last set (0 on one device). */
  globalStep: number;
  /** Optimizer steps of the saving rank. */
  localStep: number;
  /** Steps since the last averaging round (on one device: every step). */
  stepsSinceAvg: number;
  /** Averaging rounds applied so far. */
  averagingCount: number;
  /** The averaging mode, or `'single'` on one device. */
  mode: string;
  worldSize: number;
  /** The ranks of the run at its formation (0 … worldSize − 1). */
  membership: number[];
  /** The ranks alive at the save (version 2; a version-1 meta reads `membership`). */
  live: number[];
  /** The ranks the run had lost by the save (version 2; empty in a version-1 meta). */
  lost: number[];
  /** The shuffle seed (every epoch's permutation derives from it). */
  seed: number;
  batchSize: number;
  /** Samples per epoch (the dataset's length). */
  datasetLength: number;
  cursor: DataCursor;
  /** The samples of the epoch in progress already trained, as `[from, to)` permutation positions. */
  coverage: { epoch: number; totalSamples: number; covered: [number, number][] };
  /** Every default generator's state (base64), by device: `cpu`, `cuda:N`. */
  rng: Record<string, string>;
  /**
   * The cadence controller's state (its calibrated speeds, anchor, phase), where the run has
   * one: a cluster's coordinator at the save.
   */
  elche: ElCheState | null;
  /** The convergence guard's history at the save (version 2; empty in a version-1 meta). */
  guardHistory: number[];
  files: {
    model: BundleFile;
    /** Per rank: its optimizer's state. */
    optimizer: Record<string, BundleFile>;
    scheduler: BundleFile | null;
  };
}

/** Throws the typed error of a bad bundle file. */
export function checkpointError(
  path: string,
  problem: string,
  extra: { expected?: string; got?: string; cause?: unknown } = {},
): FlodlError {
  return new FlodlError('ERR_CHECKPOINT', `${path}: ${problem}`, {
    op: 'resumeFrom',
    ...extra,
    ...(extra.expected === undefined ? { expected: 'a checkpoint bundle flodl wrote' } : {}),
  });
}

/**
 * Reads and checks `<stem>.meta.json`: the size before reading, then every field's type.
 *
 * @throws FlodlError ERR_CHECKPOINT naming the file (missing, too large, not JSON, another
 *   format or a newer version, a field missing or of the wrong type)
 */
export function readMeta(path: string): CheckpointMeta {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (error) {
    throw checkpointError(path, 'cannot be read', { got: (error as Error).message, cause: error });
  }
  if (size > MAX_META_BYTES)
    throw checkpointError(path, 'is too large for a checkpoint meta file', {
      expected: `at most ${MAX_META_BYTES} bytes`,
      got: `${size} bytes`,
    });
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw checkpointError(path, 'is not JSON', { got: (error as Error).message, cause: error });
  }
  return checkMeta(path, value);
}

function checkMeta(path: string, value: unknown): CheckpointMeta {
  const meta = value as Partial<CheckpointMeta> | null;
  if (typeof meta !== 'object' || meta === null || meta.format !== CHECKPOINT_FORMAT)
    throw checkpointError(path, 'is not a checkpoint meta file', {
      expected: `format '${CHECKPOINT_FORMAT}'`,
      got: typeof meta === 'object' && meta !== null ? `format ${JSON.stringify(meta.format)}` : typeof meta,
    });
  if (!Number.isSafeInteger(meta.version) || (meta.version as number) < 1)
    throw checkpointError(path, 'has no valid version', { got: JSON.stringify(meta.version) });
  if ((meta.version as number) > CHECKPOINT_VERSION)
    throw checkpointError(path, 'was written by a newer flodl', {
      expected: `version <= ${CHECKPOINT_VERSION}`,
      got: `version ${meta.version}`,
    });
  const field = (name: string, ok: boolean, expected: string, got: unknown): void => {
    if (!ok)
      throw checkpointError(path, `has an invalid ${name}`, {
        expected,
        got: JSON.stringify(got) ?? 'nothing',
      });
  };
  const count = (name: keyof CheckpointMeta): void => {
    const item = meta[name];
    field(name, Number.isSafeInteger(item) && (item as number) >= 0, 'an integer >= 0', item);
  };
  for (const name of [
    'epoch',
    'globalStep',
    'localStep',
    'stepsSinceAvg',
    'averagingCount',
    'seed',
    'worldSize',
  ] as const)
    count(name);
  for (const name of ['batchSize', 'datasetLength'] as const) {
    field(
      name,
      Number.isSafeInteger(meta[name]) && (meta[name] as number) > 0,
      'a positive integer',
      meta[name],
    );
  }
  field(
    'bundleId',
    typeof meta.bundleId === 'string' && /^[0-9a-f]{8,64}$/.test(meta.bundleId),
    'a hex id',
    meta.bundleId,
  );
  field(
    'reason',
    BUNDLE_REASONS.includes(meta.reason as BundleReason),
    BUNDLE_REASONS.join(' | '),
    meta.reason,
  );
  field('mode', typeof meta.mode === 'string', 'a mode name', meta.mode);
  field('savedAt', typeof meta.savedAt === 'string', 'an ISO time', meta.savedAt);
  field(
    'membership',
    Array.isArray(meta.membership) &&
      meta.membership.every((rank) => Number.isSafeInteger(rank) && rank >= 0),
    'a list of ranks',
    meta.membership,
  );
  const cursor = meta.cursor as Partial<DataCursor> | undefined;
  const batches = Math.floor((meta.datasetLength as number) / (meta.batchSize as number));
  field(
    'cursor',
    typeof cursor === 'object' &&
      cursor !== null &&
      cursor.epoch === meta.epoch &&
      Number.isSafeInteger(cursor.batch) &&
      (cursor.batch as number) >= 0 &&
      (cursor.batch as number) <= batches &&
      [cursor.totalLoss, cursor.computeMs, cursor.dataMs].every((item) => typeof item === 'number') &&
      (cursor.scalars === undefined ||
        (typeof cursor.scalars === 'object' &&
          cursor.scalars !== null &&
          Object.values(cursor.scalars).every(
            (entry) =>
              typeof entry?.sum === 'number' && Number.isSafeInteger(entry?.count) && entry.count >= 0,
          ))),
    `{ epoch: ${meta.epoch}, batch: 0..${batches}, totalLoss, computeMs, dataMs, scalars? }`,
    cursor,
  );
  const rng = meta.rng as Record<string, unknown> | undefined;
  field(
    'rng',
    typeof rng === 'object' &&
      rng !== null &&
      Object.entries(rng).every(
        ([device, state]) =>
          /^(cpu|cuda:\d{1,3})$/.test(device) &&
          typeof state === 'string' &&
          state.length <= MAX_RNG_STATE_CHARS &&
          /^[A-Za-z0-9+/]*={0,2}$/.test(state),
      ),
    '{ cpu: base64, "cuda:N": base64 }',
    rng === undefined ? undefined : Object.keys(rng as object),
  );
  const files = meta.files as Partial<CheckpointMeta['files']> | undefined;
  const isFile = (file: unknown): file is BundleFile =>
    typeof file === 'object' &&
    file !== null &&
    typeof (file as BundleFile).name === 'string' &&
    /^[^/\\]+$/.test((file as BundleFile).name) &&
    Number.isSafeInteger((file as BundleFile).bytes) &&
    (file as BundleFile).bytes >= 0 &&
    ((meta.version as number) < CHECKSUM_VERSION || isChecksum((file as BundleFile).sha256));
  field(
    'files',
    typeof files === 'object' &&
      files !== null &&
      isFile(files.model) &&
      typeof files.optimizer === 'object' &&
      files.optimizer !== null &&
      Object.entries(files.optimizer).every(([rank, file]) => /^\d+$/.test(rank) && isFile(file)) &&
      (files.scheduler === null || isFile(files.scheduler)),
    (meta.version as number) < CHECKSUM_VERSION
      ? '{ model, optimizer: { rank: file }, scheduler } with plain file names'
      : '{ model, optimizer: { rank: file }, scheduler }: plain file names, each with its sha256',
    files,
  );
  const coverage = meta.coverage as CheckpointMeta['coverage'] | undefined;
  field(
    'coverage',
    typeof coverage === 'object' &&
      coverage !== null &&
      coverage.epoch === meta.epoch &&
      coverage.totalSamples === meta.datasetLength &&
      isSpanList(coverage.covered, meta.datasetLength as number),
    '{ epoch, totalSamples, covered: [from, to)[] }',
    coverage,
  );
  // Version 2's fields: a version-1 meta reads with them empty.
  const ranks = (name: 'live' | 'lost', fallback: number[]): void => {
    const item = (meta as Record<string, unknown>)[name];
    if (item === undefined && meta.version === 1) {
      (meta as Record<string, unknown>)[name] = fallback;
      return;
    }
    field(
      name,
      Array.isArray(item) && item.every((rank) => Number.isSafeInteger(rank) && rank >= 0),
      'a list of ranks',
      item,
    );
  };
  ranks('live', [...(meta.membership as number[])]);
  ranks('lost', []);
  if (meta.guardHistory === undefined && meta.version === 1) meta.guardHistory = [];
  field(
    'guardHistory',
    Array.isArray(meta.guardHistory) && meta.guardHistory.every((item) => Number.isFinite(item)),
    'a list of numbers',
    meta.guardHistory,
  );
  const elche = meta.elche as Partial<ElCheState> | null | undefined;
  field(
    'elche',
    elche === null ||
      (typeof elche === 'object' &&
        elche !== undefined &&
        Array.isArray(elche.smoothedMsPerBatch) &&
        elche.smoothedMsPerBatch.every((ms) => Number.isFinite(ms)) &&
        Number.isFinite(elche.anchor) &&
        Number.isSafeInteger(elche.calibrationCount) &&
        typeof elche.phase === 'string'),
    'null or { anchor, anchorRank, smoothedMsPerBatch, phase, calibrationCount }',
    elche,
  );
  return meta as CheckpointMeta;
}
