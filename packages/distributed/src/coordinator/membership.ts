import { FlodlError } from '@flodl/tensor-native';
import type { SaveReason } from '../wire/messages.js';

export type { SaveReason };

/** How a rank's death was detected. */
export type DeathCause =
  | 'heartbeat-timeout'
  | 'process-exit'
  | 'exited-early'
  | 'connection-lost'
  /** Suspected of a stall (work long overdue) and still without progress at the heartbeat timeout. */
  | 'stalled';

/**
 * A structured record of one rank's death (floDl `RankDeathRecord`): what post-mortems read
 * instead of a bare exit code.
 */
export interface RankDeathRecord {
  readonly rank: number;
  readonly cause: DeathCause;
  /** Coordinator clock time of the declaration (ms). */
  readonly timeMs: number;
  readonly message: string;
  readonly pid?: number;
  readonly exitCode?: number;
  readonly signal?: string;
  readonly stack?: string;
  /** The last step count the rank reported. */
  readonly lastStepCount?: number;
}

/**
 * Dead ranks after which the run saves and exits (floDl `MaxFailureThreshold`):
 * `{ absolute: n }` at the n-th death, `{ percent: p }` at `ceil(p · W)` deaths.
 * `{ absolute: 1 }` is the save-and-exit-on-any-death policy.
 */
export type MaxFailureThreshold = { readonly absolute: number } | { readonly percent: number };

/** The dead-rank count at which `threshold` is breached. */
export function failureLimit(threshold: MaxFailureThreshold, worldSize: number): number {
  if ('absolute' in threshold) return threshold.absolute;
  return Math.ceil(Math.min(1, Math.max(0, threshold.percent)) * worldSize);
}

/**
 * One error for a failed run (style: per-rank records, the earliest named as root cause):
 * `ERR_RANK_FAILED` listing every record.
 */
export function rankFailureError(records: readonly RankDeathRecord[]): FlodlError {
  const ordered = [...records].sort((left, right) => left.timeMs - right.timeMs || left.rank - right.rank);
  const root = ordered[0];
  const lines = ordered.map(
    (record) =>
      `rank ${record.rank} (${record.cause}${record.exitCode === undefined ? '' : `, exit ${record.exitCode}`}` +
      `${record.signal ? `, ${record.signal}` : ''}) at ${record.timeMs.toFixed(0)} ms: ${record.message}`,
  );
  return new FlodlError(
    'ERR_RANK_FAILED',
    root
      ? `${ordered.length} rank(s) failed; root cause: rank ${root.rank} (${root.message})\n  ${lines.join('\n  ')}`
      : 'the run failed with no rank death recorded',
    { op: 'ClusterCoordinator', expected: 'every rank to finish', got: `${ordered.length} dead` },
  );
}

/**
 * Who is in the cohort. Membership only shrinks after formation: a rank joins once, may die
 * (heartbeat staleness, supervisor report, early exit) and never returns.
 */
export class Membership {
  readonly worldSize: number;
  #joined: boolean[];
  #dead: boolean[];
  #exited: boolean[];
  #suspected: boolean[];
  #lastSeen: number[];
  #records: RankDeathRecord[] = [];
  /** The live mask and live ranks, rebuilt after a join, death or exit (read on every decision). */
  #live: { mask: boolean[]; ranks: number[] } | undefined;

  constructor(worldSize: number) {
    this.worldSize = worldSize;
    this.#joined = new Array<boolean>(worldSize).fill(false);
    this.#dead = new Array<boolean>(worldSize).fill(false);
    this.#exited = new Array<boolean>(worldSize).fill(false);
    this.#suspected = new Array<boolean>(worldSize).fill(false);
    this.#lastSeen = new Array<number>(worldSize).fill(0);
  }

