// Writes a checkpoint bundle: the model, the optimizer, the scheduler, then the meta that marks
// it complete. Every file is written atomically (a temporary file, fsync, rename), and the old
// meta of the stem goes first, so a crash at any point leaves either the new bundle whole or
// this stem incomplete (skipped by `resumeFrom`), and every other bundle untouched. Each file's
// SHA-256 is taken from its bytes in memory as it is written and recorded in the meta.

import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import type { ElCheState } from '@flodl/distributed';
import { type LRScheduler, type Optimizer, save, saveOptimizer, writeFileAtomic } from '@flodl/nn';
import { type Device, FlodlError, getRngState } from '@flodl/tensor-native';
import type { AnyModule } from '../runtime/types.js';
import { checksumOfBytes, checksumOfFile, hexOf, newDigest } from './checksum.js';
import {
  type BundleFile,
  type BundleReason,
  CHECKPOINT_FORMAT,
  CHECKPOINT_VERSION,
  type CheckpointMeta,
  type DataCursor,
} from './meta.js';
import { bundlePaths } from './paths.js';

/** What a bundle is written from: the rank's objects and where its training stands. */
export interface BundleSource {
  model: AnyModule;
  optimizer: Optimizer;
  scheduler: LRScheduler | undefined;
  device: Device;
  rank: number;
  worldSize: number;
  mode: string;
  membership: number[];
  seed: number;
  batchSize: number;
  datasetLength: number;
  globalStep: number;
  localStep: number;
  stepsSinceAvg: number;
  averagingCount: number;
  cursor: DataCursor;
  /** The positions of `cursor.epoch`'s permutation trained, `[from, to)` (every rank's, in a cluster bundle). */
  covered: [number, number][];
  /** The ranks alive at the save. Default `membership`. */
  live?: number[];
  /** The ranks lost by the save. Default none. */
  lost?: number[];
  /** The cluster coordinator's ElChe state at the save. Default none. */
  elche?: ElCheState | null;
  /** The convergence guard's history at the save. Default none. */
  guardHistory?: number[];
}

/** A cluster bundle's shared parts: its id (every rank's files carry it) and the other ranks' optimizer files. */
export interface BundleShare {
  bundleId: string;
  /**
   * Optimizer files other ranks wrote into this bundle, by rank, with their SHA-256 where the
   * caller has it (else the file is hashed from disk here).
   */
  optimizers: Map<number, string | { path: string; sha256: string }>;
}

/** A file of the bundle as written: its path and SHA-256. */
export interface WrittenFile {
  path: string;
  sha256: string;
}

/** Metadata key of a rank's optimizer file: its coverage of the epoch in progress, as JSON. */
export const COVERED_METADATA_KEY = 'flodl.covered';

/**
 * Writes rank `source.rank`'s optimizer state into the bundle `bundleId` at `stem`, with the
 * positions it trained of its epoch in progress (a cluster bundle gathers every rank's).
 *
 * @throws FlodlError ERR_IO when the file cannot be written
 */
export function writeRankPart(stem: string, source: BundleSource, bundleId: string): WrittenFile {
  const path = bundlePaths(stem).optimizer(source.rank);
  try {
    mkdirSync(dirname(path), { recursive: true });
  } catch (error) {
    throw ioError(path, error);
  }
  const digest = newDigest();
  saveOptimizer(source.optimizer, path, {
    metadata: {
      'flodl.bundle': bundleId,
      [COVERED_METADATA_KEY]: JSON.stringify({ epoch: source.cursor.epoch, spans: source.covered }),
    },
    digest,
  });
  return { path, sha256: hexOf(digest) };
}

/**
 * Writes the bundle of `source` at `stem` (its folder created when missing) and returns its meta.
 *
 * @throws FlodlError ERR_IO when a file cannot be written (the stem is left without its meta:
 *   incomplete; other bundles are untouched)
 */
