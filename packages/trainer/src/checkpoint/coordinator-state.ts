// The cluster coordinator's state a bundle records (ElChe, the guard, the membership), passed
// from the launching process, where the coordinator runs, to the rank that writes the meta:
// the launcher writes it to the run's record folder before it relays a save, the rank reads it.

import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoordinatorHost, ElCheState } from '@flodl/distributed';
import { RECORD_DIR_ENV } from '@flodl/distributed';

/** What the coordinator knew at a save. */
export interface CoordinatorSnapshot {
  globalStep: number;
  averagingCount: number;
  elche: ElCheState;
  guardHistory: number[];
  /** Ranks alive. */
  live: number[];
  /** Ranks lost so far. */
  lost: number[];
}

const FILE = 'coordinator-state.json';
/** A state file larger than this is ignored. */
const MAX_BYTES = 1024 * 1024;

/**
 * The coordinator's state now. `stopping`: a graceful stop was sent, and every rank says
 * `Exiting` once it saved, which the coordinator (that does not take part in the stop) records
 * as an early exit: those ranks stopped as asked and count as live, not lost. A save that
 * comes after one of them left (a CpuAsync rank does not wait for its last round) records the
 * cluster as it stopped.
 */
export function snapshotCoordinator(
  host: Pick<CoordinatorHost, 'coordinator'>,
  options: { stopping?: boolean } = {},
): CoordinatorSnapshot {
  const { coordinator } = host;
  const records = coordinator.deathRecords();
  const stopped = options.stopping
    ? records.filter((record) => record.cause === 'exited-early').map((record) => record.rank)
    : [];
  return {
    globalStep: coordinator.globalStep,
    averagingCount: coordinator.version,
    elche: coordinator.elChe.toState(),
    guardHistory: [...(coordinator.guard.history() ?? [])],
    live: [...coordinator.membership.liveRanks(), ...stopped].sort((left, right) => left - right),
    lost: records.filter((record) => !stopped.includes(record.rank)).map((record) => record.rank),
  };
}

/** Writes `host`'s state into the run's record folder (atomically: a temporary file, then rename). */
export function writeCoordinatorState(
  recordDir: string,
  host: Pick<CoordinatorHost, 'coordinator'>,
  options: { stopping?: boolean } = {},
): void {
  const path = join(recordDir, FILE);
  writeFileSync(`${path}.tmp`, JSON.stringify(snapshotCoordinator(host, options)));
  renameSync(`${path}.tmp`, path);
}

/** The state the launcher last wrote for this rank's run, or `undefined` (no launcher, no save yet). */
export function readCoordinatorState(): CoordinatorSnapshot | undefined {
  const directory = process.env[RECORD_DIR_ENV];
  if (!directory) return undefined;
  const path = join(directory, FILE);
  try {
    if (statSync(path).size > MAX_BYTES) return undefined;
    const value = JSON.parse(readFileSync(path, 'utf8')) as CoordinatorSnapshot;
    const ranks = (list: unknown) => Array.isArray(list) && list.every((rank) => Number.isSafeInteger(rank));
    if (
      !Number.isSafeInteger(value.globalStep) ||
      !Number.isSafeInteger(value.averagingCount) ||
      typeof value.elche !== 'object' ||
      value.elche === null ||
      !Array.isArray(value.guardHistory) ||
      !ranks(value.live) ||
      !ranks(value.lost)
    )
      return undefined;
    return value;
  } catch {
    return undefined;
  }
}
