import { invalidArgument } from '@flodl/tensor-native';
import type { MaxFailureThreshold } from '../coordinator/membership.js';
import { DEFAULT_LIVENESS_MS } from '../wire/liveness.js';
import type { DeathRecord } from './death-record.js';

/** How one local rank ended. */
export interface RankExit {
  rank: number;
  localRank: number;
  pid: number;
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  /** `ok`: exit 0; `failed`: died on its own; `stopped`: ended by the launcher. */
  outcome: 'ok' | 'failed' | 'stopped';
}

/** One local rank process of a running launch. */
export interface RankProcessInfo {
  rank: number;
  localRank: number;
  /** The process id (-1 when the process could not start). */
  pid: number;
  /** False once the process ended. */
  running: boolean;
}

/** Options of {@link LaunchRun.stopRank}. */
export interface StopRankOptions {
  /** Why, for the rank's death record. Default `stopped by the run`. */
  reason?: string;
}

/** A rank process end as the launcher reports it while the run goes on. */
export interface RankExitEvent extends RankExit {
  /** The rank's death record (its own, or one the launcher made from the exit status) when it failed. */
  failure?: DeathRecord;
}

/**
 * The run as `launch` hands it to `onServer` (node 0): its policy and a feed of rank process
 * ends, each reported as soon as the launcher sees the process exit. A coordinator host
 * subscribes to it to learn of deaths within milliseconds instead of by heartbeat staleness.
 *
 * @example
 * ```ts
 * await launch({ nproc: 3, script, elastic: true, onServer: (server, run) => {
 *   CoordinatorHost.attach(server, { mode: 'CpuCadence', coordinator, run });
 * } });
 * ```
 */
export interface LaunchRun {
  readonly worldSize: number;
  /** True when a failed rank does not stop the others (`launch({ elastic: true })`). */
  readonly elastic: boolean;
  /** Elastic runs: the dead-rank threshold past which the run fails (the coordinator's `maxFailure`). */
  readonly maxFailure: MaxFailureThreshold | undefined;
  /**
   * The run's liveness setting, ms (`launch({ livenessMs })`): a coordinator host takes its
   * heartbeat timeout and its snapshot bound from it.
   */
  readonly livenessMs: number;
  /** Calls `listener` for every local rank process that ends; returns the unsubscribe. */
  onRankExit(listener: (exit: RankExitEvent) => void): () => void;
  /** This host's rank processes with their pids, ascending (empty before they start). */
  ranks(): RankProcessInfo[];
  /**
   * Ends one local rank: SIGTERM (and SIGCONT, so a stopped process takes it), then SIGKILL
   * after the launch's `killGraceMs`. The rank is reported as lost (`failed`, its death record
   * naming `reason`): an elastic run goes on without it, a plain run stops. The coordinator
   * host calls it for every rank it declares dead whose process still runs (a hung rank).
   * False when `rank` is not running on this host.
   */
  stopRank(rank: number, options?: StopRankOptions): boolean;
}

/** What the launcher's supervisor gives a {@link RankExitFeed}. */
export interface RankSupervisor {
  ranks(): RankProcessInfo[];
  stopRank(rank: number, reason: string): boolean;
}

/** The launcher's side of a {@link LaunchRun}: it emits the exits. */
export class RankExitFeed implements LaunchRun {
  readonly #listeners = new Set<(exit: RankExitEvent) => void>();

  #supervisor: RankSupervisor | undefined;

  constructor(
    readonly worldSize: number,
    readonly elastic: boolean,
    readonly maxFailure: MaxFailureThreshold | undefined,
    readonly livenessMs: number = DEFAULT_LIVENESS_MS,
  ) {}

  /** Connects the launcher's supervisor (once its processes start). */
  supervise(supervisor: RankSupervisor): void {
    this.#supervisor = supervisor;
  }

  ranks(): RankProcessInfo[] {
    return this.#supervisor?.ranks() ?? [];
  }

  stopRank(rank: number, options: StopRankOptions = {}): boolean {
    if (options.reason !== undefined && typeof options.reason !== 'string') {
      throw invalidArgument('LaunchRun.stopRank', 'reason', 'a string', options.reason);
    }
    return this.#supervisor?.stopRank(rank, options.reason ?? 'stopped by the run') ?? false;
  }

  onRankExit(listener: (exit: RankExitEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reports one exit to every listener; a listener that throws does not stop the others. */
  emit(exit: RankExitEvent): void {
    for (const listener of [...this.#listeners]) {
      try {
        listener(exit);
      } catch (error) {
        process.emitWarning(`a rank-exit listener threw: ${error instanceof Error ? error.message : error}`);
      }
    }
  }
}
