import { MassAccumulator } from '../averaging/host.js';
import type { LaunchMode } from '../launcher/options.js';
import type { ControlServer } from '../wire/server.js';
import type { HostRound } from './host-round.js';
import { isCollectiveMode } from './session.js';

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
  readonly rounds: HostRound[] = [];
  #version = 0;
  #round: { version: number; pending: Set<number>; ready?: () => void } | undefined;
  #joined = new Set<number>();
  #controlConnects = new Map<number, number>();
  #connected = new Set<number>();
  #exiting = new Set<number>();
  #lastStep = new Map<number, number>();
  #baseStep = new Map<number, number>();
  #shutdown = false;
  #formed = false;
  readonly #everySteps: number;

  private constructor(
    readonly server: ControlServer,
    readonly options: AveragingHostOptions,
  ) {
    this.#everySteps = options.everySteps ?? (options.mode.endsWith('Sync') ? 1 : 4);
  }

  /** Attaches a driver to `server`. */
  static attach(server: ControlServer, options: AveragingHostOptions): AveragingHost {
    const host = new AveragingHost(server, options);
    server.on('rankConnected', (rank) => {
      host.#connected.add(rank);
      host.#controlConnects.set(rank, (host.#controlConnects.get(rank) ?? 0) + 1);
      host.#maybeJoin(rank);
    });
    server.on('dataChannel', (rank) => host.#maybeJoin(rank));
    server.on('rankDisconnected', (rank) => {
      host.#connected.delete(rank);
      host.#joined.delete(rank);
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
        if (host.#round.pending.size === 0) host.#endRound([...host.#joined].sort());
      } else if (message.type === 'Exiting') {
        host.#exiting.add(rank);
        host.#maybeShutdown();
      }
    });
    return host;
  }

  #maybeJoin(rank: number): void {
    if (!this.#connected.has(rank)) return;
    const collective = isCollectiveMode(this.options.mode);
    // Host modes: a rank opens its data channel on a bootstrap control connection, then
    // connects its RankClient: it joins on that second control connection.
    if (!collective && (!this.server.dataChannelOf(rank) || (this.#controlConnects.get(rank) ?? 0) < 2))
      return;
    this.#joined.add(rank);
    if (!this.#formed && this.#joined.size === this.options.worldSize) {
      this.#formed = true;
      void this.server.broadcast({ type: 'SetGlobalStep', globalStep: 0 }).catch(() => undefined);
    }
  }

  #maybeStart(): void {
    if (this.#round || this.#shutdown || this.#exiting.size > 0) return;
    if (this.#joined.size < this.options.worldSize) return;
    for (const rank of this.#joined) {
      if ((this.#lastStep.get(rank) ?? 0) - (this.#baseStep.get(rank) ?? 0) < this.#everySteps) return;
    }
    const version = ++this.#version;
    const ranks = [...this.#joined].sort();
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
        if (!channel) throw new Error(`rank ${rank} has no data channel`);
        const pending = channel.receiveContribution({ timeoutMs });
        await this.server.send(rank, { type: 'RequestParams', version });
        return { rank, contribution: await pending };
      }),
    );
    const root = new MassAccumulator();
    const masses: Record<number, number> = {};
    for (const { rank, contribution } of received) {
      if (contribution.version !== version)
        throw new Error(`rank ${rank} sent round ${contribution.version}`);
      root.add(rank, contribution.tensors);
      masses[rank] = contribution.tensors.find((tensor) => tensor.name.startsWith('p:'))?.mass ?? 0;
    }
    // The round ends only once every rank's SnapshotReady is in (the control channel can
    // trail the data channel): the next trigger must see the windows these snapshots closed.
    const round = this.#round;
    if (round && round.pending.size > 0) await new Promise<void>((resolve) => (round.ready = resolve));
    const consensus = root.average();
    // Folded: the contributions' buffers receive the next round's (no fresh memory per round).
    for (const { rank, contribution } of received)
      this.server.dataChannelOf(rank)?.recycle(contribution.tensors);
    if (consensus.length === 0) throw new Error(`round ${version}: no contribution had mass`);
    const totalMass = Object.values(masses).reduce((sum, mass) => sum + mass, 0);
    for (const rank of ranks) {
      const channel = this.server.dataChannelOf(rank);
      if (consensus.length > 0) await channel?.send(version, consensus);
      await this.server.send(rank, { type: 'Update', version });
    }
    this.#endRound(ranks, masses, totalMass);
  }

  #endRound(accepted: number[], masses?: Record<number, number>, totalMass?: number): void {
    const version = this.#round?.version ?? this.#version;
    this.#round = undefined;
    const round: HostRound = { version, accepted, ...(masses ? { masses, totalMass } : {}) };
    this.rounds.push(round);
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
