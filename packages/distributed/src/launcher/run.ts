import type { MaxFailureThreshold } from '../coordinator/membership.js';
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
  /** Calls `listener` for every local rank process that ends; returns the unsubscribe. */
  onRankExit(listener: (exit: RankExitEvent) => void): () => void;
}

/** The launcher's side of a {@link LaunchRun}: it emits the exits. */
export class RankExitFeed implements LaunchRun {
  readonly #listeners = new Set<(exit: RankExitEvent) => void>();

  constructor(
    readonly worldSize: number,
    readonly elastic: boolean,
    readonly maxFailure: MaxFailureThreshold | undefined,
  ) {}

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
