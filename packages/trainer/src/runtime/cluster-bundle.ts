// A cluster's checkpoint bundle: every rank writes its own optimizer state (with the positions
// of the epoch in progress it trained) into one bundle, and one rank, the writer, adds the
// model, the scheduler and, once every live rank's file is in, the meta, which records the
// coordinator's state and the union of the ranks' coverage.

import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mergeSpans } from '@flodl/distributed/coordinator';
import { readSafetensorsMetadata } from '@flodl/nn';
import { readCoordinatorState } from '../checkpoint/coordinator-state.js';
import type { BundleReason, CheckpointMeta } from '../checkpoint/meta.js';
import { bundlePaths } from '../checkpoint/paths.js';
import { type BundleSource, COVERED_METADATA_KEY, writeBundle, writeRankPart } from '../checkpoint/write.js';

/** Set by the launcher: one random id per run, so the bundle ids the ranks derive are the run's own. */
export const TRAINER_RUN_ENV = 'FLODL_TRAINER_RUN';

/** How often the writer looks for the other ranks' files, ms. */
const POLL_MS = 5;

/**
 * The id every rank of a run gives the bundle at `stem` for `reason` (a periodic stem names
 * its LR step; the run id keeps another run's files out).
 */
export function clusterBundleId(stem: string, reason: BundleReason): string {
  const run = process.env[TRAINER_RUN_ENV] ?? '';
  return createHash('sha256').update(`${run}\0${stem}\0${reason}`).digest('hex').slice(0, 16);
}

/** A rank that does not write the meta: its optimizer file only. */
export function writeClusterPart(stem: string, source: BundleSource, reason: BundleReason): void {
  writeRankPart(stem, source, clusterBundleId(stem, reason));
}

/**
 * The writer's side: its own files, then (waiting at most `waitMs`) every other live rank's
 * optimizer file of this bundle, then the meta with the union of their coverage. A rank
 * whose file does not come in time is left out of the meta (a resume gives it the writer's
 * state).
 */
export async function writeClusterBundle(
  stem: string,
  source: BundleSource,
  reason: BundleReason,
  waitMs: number,
): Promise<{ meta: CheckpointMeta; missing: number[] }> {
  const bundleId = clusterBundleId(stem, reason);
  const coordinator = readCoordinatorState();
  const live = coordinator?.live ?? source.membership;
  const others = live.filter((rank) => rank !== source.rank);
  const found = new Map<number, string>();
  const covered: [number, number][] = [...source.covered];
  const deadline = performance.now() + waitMs;
  for (;;) {
    for (const rank of others) {
      if (found.has(rank)) continue;
      const part = readPart(bundlePaths(stem).optimizer(rank), bundleId);
      if (!part) continue;
      found.set(rank, part.path);
      if (part.epoch === source.cursor.epoch) covered.push(...part.spans);
    }
    if (found.size === others.length || performance.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const missing = others.filter((rank) => !found.has(rank));
  const meta = writeBundle(
    stem,
    {
      ...source,
      covered: mergeSpans(covered),
      live,
      lost: coordinator?.lost ?? [],
      elche: coordinator?.elche ?? null,
      guardHistory: coordinator?.guardHistory ?? [],
      averagingCount: Math.max(source.averagingCount, coordinator?.averagingCount ?? 0),
    },
    reason,
    { bundleId, optimizers: found },
  );
  return { meta, missing };
}

/** A rank's optimizer file of bundle `bundleId`, with its coverage; `undefined` until it is whole. */
function readPart(
  path: string,
  bundleId: string,
): { path: string; epoch: number; spans: [number, number][] } | undefined {
  if (!existsSync(path)) return undefined;
  try {
    const metadata = readSafetensorsMetadata(path);
    if (metadata['flodl.bundle'] !== bundleId) return undefined;
    const coverage = JSON.parse(metadata[COVERED_METADATA_KEY] ?? '{}') as {
      epoch?: unknown;
      spans?: unknown;
    };
    const spans = Array.isArray(coverage.spans)
      ? (coverage.spans as unknown[]).filter(
          (span): span is [number, number] =>
            Array.isArray(span) && span.length === 2 && span.every((item) => Number.isSafeInteger(item)),
        )
      : [];
    return { path, epoch: Number(coverage.epoch), spans };
  } catch {
    // Being renamed into place, or another bundle's: looked at again on the next pass.
    return undefined;
  }
}