export function writeBundle(
  stem: string,
  source: BundleSource,
  reason: BundleReason,
  share?: BundleShare,
): CheckpointMeta {
  const paths = bundlePaths(stem);
  const bundleId = share?.bundleId ?? randomBytes(8).toString('hex');
  const tag = { 'flodl.bundle': bundleId };
  try {
    mkdirSync(dirname(paths.meta), { recursive: true });
    rmSync(paths.meta, { force: true });
  } catch (error) {
    throw ioError(paths.meta, error);
  }
  const modelDigest = newDigest();
  save(source.model, paths.model, {
    metadata: { ...tag, 'flodl.format': CHECKPOINT_FORMAT },
    digest: modelDigest,
  });
  const model = fileEntry(paths.model, hexOf(modelDigest));
  const ownOptimizer = writeRankPart(stem, source, bundleId);
  let scheduler: BundleFile | null = null;
  if (source.scheduler) {
    const sha256 = writeText(
      paths.scheduler,
      `${JSON.stringify({ bundleId, state: source.scheduler.stateDict() }, null, 2)}\n`,
    );
    scheduler = fileEntry(paths.scheduler, sha256);
  }
  const rng: Record<string, string> = { cpu: Buffer.from(getRngState('cpu')).toString('base64') };
  if (source.device !== 'cpu') {
    const device = source.device === 'cuda' ? 'cuda:0' : source.device;
    rng[device] = Buffer.from(getRngState(device)).toString('base64');
  }
  const { cursor } = source;
  const meta: CheckpointMeta = {
    format: CHECKPOINT_FORMAT,
    version: CHECKPOINT_VERSION,
    bundleId,
    reason,
    savedAt: new Date().toISOString(),
    epoch: cursor.epoch,
    globalStep: source.globalStep,
    localStep: source.localStep,
    stepsSinceAvg: source.stepsSinceAvg,
    averagingCount: source.averagingCount,
    mode: source.mode,
    worldSize: source.worldSize,
    membership: [...source.membership],
    live: [...(source.live ?? source.membership)],
    lost: [...(source.lost ?? [])],
    seed: source.seed,
    batchSize: source.batchSize,
    datasetLength: source.datasetLength,
    cursor: { ...cursor },
    coverage: {
      epoch: cursor.epoch,
      totalSamples: source.datasetLength,
      covered: source.covered,
    },
    rng,
    elche: source.elche ?? null,
    guardHistory: [...(source.guardHistory ?? [])],
    files: {
      model,
      optimizer: Object.fromEntries(
        [[source.rank, ownOptimizer] as const, ...(share?.optimizers ?? [])]
          .sort(([left], [right]) => left - right)
          .map(([rank, file]) => [String(rank), otherFileEntry(file)]),
      ),
      scheduler,
    },
  };
  writeText(paths.meta, `${JSON.stringify(meta, null, 2)}\n`);
  syncFolder(dirname(paths.meta));
  return meta;
}

/** Writes a JSON file of the bundle atomically; returns its SHA-256. */
function writeText(path: string, text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  writeFileAtomic(path, [bytes], 'writeBundle');
  return checksumOfBytes(bytes);
}

function fileEntry(path: string, sha256: string): BundleFile {
  return { name: basename(path), bytes: statSync(path).size, sha256 };
}

/** The entry of an optimizer file: hashed as written, or (another rank's, without one) from disk. */
function otherFileEntry(file: string | WrittenFile): BundleFile {
  if (typeof file !== 'string') return fileEntry(file.path, file.sha256);
  let sha256: string;
  try {
    sha256 = checksumOfFile(file);
  } catch (error) {
    throw new FlodlError(
      'ERR_IO',
      `could not read ${file} to record its checksum: ${(error as Error).message}`,
      {
        op: 'writeBundle',
        cause: error,
      },
    );
  }
  return fileEntry(file, sha256);
}

/** Makes the renames in `folder` durable (best effort: not every file system allows it). */
function syncFolder(folder: string): void {
  let descriptor: number | undefined;
  try {
    descriptor = openSync(folder, 'r');
    fsyncSync(descriptor);
  } catch {
    // a folder that cannot be opened or flushed (some platforms) keeps the rename's own ordering
  } finally {
    if (descriptor !== undefined) closeSync(descriptor);
  }
}

function ioError(path: string, error: unknown): FlodlError {
  return new FlodlError('ERR_IO', `could not write ${path}: ${(error as Error).message}`, {
    op: 'writeBundle',
    cause: error,
  });
}
