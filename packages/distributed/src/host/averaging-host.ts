import { FlodlError } from '@flodl/tensor-native';
import type { LaunchMode } from '../launcher/options.js';
import { isCollectiveMode } from '../session/session.js';
import type { ControlServer } from '../wire/server.js';
import { ConsensusPool, type FoldedRound, foldAndSend } from './host-reduce.js';
import { type HostRound, historyLimitOf, pushBounded } from './host-round.js';
import { JoinRule } from './join-rule.js';

/** Options of {@link AveragingHost.attach}. */
export interface AveragingHostOptions {
  mode: LaunchMode;
  worldSize: number;
  /**
   * The explicit trigger: a round starts when every rank has reported at least this many
   * steps since its window last closed (its `SnapshotReady` / `SyncAck`), so every
   * contribution has mass. Default 1 for the Sync modes, 4 otherwise.
   */
  everySteps?: number;
  /** Bound on receiving a snapshot, ms. Default 60 000. */
  timeoutMs?: number;
  /** Called when a round completed (host modes: with the accepted masses). */
  onRound?: (round: HostRound) => void;
  /**
   * How many of the newest rounds `rounds` keeps (older ones are dropped in blocks, so it
   * holds at most twice this many); `onRound` sees every one. Default 10 000.
   */
  historyLimit?: number;
  /** Called when the host fails (a lost snapshot); the ranks then time out. */
  onError?: (error: unknown) => void;
}

/**
 * The launcher-side averaging driver (use it from `launch({ onServer })`): starts rounds with
 * an explicit step trigger (`SyncNow` in collective modes; `RequestParams` in host modes, then
 * receives the mass-scaled snapshots on the data channels, averages them with the mass law and
 * sends the consensus back with `Update`). It forms the run with `SetGlobalStep { 0 }` once every
 * rank joined, and broadcasts `Shutdown` once every rank sent
 * `Exiting` and no round is in flight. It does not run the ElChe `ClusterCoordinator` and has no
 * death handling (a lost rank stalls its round until `timeoutMs`): elastic runs use
 * `CoordinatorHost`.
 *
 * @example
 * ```ts
 * await launch({ nproc: 3, script, mode: 'CpuSync', onServer: (server) => { AveragingHost.attach(server, { mode: 'CpuSync', worldSize: 3 }); } });
 * ```
 */
export class AveragingHost {
  /** The completed rounds, oldest first (the newest `historyLimit`). */
  readonly rounds: HostRound[] = [];
  readonly #historyLimit: number;
  #version = 0;
  #round: { version: number; pending: Set<number>; ready?: () => void } | undefined;
  readonly #joins: JoinRule;
  #exiting = new Set<number>();
  #lastStep = new Map<number, number>();
  #baseStep = new Map<number, number>();
  #shutdown = false;
  #formed = false;
  readonly #everySteps: number;
  readonly #consensusPool = new ConsensusPool();

  private constructor(
    readonly server: ControlServer,
    readonly options: AveragingHostOptions,
  ) {
    this.#historyLimit = historyLimitOf('AveragingHost.attach', options.historyLimit);
    this.#everySteps = options.everySteps ?? (options.mode.endsWith('Sync') ? 1 : 4);
    this.#joins = new JoinRule(server, isCollectiveMode(options.mode));
  }

