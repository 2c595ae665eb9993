// Writes a checkpoint bundle: the model, the optimizer, the scheduler, then the meta that marks
// it complete. Every file is written atomically (a temporary file, fsync, rename), and the old
// meta of the stem goes first, so a crash at any point leaves either the new bundle whole or
// this stem incomplete (skipped by `resumeFrom`), and every other bundle untouched.

import { randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, mkdirSync, openSync, rmSync, statSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import { type LRScheduler, type Optimizer, save, saveOptimizer, writeFileAtomic } from '@flodl/nn';
import { type Device, FlodlError, getRngState } from '@flodl/tensor-native';
import type { AnyModule } from '../runtime/types.js';
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
  /** The positions of `cursor.epoch`'s permutation the saving rank trained, `[from, to)`. */
  covered: [number, number][];
  elche?: Record<string, unknown> | null;
}

/**
 * Writes the bundle of `source` at `stem` (its folder created when missing) and returns its meta.
 *
 * @throws FlodlError ERR_IO when a file cannot be written (the stem is left without its meta:
 *   incomplete; other bundles are untouched)
 */
export function writeBundle(stem: string, source: BundleSource, reason: BundleReason): CheckpointMeta {
  const paths = bundlePaths(stem);
  const bundleId = randomBytes(8).toString('hex');
  const tag = { 'flodl.bundle': bundleId };
  try {
    mkdirSync(dirname(paths.meta), { recursive: true });
    rmSync(paths.meta, { force: true });
  } catch (error) {
    throw ioError(paths.meta, error);
  }
  save(source.model, paths.model, { metadata: { ...tag, 'flodl.format': CHECKPOINT_FORMAT } });
  const optimizerPath = paths.optimizer(source.rank);
  saveOptimizer(source.optimizer, optimizerPath, { metadata: tag });
  let scheduler: BundleFile | null = null;
  if (source.scheduler) {
    writeText(
      paths.scheduler,
      `${JSON.stringify({ bundleId, state: source.scheduler.stateDict() }, null, 2)}\n`,
    );
    scheduler = fileEntry(paths.scheduler);
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
    seed: source.seed,
    batchSize: source.batchSize,
    datasetLength: source.datasetLength,
    cursor: { ...cursor },
    coverage: {
      epoch: cursor.epoch,
      totalSamples: source.datasetLength,
      covered:
        cursor.batch === 0 ? [] : [[0, Math.min(source.datasetLength, cursor.batch * source.batchSize)]],
    },
    rng,
    elche: source.elche ?? null,
    files: {
      model: fileEntry(paths.model),
      optimizer: { [String(source.rank)]: fileEntry(optimizerPath) },
      scheduler,
    },
  };
  writeText(paths.meta, `${JSON.stringify(meta, null, 2)}\n`);
  syncFolder(dirname(paths.meta));
  return meta;
}

/** Writes a JSON file of the bundle atomically. */
function writeText(path: string, text: string): void {
  writeFileAtomic(path, [Buffer.from(text, 'utf8')], 'writeBundle');
}

function fileEntry(path: string): BundleFile {
  return { name: basename(path), bytes: statSync(path).size };
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
