// A rank's checkpoint bundles: where a periodic or final one is written, and what a restored
// one sets back (the step counters and the data cursor the next plan resumes from).

import { FlodlError } from '@flodl/tensor-native';
import type { BundleReason, CheckpointMeta, DataCursor } from '../checkpoint/meta.js';
import { periodicStem, prunePeriodic } from '../checkpoint/paths.js';
import { type CheckpointBundle, type RestoreTarget, restoreBundle } from '../checkpoint/read.js';
import { type BundleSource, writeBundle } from '../checkpoint/write.js';
import { writeClusterBundle, writeClusterPart } from './cluster-bundle.js';

/** Where and how a rank writes its bundles. */
export interface BundlePlace {
  savePath: string | undefined;
  /** Periodic bundles kept under `savePath`. */
  keepLast: number;
  worldSize: number;
  /** The LR step a periodic bundle is named after. */
  lrStep: number;
}

/**
 * Writes a checkpoint bundle: periodic reasons (`every`, `atEpoch`, `request`) at
 * `<savePath>.step-<LR step>`, keeping the newest `keepLast`; `final`, `stop` and
 * `shutdownWithSave` at `savePath` itself.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT without a `savePath`; ERR_IO when a file cannot be written
 */
export function saveRankBundle(
  op: string,
  place: BundlePlace,
  source: BundleSource,
  reason: BundleReason,
): CheckpointMeta {
  const { savePath } = place;
  if (savePath === undefined) throw noSavePath(op);
  const stem = bundleStem(savePath, place.lrStep, reason);
  const meta = writeBundle(stem, source, reason);
  if (stem !== savePath) prunePeriodic(savePath, place.keepLast, place.worldSize);
  return meta;
}

/** Periodic reasons at `<savePath>.step-<lrStep>`; the others at `savePath`. */
export function bundleStem(savePath: string, lrStep: number, reason: BundleReason): string {
  const periodic = reason === 'every' || reason === 'atEpoch' || reason === 'request';
  return periodic ? periodicStem(savePath, lrStep) : savePath;
}

/**
 * A cluster bundle: rank `source.rank` writes the model, the scheduler and the meta when it
 * is `writer` (after gathering every live rank's optimizer file, for at most `waitMs`), else
 * only its own optimizer file. Every rank of the save calls it with the same `reason`.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT without a `savePath`; ERR_IO when a file cannot be written
 */
export async function saveClusterBundle(
  op: string,
  place: BundlePlace,
  source: BundleSource,
  reason: BundleReason,
  writer: { writes: boolean; waitMs: number },
): Promise<void> {
  const { savePath } = place;
  if (savePath === undefined) throw noSavePath(op);
  const stem = bundleStem(savePath, place.lrStep, reason);
  if (!writer.writes) {
    writeClusterPart(stem, source, reason);
    return;
  }
  const { missing } = await writeClusterBundle(stem, source, reason, writer.waitMs);
  if (missing.length > 0)
    process.stderr.write(
      `flodl: checkpoint ${stem}: no optimizer state from rank(s) ${missing.join(', ')} within ${writer.waitMs} ms (a resume gives them rank ${source.rank}'s)\n`,
    );
  if (stem !== savePath) prunePeriodic(savePath, place.keepLast, place.worldSize);
}

function noSavePath(op: string): FlodlError {
  return new FlodlError('ERR_INVALID_ARGUMENT', 'a checkpoint bundle needs a savePath', {
    op,
    expected: ".savePath('runs/model') on the builder",
    got: 'no savePath',
  });
}

/** The counters a restored bundle sets on a rank. */
export interface RestoredCounters {
  localStep: number;
  globalStep: number;
  /** One device only: the steps the LR clock counts from. */
  stepsSinceAvg?: number;
  /** Where the data resumes. */
  cursor: DataCursor;
}

/**
 * Restores `bundle` into `target` (weights, optimizer, scheduler, generator states) and
 * returns the counters it sets; `clustered` for a rank with a coordinator.
 *
 * @throws FlodlError ERR_CHECKPOINT naming the file when the bundle does not fit this run
 */
export function restoreRank(
  bundle: CheckpointBundle,
  target: RestoreTarget,
  clustered: boolean,
): RestoredCounters {
  restoreBundle(bundle, target);
  const { meta } = bundle;
  // A cluster bundle's cursor is one rank's share: its epoch restarts from the beginning here.
  const cursor =
    meta.worldSize > 1
      ? { epoch: meta.cursor.epoch, batch: 0, totalLoss: 0, computeMs: 0, dataMs: 0 }
      : meta.cursor;
  if (clustered) return { localStep: meta.localStep, globalStep: meta.globalStep, cursor };
  // One device: the LR clock is the step count (a cluster bundle's global step folds in).
  return {
    localStep: meta.localStep,
    globalStep: 0,
    stepsSinceAvg: meta.worldSize > 1 ? meta.globalStep + meta.stepsSinceAvg : meta.stepsSinceAvg,
    cursor,
  };
}
