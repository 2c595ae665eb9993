// Reads a checkpoint bundle back and restores a rank from it. Everything is checked before
// anything is restored: the meta, each file's size against the meta (a truncated file is
// refused before it is read), each file's bundle id (a file of another bundle is refused),
// then each file's SHA-256 against the meta's (a file changed in place is refused).

import { readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { type LRScheduler, load, loadOptimizer, type Optimizer, readSafetensorsMetadata } from '@flodl/nn';
import { type Device, FlodlError, setRngState } from '@flodl/tensor-native';
import type { AnyModule } from '../runtime/types.js';
import { checksumOfFile } from './checksum.js';
import { type BundleFile, type CheckpointMeta, checkpointError, MAX_META_BYTES, readMeta } from './meta.js';
import { bundlePaths, olderBundles, resolveBundle } from './paths.js';

/** A bundle read and checked: its meta and the paths of its files. */
export interface CheckpointBundle {
  /** The stem the files are named from. */
  stem: string;
  meta: CheckpointMeta;
  /** `<stem>.safetensors`. */
  model: string;
  /** Each saved rank's optimizer file, by rank. */
  optimizers: Map<number, string>;
  scheduler: string | undefined;
}

/**
 * Reads the bundle `resumeFrom(stem)` would resume from (`stem` itself, or the newest complete
 * periodic bundle of `stem` as a `savePath`) and checks every file of it, creating no tensor:
 * its size, its bundle id and (a version-3 bundle) its SHA-256 against the meta, which reads
 * each file once. A bundle written before checksums (version 1 or 2) is checked by size and
 * bundle id only, without a word. A damaged newest bundle is an error, never skipped for an
 * older one: the error names the older bundle to resume from instead.
 *
 * @throws FlodlError ERR_CHECKPOINT naming the file: no bundle there, a meta that is not
 *   JSON, of another format or a newer version, a file missing, truncated, of another bundle,
 *   or whose bytes do not match its checksum (expected and actual hash in the error)
 * @example
 * ```ts fragment
 * const { meta, model } = readCheckpoint('runs/mnist'); // the newest complete bundle
 * console.log(meta.epoch, meta.files.model.sha256, model);
 * ```
 * PyTorch: `torch.load(path)` of a `torch.save` dict (which has no checksum).
 */
export function readCheckpoint(stem: string): CheckpointBundle {
  if (typeof stem !== 'string' || stem === '')
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'readCheckpoint needs a bundle stem', {
      op: 'readCheckpoint',
      expected: "a path stem like 'runs/model'",
      got: typeof stem,
    });
  const resolved = resolveBundle(stem);
  if (resolved === undefined)
    throw checkpointError(bundlePaths(stem).meta, 'no checkpoint bundle here', {
      expected: `${stem}.meta.json, or a complete ${stem}.step-<N> bundle`,
      got: 'neither',
    });
  const paths = bundlePaths(resolved);
  const meta = readMeta(paths.meta);
  const folder = dirname(paths.meta);
  const instead = (): string => olderBundleAdvice(resolved);
  const located = (file: BundleFile): string => {
    const path = join(folder, file.name);
    checkSize(path, file.bytes, instead);
    return path;
  };
  const tagged = (file: BundleFile): string => {
    const path = located(file);
    let metadata: Record<string, string>;
    try {
      metadata = asCheckpoint(path, () => readSafetensorsMetadata(path));
    } catch (error) {
      // A header damaged in place: the checksum says so, with both hashes.
      checkChecksum(path, file, instead);
      throw error;
    }
    checkTag(path, metadata, meta.bundleId);
    return path;
  };
  const model = tagged(meta.files.model);
  const optimizers = new Map<number, string>();
  for (const [rank, file] of Object.entries(meta.files.optimizer)) optimizers.set(Number(rank), tagged(file));
  const scheduler = meta.files.scheduler ? located(meta.files.scheduler) : undefined;
  // The sizes and ids first (cheap, no file read whole), then every byte.
  checkChecksum(model, meta.files.model, instead);
  for (const [rank, file] of Object.entries(meta.files.optimizer))
    checkChecksum(optimizers.get(Number(rank)) as string, file, instead);
  if (scheduler !== undefined && meta.files.scheduler)
    checkChecksum(scheduler, meta.files.scheduler, instead);
  return { stem: resolved, meta, model, optimizers, scheduler };
}

/** What to do instead of resuming from the damaged bundle at `stem`: the next older complete one, by name. */
function olderBundleAdvice(stem: string): string {
  const older = olderBundles(stem).at(-1);
  return older === undefined
    ? `no older complete bundle of this run is left: restore the file from a copy, or start without resumeFrom`
    : `resume from the older bundle instead: .resumeFrom('${older}')`;
}

/** Refuses a file whose bytes are not the ones its meta recorded (a version-3 bundle's). */
function checkChecksum(path: string, file: BundleFile, instead: () => string): void {
  if (file.sha256 === undefined) return;
  let actual: string;
  try {
    actual = checksumOfFile(path);
  } catch (error) {
    throw checkpointError(path, 'cannot be read', { got: (error as Error).message, cause: error });
  }
  if (actual !== file.sha256)
    throw checkpointError(
      path,
      `does not match the checksum its bundle recorded (its bytes changed since it was written); ${instead()}`,
      { expected: `sha256 ${file.sha256}`, got: `sha256 ${actual}` },
    );
}

