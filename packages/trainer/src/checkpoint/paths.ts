// The files of a checkpoint bundle, all named from one stem, and the rotation of the bundles a
// run writes under its `savePath`.

import { existsSync, readdirSync, rmSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** The paths of the bundle at `stem`. */
export interface BundlePaths {
  stem: string;
  /** `<stem>.safetensors`: the model's state dict (PyTorch's `safetensors.torch.load_file` reads it). */
  model: string;
  /** `<stem>.meta.json`: written last; a bundle without it is incomplete. */
  meta: string;
  /** `<stem>.scheduler.json`. */
  scheduler: string;
  /** Rank `rank`'s optimizer state: `<stem>.optim.safetensors` (rank 0), `<stem>.optim.r<N>.safetensors`. */
  optimizer(rank: number): string;
}

/** The files of the bundle at `stem`. */
export function bundlePaths(stem: string): BundlePaths {
  return {
    stem,
    model: `${stem}.safetensors`,
    meta: `${stem}.meta.json`,
    scheduler: `${stem}.scheduler.json`,
    optimizer: (rank) => (rank === 0 ? `${stem}.optim.safetensors` : `${stem}.optim.r${rank}.safetensors`),
  };
}

/** The stem of the periodic bundle of `savePath` at LR step `step`: `<savePath>.step-<step>`. */
export function periodicStem(savePath: string, step: number): string {
  return `${savePath}.step-${step}`;
}

/** The complete periodic bundles of `savePath` (their meta written), oldest step first. */
export function periodicBundles(savePath: string): { stem: string; step: number }[] {
  const folder = dirname(savePath);
  const prefix = `${basename(savePath)}.step-`;
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return [];
  }
  const found: { stem: string; step: number }[] = [];
  for (const name of names) {
    if (!name.startsWith(prefix) || !name.endsWith('.meta.json')) continue;
    const step = name.slice(prefix.length, -'.meta.json'.length);
    if (/^\d+$/.test(step))
      found.push({ stem: join(folder, name.slice(0, -'.meta.json'.length)), step: Number(step) });
  }
  return found.sort((a, b) => a.step - b.step);
}

/**
 * The bundle `resumeFrom(stem)` means: `stem` itself when its meta exists, else the newest
 * complete periodic bundle of `stem` taken as a `savePath` (so `resumeFrom(savePath)` picks up
 * after a crash); `undefined` when there is none.
 */
export function resolveBundle(stem: string): string | undefined {
  if (existsSync(bundlePaths(stem).meta)) return stem;
  return periodicBundles(stem).at(-1)?.stem;
}

/**
 * The complete bundles of the same run older than the one at `stem`, oldest first: for a
 * periodic `<savePath>.step-<N>`, the periodic bundles of `savePath` before step N; for a
 * run's final bundle at `savePath`, every periodic bundle of it.
 */
export function olderBundles(stem: string): string[] {
  const periodic = /^(.*)\.step-(\d+)$/.exec(stem);
  const savePath = periodic ? (periodic[1] as string) : stem;
  const before = periodic ? Number(periodic[2]) : Number.POSITIVE_INFINITY;
  return periodicBundles(savePath)
    .filter((bundle) => bundle.step < before && bundle.stem !== stem)
    .map((bundle) => bundle.stem);
}

/** Removes the bundle at `stem`: its meta first, so an interrupted removal leaves it incomplete, never mixed. */
export function removeBundle(stem: string, worldSize: number): void {
  const paths = bundlePaths(stem);
  rmSync(paths.meta, { force: true });
  rmSync(paths.model, { force: true });
  rmSync(paths.scheduler, { force: true });
  for (let rank = 0; rank < Math.max(1, worldSize); rank++) rmSync(paths.optimizer(rank), { force: true });
}

/** Keeps the newest `keep` periodic bundles of `savePath`, removing the older ones. */
export function prunePeriodic(savePath: string, keep: number, worldSize: number): void {
  const bundles = periodicBundles(savePath);
  for (const { stem } of bundles.slice(0, Math.max(0, bundles.length - keep))) removeBundle(stem, worldSize);
}
