import { MassAccumulator } from '../averaging/host.js';
import type { Clock } from '../coordinator/clock.js';
import { ClusterCoordinator } from '../coordinator/coordinator.js';
import type { CoordinatorOptions } from '../coordinator/coordinator-config.js';
import type {
  AddressedCommand,
  CoordinatorInput,
  CoordinatorNotice,
  RankExited,
} from '../coordinator/messages.js';
import type { LaunchMode } from '../launcher/options.js';
import type { DataChannel } from '../wire/data-channel.js';
import type { CoordinatorMessage } from '../wire/messages.js';
import type { ControlServer } from '../wire/server.js';
import type { HostRound } from './coordinator-host.js';
import { isCollectiveMode } from './session.js';

/** Options of {@link CoordinatorHost.attach}. */
export interface CoordinatorHostOptions {
  /** The launch mode; it also picks the coordinator's ElChe mode unless `coordinator.elche` names one. */
  mode: LaunchMode;
  /** The coordinator's options (`worldSize` included). */
  coordinator: CoordinatorOptions;
  /** Coordinator tick period, ms. Default 250. */
  tickMs?: number;
  /** The coordinator's clock. Default `Date.now`. */
  clock?: Clock;
  /** Bound on receiving a snapshot (host modes), ms. Default 60 000. */
  timeoutMs?: number;
  /** Every notice the coordinator produced, as it produced it. */
  onNotice?: (notice: CoordinatorNotice) => void;
  /** Called when a host-mode reduce completed, with the accepted masses. */
  onRound?: (round: HostRound) => void;
  /** Called when the host fails (a lost snapshot, a failed send). */
  onError?: (error: unknown) => void;
}

interface HostReduce {
  readonly version: number;
  readonly ranks: number[];
  readonly snapshots: Set<number>;
  readonly contributions: Map<number, Promise<Awaited<ReturnType<DataChannel['receiveContribution']>>>>;
  snapshotsIn?: () => void;
}

/**
 * The launcher-side driver of a real {@link ClusterCoordinator} (use it from
 * `launch({ onServer })`): feeds it the server's events (`RankJoined` once a rank's session
 * connected, every rank message with its rank, `ConnectionLost` when a control channel drops
 * without `Exiting`, a `Tick` on a timer) and sends every command it produces back through the
 * server, in order per rank. In host modes (CpuSync / CpuCadence / CpuAsync) it is also the
 * CPU reduce root: for each round it receives the mass-scaled snapshots the coordinator's
 * `RequestParams` asked for, averages them with the mass law, ships the consensus on the data
 * channels and reports `ReduceCompleted` (the coordinator then sends `Update`). Supervisors
 * report process ends with {@link CoordinatorHost.rankExited}.
 *
 * @example
 * ```ts
 * await launch({ nproc: 3, script, mode: 'CpuCadence', onServer: (server) => {
 *   CoordinatorHost.attach(server, { mode: 'CpuCadence', coordinator: { worldSize: 3, totalSamples: 960, batchSize: 16, numEpochs: 2 } });
 * } });
 * ```
 */
export class CoordinatorHost {
  readonly coordinator: ClusterCoordinator;
  readonly notices: CoordinatorNotice[] = [];
  readonly commands: AddressedCommand[] = [];
  /** Host modes: the reduces this host completed. */
  readonly rounds: HostRound[] = [];
  #joined = new Set<number>();
  #connects = new Map<number, number>();
  #chains = new Map<number, Promise<void>>();
  #reduce: HostReduce | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  readonly #collective: boolean;

  private constructor(
    readonly server: ControlServer,
    readonly options: CoordinatorHostOptions,
  ) {
    this.#collective = isCollectiveMode(options.mode);
    const elche = options.coordinator.elche ?? { mode: options.mode };
    this.coordinator = new ClusterCoordinator(
      { ...options.coordinator, elche },
      options.clock ?? { now: () => Date.now() },
    );
  }