/** What a bundle restores into. */
export interface RestoreTarget {
  model: AnyModule;
  optimizer: Optimizer;
  scheduler: LRScheduler | undefined;
  device: Device;
  rank: number;
  batchSize: number;
  datasetLength: number;
}

/**
 * Loads the weights, this rank's optimizer state (the saving rank's when the bundle has none
 * for it: a resume onto other ranks) and the scheduler into `target`, then the generator
 * states. The run's counters and data cursor are the caller's to restore from `bundle.meta`.
 *
 * @throws FlodlError ERR_CHECKPOINT naming the file when it does not fit the run (another
 *   batch size or dataset, another model or optimizer)
 */
export function restoreBundle(bundle: CheckpointBundle, target: RestoreTarget): void {
  const { meta } = bundle;
  const metaPath = bundlePaths(bundle.stem).meta;
  if (meta.batchSize !== target.batchSize || meta.datasetLength !== target.datasetLength)
    throw checkpointError(metaPath, 'was saved by a run over other batches', {
      expected: `batchSize ${target.batchSize}, a dataset of ${target.datasetLength} samples (this run's)`,
      got: `batchSize ${meta.batchSize}, ${meta.datasetLength} samples`,
    });
  const schedulerState =
    bundle.scheduler === undefined ? undefined : readSchedulerState(bundle.scheduler, meta.bundleId);
  if ((schedulerState === undefined) !== (target.scheduler === undefined))
    throw checkpointError(
      metaPath,
      target.scheduler
        ? 'has no scheduler state, and this run has a scheduler'
        : 'has a scheduler state, and this run has no scheduler',
      {
        expected: target.scheduler ? 'a bundle saved with .scheduler(...)' : 'a run with .scheduler(...)',
        got: target.scheduler ? 'none' : 'a scheduler state',
      },
    );
  // This rank's own state; a resume onto other ranks takes the saving rank's.
  const optimizerPath = bundle.optimizers.get(target.rank) ?? [...bundle.optimizers.values()][0];
  if (optimizerPath === undefined)
    throw checkpointError(metaPath, 'lists no optimizer state', { got: 'no files.optimizer entry' });
  asCheckpoint(bundle.model, () => load(target.model, bundle.model, { device: target.device }));
  asCheckpoint(optimizerPath, () => loadOptimizer(target.optimizer, optimizerPath));
  if (target.scheduler && schedulerState !== undefined) {
    const scheduler = target.scheduler;
    asCheckpoint(bundle.scheduler as string, () => scheduler.loadStateDict(schedulerState as never));
  }
  for (const [device, state] of Object.entries(meta.rng)) {
    const here = target.device === 'cuda' ? 'cuda:0' : target.device;
    if (device !== 'cpu' && device !== here) continue;
    asCheckpoint(metaPath, () => setRngState(new Uint8Array(Buffer.from(state, 'base64')), device as Device));
  }
}

function readSchedulerState(path: string, bundleId: string): unknown {
  let value: { bundleId?: unknown; state?: unknown };
  try {
    if (statSync(path).size > MAX_META_BYTES) throw new Error(`larger than ${MAX_META_BYTES} bytes`);
    value = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw checkpointError(path, 'is not a scheduler state file', {
      got: (error as Error).message,
      cause: error,
    });
  }
  if (typeof value !== 'object' || value === null || value.bundleId !== bundleId)
    throw checkpointError(path, 'belongs to another bundle', {
      expected: `bundle ${bundleId}`,
      got: String(value?.bundleId),
    });
  return value.state;
}

function checkSize(path: string, bytes: number, instead: () => string): void {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (error) {
    throw checkpointError(path, `is missing from its bundle; ${instead()}`, {
      got: (error as Error).message,
      cause: error,
    });
  }
  if (size !== bytes)
    throw checkpointError(
      path,
      `${size < bytes ? 'is truncated' : 'does not have the size its bundle recorded'}; ${instead()}`,
      {
        expected: `${bytes} bytes`,
        got: `${size} bytes`,
      },
    );
}

function checkTag(path: string, metadata: Record<string, string>, bundleId: string): void {
  if (metadata['flodl.bundle'] !== bundleId)
    throw checkpointError(path, 'belongs to another bundle', {
      expected: `bundle ${bundleId}`,
      got:
        metadata['flodl.bundle'] === undefined ? 'a file of no bundle' : `bundle ${metadata['flodl.bundle']}`,
    });
}

/** Runs `fn`; any failure becomes ERR_CHECKPOINT naming `path` (the original as its cause). */
function asCheckpoint<T>(path: string, fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    if (FlodlError.isInstance(error) && error.code === 'ERR_CHECKPOINT' && error.message.includes(path))
      throw error;
    const message = error instanceof Error ? error.message : String(error);
    throw checkpointError(path, `cannot be restored: ${message}`, {
      ...(FlodlError.isInstance(error) && error.expected !== undefined ? { expected: error.expected } : {}),
      ...(FlodlError.isInstance(error) && error.got !== undefined ? { got: error.got } : {}),
      cause: error,
    });
  }
}