  /** Registers `rank`; false when it had already joined. */
  join(rank: number, now: number): boolean {
    if (this.#joined[rank]) return false;
    this.#joined[rank] = true;
    this.#lastSeen[rank] = now;
    this.#live = undefined;
    return true;
  }

  /** Every rank has joined (the world is formed). */
  get formed(): boolean {
    return this.#joined.every(Boolean);
  }

  /** A valid rank index. */
  isRank(rank: unknown): rank is number {
    return typeof rank === 'number' && Number.isInteger(rank) && rank >= 0 && rank < this.worldSize;
  }

  /** Notes traffic from `rank` (any message proves liveness). */
  touch(rank: number, now: number): void {
    if (this.isLive(rank)) this.#lastSeen[rank] = now;
  }

  /** Joined, not dead, not exited, not suspected of a stall. */
  isLive(rank: number): boolean {
    return this.#joined[rank] === true && !this.#dead[rank] && !this.#exited[rank] && !this.#suspected[rank];
  }

  /** Out of the cohort on suspicion of a stall, not yet declared dead. */
  isSuspected(rank: number): boolean {
    return this.#suspected[rank] === true && !this.#dead[rank];
  }

  /** Suspected ranks not yet declared dead, ascending. */
  suspectedRanks(): number[] {
    return this.#suspected.flatMap((suspected, rank) => (suspected && !this.#dead[rank] ? [rank] : []));
  }

  /**
   * Takes a live rank out of the cohort on suspicion of a stall: it no longer counts as live
   * (its work goes to the others), is not dead yet (no record, not counted against
   * `maxFailure`) and never comes back; {@link markDead} ends it. False when not live.
   */
  suspect(rank: number): boolean {
    if (!this.isLive(rank)) return false;
    this.#suspected[rank] = true;
    this.#live = undefined;
    return true;
  }

  isDead(rank: number): boolean {
    return this.#dead[rank] === true;
  }

  hasExited(rank: number): boolean {
    return this.#exited[rank] === true;
  }

  /** Per-rank liveness (a fresh array). */
  liveMask(): boolean[] {
    return this.#liveSets().mask.slice();
  }

  /** Live ranks, ascending (a fresh array). */
  liveRanks(): number[] {
    return this.#liveSets().ranks.slice();
  }

  get liveCount(): number {
    return this.#liveSets().ranks.length;
  }

  #liveSets(): { mask: boolean[]; ranks: number[] } {
    if (!this.#live) {
      const mask = this.#joined.map((_, rank) => this.isLive(rank));
      this.#live = { mask, ranks: mask.flatMap((alive, rank) => (alive ? [rank] : [])) };
    }
    return this.#live;
  }

  get deadCount(): number {
    return this.#dead.filter(Boolean).length;
  }

  /** Declares a death (of a live or a suspected rank); false when the rank was already dead or exited. */
  markDead(record: RankDeathRecord): boolean {
    if (this.#dead[record.rank] || this.#exited[record.rank]) return false;
    this.#dead[record.rank] = true;
    this.#live = undefined;
    this.#records.push(record);
    return true;
  }

  /**
   * Adds the process's end (exit code, signal, pid, its own message and stack) to the record
   * of a rank already declared dead another way (a dropped connection, heartbeat silence):
   * the first cause stays, the exit status joins it. False when `rank` has no record or the
   * record already has an exit status.
   */
  mergeExit(
    rank: number,
    exit: Pick<RankDeathRecord, 'pid' | 'exitCode' | 'signal' | 'stack'> & { message?: string },
  ): boolean {
    const index = this.#records.findIndex((record) => record.rank === rank);
    const record = this.#records[index];
    if (!record || record.exitCode !== undefined || record.signal !== undefined) return false;
    const merged: RankDeathRecord = {
      ...record,
      ...(exit.pid === undefined || record.pid !== undefined ? {} : { pid: exit.pid }),
      ...(exit.exitCode === undefined ? {} : { exitCode: exit.exitCode }),
      ...(exit.signal === undefined ? {} : { signal: exit.signal }),
      ...(exit.stack === undefined || record.stack !== undefined ? {} : { stack: exit.stack }),
      ...(exit.message === undefined ? {} : { message: `${record.message}; then ${exit.message}` }),
    };
    this.#records[index] = merged;
    return true;
  }

  /** Records a clean exit (after the coordinator's Shutdown). */
  markExited(rank: number): boolean {
    if (this.#dead[rank] || this.#exited[rank] || this.#suspected[rank]) return false;
    this.#exited[rank] = true;
    this.#live = undefined;
    return true;
  }

  /** When `rank` was last heard from (any message, a heartbeat included). */
  lastSeen(rank: number): number {
    return this.#lastSeen[rank] ?? 0;
  }

  /** Live ranks silent for longer than `timeoutMs`. */
  staleRanks(now: number, timeoutMs: number): number[] {
    return this.liveRanks().filter((rank) => now - (this.#lastSeen[rank] ?? now) > timeoutMs);
  }

  /** Every death record, in declaration order. */
  records(): readonly RankDeathRecord[] {
    return [...this.#records];
  }
}