  /** Attaches a coordinator driver to `server`; the tick timer stops when the run finishes. */
  static attach(server: ControlServer, options: CoordinatorHostOptions): CoordinatorHost {
    const host = new CoordinatorHost(server, options);
    server.on('rankConnected', (rank) => {
      host.#connects.set(rank, (host.#connects.get(rank) ?? 0) + 1);
      host.#maybeJoin(rank);
    });
    server.on('dataChannel', (rank) => host.#maybeJoin(rank));
    server.on('message', (rank, message) => {
      // Host modes: a session's bootstrap connection (data channel opener) is not the rank yet.
      if (!host.#joined.has(rank)) return;
      if (message.type === 'SnapshotReady') host.#onSnapshot(rank, message.version);
      host.feed({ ...message, rank } as CoordinatorInput);
    });
    server.on('rankDisconnected', (rank, error) => {
      // A newer connection of the same rank is still up (the bootstrap one closed late).
      if (!host.#joined.has(rank) || server.connectedRanks().includes(rank)) return;
      if (error) host.feed({ type: 'ConnectionLost', rank, message: error.message });
    });
    host.#timer = setInterval(() => host.feed({ type: 'Tick' }), options.tickMs ?? 250);
    host.#timer.unref?.();
    return host;
  }

  /** True once the coordinator finished (Completed or a save-and-exit). */
  get finished(): boolean {
    return this.coordinator.state === 'finished';
  }

  /** Reports a rank's process end (from the launcher or a host agent). */
  rankExited(exit: Omit<RankExited, 'type'>): void {
    this.feed({ type: 'RankExited', ...exit });
  }

  /** Stops the tick timer (done by itself once the run finished). */
  detach(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Feeds one input to the coordinator and sends what it produced. */
  feed(input: CoordinatorInput): void {
    const output = this.coordinator.handle(input);
    for (const notice of output.notices) {
      this.notices.push(notice);
      this.options.onNotice?.(notice);
      if (notice.type === 'AveragingStarted' && this.coordinator.backend === 'Cpu') {
        this.#reduce = {
          version: notice.version,
          ranks: [...notice.ranks].sort((a, b) => a - b),
          snapshots: new Set(),
          contributions: new Map(),
        };
      }
    }
    for (const addressed of output.commands) {
      this.commands.push(addressed);
      this.#dispatch(addressed);
    }
    const reduce = this.#reduce;
    if (reduce && output.notices.some((n) => n.type === 'AveragingStarted' && n.version === reduce.version)) {
      this.#hostRound(reduce).catch((error: unknown) => this.#fail(error));
    }
    if (this.finished) this.detach();
  }

  #maybeJoin(rank: number): void {
    if (this.#joined.has(rank) || !this.server.connectedRanks().includes(rank)) return;
    // Host modes: a session opens its data channel on a bootstrap control connection, then
    // connects its RankClient: it joins on that second control connection.
    if (!this.#collective && (!this.server.dataChannelOf(rank) || (this.#connects.get(rank) ?? 0) < 2))
      return;
    this.#joined.add(rank);
    this.feed({ type: 'RankJoined', rank });
  }

  #dispatch({ rank, command }: AddressedCommand): void {
    if (command.type === 'RequestNewNcclId' || command.type === 'NewNcclSession') return; // no NCCL re-formation on Gloo
    if (command.type === 'RequestParams' && this.#reduce?.version === command.version) {
      // Listen before asking: the snapshot may arrive before the send resolves.
      const channel = this.server.dataChannelOf(rank);
      if (channel) {
        const pending = channel.receiveContribution({ timeoutMs: this.options.timeoutMs ?? 60_000 });
        pending.catch(() => undefined);
        this.#reduce.contributions.set(rank, pending);
      }
    }
    this.#send(rank, command);
  }

  #send(rank: number, message: CoordinatorMessage): void {
    const previous = this.#chains.get(rank) ?? Promise.resolve();
    const next = previous.then(() => this.server.send(rank, message)).catch(() => undefined);
    this.#chains.set(rank, next);
  }

  #onSnapshot(rank: number, version: number): void {
    const reduce = this.#reduce;
    if (reduce?.version !== version) return;
    reduce.snapshots.add(rank);
    if (reduce.ranks.every((member) => reduce.snapshots.has(member))) reduce.snapshotsIn?.();
  }

  async #hostRound(reduce: HostReduce): Promise<void> {
    const received = await Promise.all(
      reduce.ranks.map(async (rank) => {
        const pending = reduce.contributions.get(rank);
        if (!pending) throw new Error(`rank ${rank} has no data channel`);
        return { rank, contribution: await pending };
      }),
    );
    const root = new MassAccumulator();
    const masses: Record<number, number> = {};
    for (const { rank, contribution } of received) {
      if (contribution.version !== reduce.version)
        throw new Error(`rank ${rank} sent round ${contribution.version} for round ${reduce.version}`);
      root.add(rank, contribution.tensors);
      masses[rank] = contribution.tensors.find((tensor) => tensor.name.startsWith('p:'))?.mass ?? 0;
    }
    // The control channel can trail the data channel: the coordinator closes each window at
    // its SnapshotReady, so the reduce completes only once every one is in.
    if (!reduce.ranks.every((rank) => reduce.snapshots.has(rank)))
      await new Promise<void>((resolve) => (reduce.snapshotsIn = resolve));
    const consensus = root.average();
    if (consensus.length === 0) throw new Error(`round ${reduce.version}: no contribution had mass`);
    const totalMass = Object.values(masses).reduce((sum, mass) => sum + mass, 0);
    // The consensus goes out on the data channels before the coordinator's Update.
    await Promise.all(
      reduce.ranks.map((rank) => this.server.dataChannelOf(rank)?.send(reduce.version, consensus)),
    );
    if (this.#reduce === reduce) this.#reduce = undefined;
    const round: HostRound = { version: reduce.version, accepted: reduce.ranks, masses, totalMass };
    this.rounds.push(round);
    this.options.onRound?.(round);
    this.feed({ type: 'ReduceCompleted', version: reduce.version, accepted: reduce.ranks });
  }

  #fail(error: unknown): void {
    if (this.options.onError) this.options.onError(error);
  }
}