  /** Attaches a driver to `server`. */
  static attach(server: ControlServer, options: AveragingHostOptions): AveragingHost {
    const host = new AveragingHost(server, options);
    server.on('rankConnected', (rank) => {
      host.#joins.connected(rank);
      host.#maybeJoin(rank);
    });
    server.on('dataChannel', (rank) => host.#maybeJoin(rank));
    server.on('rankDisconnected', (rank) => {
      host.#joins.left(rank);
    });
    server.on('message', (rank, message) => {
      if (message.type === 'Batch') {
        host.#lastStep.set(rank, message.stepCount);
        host.#maybeStart();
      } else if (message.type === 'SnapshotReady') {
        // The rank's window closed at its snapshot: the Batches before it are in it.
        host.#baseStep.set(rank, host.#lastStep.get(rank) ?? 0);
        if (host.#round?.version === message.version) {
          host.#round.pending.delete(rank);
          if (host.#round.pending.size === 0) host.#round.ready?.();
        }
      } else if (message.type === 'SyncAck' && host.#round) {
        host.#baseStep.set(rank, message.stepCount);
        host.#round.pending.delete(rank);
        if (host.#round.pending.size === 0) host.#endRound(host.#joins.members());
      } else if (message.type === 'Exiting') {
        host.#exiting.add(rank);
        host.#maybeShutdown();
      }
    });
    return host;
  }

  #maybeJoin(rank: number): void {
    if (!this.#joins.tryJoin(rank)) return;
    if (!this.#formed && this.#joins.size === this.options.worldSize) {
      this.#formed = true;
      void this.server.broadcast({ type: 'SetGlobalStep', globalStep: 0 }).catch(() => undefined);
    }
  }

  #maybeStart(): void {
    if (this.#round || this.#shutdown || this.#exiting.size > 0) return;
    if (this.#joins.size < this.options.worldSize) return;
    for (const rank of this.#joins.members()) {
      if ((this.#lastStep.get(rank) ?? 0) - (this.#baseStep.get(rank) ?? 0) < this.#everySteps) return;
    }
    const version = ++this.#version;
    const ranks = this.#joins.members();
    this.#round = { version, pending: new Set(ranks) };
    if (isCollectiveMode(this.options.mode)) {
      for (const rank of ranks) void this.server.send(rank, { type: 'SyncNow' }).catch(() => undefined);
    } else {
      this.#hostRound(version, ranks).catch((error: unknown) => this.options.onError?.(error));
    }
  }

  async #hostRound(version: number, ranks: number[]): Promise<void> {
    const timeoutMs = this.options.timeoutMs ?? 60_000;
    const received = await Promise.all(
      ranks.map(async (rank) => {
        const channel = this.server.dataChannelOf(rank);
        if (!channel) {
          throw new FlodlError('ERR_RANK_FAILED', `rank ${rank} has no data channel`, {
            op: 'AveragingHost',
          });
        }
        const pending = channel.receiveContribution({ timeoutMs });
        await this.server.send(rank, { type: 'RequestParams', version });
        return { rank, contribution: await pending };
      }),
    );
    // The round ends only once every rank's SnapshotReady is in (the control channel can
    // trail the data channel): the next trigger must see the windows these snapshots closed.
    const round = this.#round;
    if (round && round.pending.size > 0) await new Promise<void>((resolve) => (round.ready = resolve));
    // Written into a buffer set of its own, given back once the consensus is sent.
    const buffers = this.#consensusPool.acquire();
    let folded: FoldedRound;
    try {
      folded = await foldAndSend(
        'AveragingHost',
        this.server,
        version,
        ranks,
        new Map(received.map(({ rank, contribution }) => [rank, contribution])),
        buffers,
      );
    } finally {
      this.#consensusPool.release(buffers);
    }
    const { masses, totalMass } = folded;
    for (const rank of ranks) await this.server.send(rank, { type: 'Update', version });
    this.#endRound(ranks, masses, totalMass);
  }

  #endRound(accepted: number[], masses?: Record<number, number>, totalMass?: number): void {
    const version = this.#round?.version ?? this.#version;
    this.#round = undefined;
    const round: HostRound = { version, accepted, ...(masses ? { masses, totalMass } : {}) };
    pushBounded(this.rounds, round, this.#historyLimit);
    this.options.onRound?.(round);
    this.#maybeShutdown();
    this.#maybeStart();
  }

  #maybeShutdown(): void {
    if (this.#shutdown || this.#round || this.#exiting.size < this.options.worldSize) return;
    this.#shutdown = true;
    void this.server.broadcast({ type: 'Shutdown' }).catch(() => undefined);
  }
}
