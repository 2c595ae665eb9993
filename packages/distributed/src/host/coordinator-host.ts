import { FlodlError } from '@flodl/tensor-native';
import type { HostTensor } from '../averaging/host.js';
import type { Clock } from '../coordinator/clock.js';
import { ClusterCoordinator } from '../coordinator/coordinator.js';
import type { CoordinatorOptions } from '../coordinator/coordinator-config.js';
import type { RankDeathRecord } from '../coordinator/membership.js';
import type {
  AddressedCommand,
  CoordinatorInput,
  CoordinatorNotice,
  HostCommand,
  RankExited,
} from '../coordinator/messages.js';
import type { CoordinatorResume } from '../coordinator/resume.js';
import type { LaunchMode } from '../launcher/options.js';
import type { LaunchRun, RankExitEvent } from '../launcher/run.js';
import { isCollectiveMode } from '../session/session.js';
import type { ReceivedContribution } from '../wire/data-channel.js';
import { BOOTSTRAP_CAPABILITY } from '../wire/handshake.js';
import { DEFAULT_LIVENESS_MS } from '../wire/liveness.js';
import type { CoordinatorMessage, Hello } from '../wire/messages.js';
import type { ControlServer } from '../wire/server.js';
import { ConsensusPool, type FoldedRound, foldAndSend } from './host-reduce.js';
import { type HostRound, historyLimitOf, pushBounded } from './host-round.js';
import { JoinRule } from './join-rule.js';
import { coordinatorOptionsFor, type RunSettings, runSettingsOf } from './run-settings.js';

/** How long a rank that dropped its connection may take to end on its own before it is stopped, ms. */
const LEAVING_GRACE_MS = 2000;

/** Longest wait for the averaging round a graceful stop is served after, ms (then it is sent at once). */
const STOP_ROUND_WAIT_MS = 3000;

/** Options of {@link CoordinatorHost.attach}. */
export interface CoordinatorHostOptions {
  /** The launch mode; it also picks the coordinator's ElChe mode unless `coordinator.elche` names one. */
  mode: LaunchMode;
  /** The coordinator's options (`worldSize` included). */
  coordinator: CoordinatorOptions;
  /**
   * The launcher's run (`launch({ onServer: (server, run) => ... })`): every rank process end
   * is reported to the coordinator as it happens (`RankExited`), and an elastic run's
   * `maxFailure` becomes the coordinator's unless `coordinator.maxFailure` is set.
   */
  run?: LaunchRun;
  /** Coordinator tick period, ms. Default 250. */
  tickMs?: number;
  /** The coordinator's clock. Default `Date.now`. */
  clock?: Clock;
  /**
   * Bound on receiving a snapshot (host modes), ms; a rank past it is dropped from the round.
   * Default twice the run's `livenessMs` (60 000 without a run).
   */
  timeoutMs?: number;
  /** Every notice the coordinator produced, as it produced it. */
  onNotice?: (notice: CoordinatorNotice) => void;
  /**
   * How many of the newest entries the host keeps in each of `notices`, `commands`, `rounds`
   * and `exits` (older ones are dropped in blocks, so a list holds at most twice this many):
   * a long run's host stays bounded. `onNotice`, `onRound` and observers see every one.
   * Default 10 000.
   */
  historyLimit?: number;
  /** Called when a host-mode reduce completed, with the accepted masses. */
  onRound?: (round: HostRound) => void;
  /** Called when the host fails (a consensus that cannot be formed). */
  onError?: (error: unknown) => void;
}

/** Options of {@link CoordinatorHost.attachFromRanks}: the mode and the coordinator come from the ranks. */
export type RanksHostOptions = Omit<CoordinatorHostOptions, 'mode' | 'coordinator'> & {
  /** Called once the first rank's settings formed the host (with those settings). */
  onAttached?: (host: CoordinatorHost, settings: RunSettings) => void;
  /** Continue a saved run: the coordinator starts from this state (`CoordinatorOptions.resume`). */
  resume?: CoordinatorResume;
};

/**
 * Sees what a {@link CoordinatorHost} sees, as it happens (a monitor, a logger): every notice,
 * every command sent, every completed host-mode round, every rank process end. Observers only
 * read; an observer that throws is ignored (the run goes on).
 */
export interface CoordinatorHostObserver {
  notice?(notice: CoordinatorNotice): void;
  command?(command: AddressedCommand): void;
  round?(round: HostRound): void;
  exit?(exit: RankExitEvent): void;
}

/** One host-mode reduce in flight. */
interface HostReduce {
  readonly version: number;
  /** The round's ranks still alive: the accepted set once every one is in. */
  readonly members: Set<number>;
  readonly dropped: number[];
  readonly snapshots: Set<number>;
  readonly received: Map<number, ReceivedContribution>;
  /** The sum is being formed (later deaths no longer change the accepted set). */
  closing: boolean;
  /** The coordinator finished: nothing more is sent for this round. */
  abandoned: boolean;
}

/**
 * The launcher-side driver of a real {@link ClusterCoordinator} (use it from
 * `launch({ onServer })`): feeds it the server's events (`RankJoined` once a rank's session
 * connected, every rank message with its rank, `ConnectionLost` when a control channel drops,
 * `RankExited` from the launcher's `run`, a `Tick` on a timer) and sends every command it
 * produces back through the server, in order per rank.
 *
 * Host modes (CpuSync / CpuCadence / CpuAsync): it is also the CPU reduce root. For each round
 * it receives the mass-scaled snapshots the coordinator's `RequestParams` asked for, averages
 * them with the mass law, ships the consensus on the data channels and reports
 * `ReduceCompleted` (the coordinator then sends `Update`). A rank that dies mid-round (its
 * process ends, its connection or data channel drops, or its snapshot does not come within
 * `timeoutMs`) is declared dead and left out (and, when its process still runs, ended through
 * the run's `stopRank`): the round completes with the survivors, its sum
 * and divisor over exactly their contributions. Collective modes: the coordinator's re-formation
 * commands (`DeclareDead`, `RequestNewNcclId`, `NewNcclSession`) reach the ranks, which rebuild
 * their process group among the survivors.
 *
 * @example
 * ```ts
 * await launch({ nproc: 3, script, mode: 'CpuCadence', elastic: true, onServer: (server, run) => {
 *   CoordinatorHost.attach(server, { mode: 'CpuCadence', run, coordinator: { worldSize: 3, totalSamples: 960, batchSize: 16, numEpochs: 2 } });
 * } });
 * ```
 */
export class CoordinatorHost {
  readonly coordinator: ClusterCoordinator;
  /** The coordinator's notices, oldest first (the newest `historyLimit`). */
  readonly notices: CoordinatorNotice[] = [];
  /** The commands sent, oldest first (the newest `historyLimit`). */
  readonly commands: AddressedCommand[] = [];
  /** Host modes: the reduces this host completed, oldest first (the newest `historyLimit`). */
  readonly rounds: HostRound[] = [];
  /** The rank process ends the launcher reported, in order (the newest `historyLimit`). */
  readonly exits: RankExitEvent[] = [];
  /** Host modes: the consensus of the last completed round (names `p:i` / `b:j`, parameter order). */
  lastConsensus: readonly HostTensor[] | undefined;
  readonly #consensusPool = new ConsensusPool();
  readonly #joins: JoinRule;
  #chains = new Map<number, Promise<void>>();
  #reduce: HostReduce | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #exitWatch: ReturnType<typeof setTimeout> | undefined;
  readonly #collective: boolean;
  readonly #observers = new Set<CoordinatorHostObserver>();
  /** A graceful stop asked for and not yet sent, with its fallback timer. */
  #stop: { timer: ReturnType<typeof setTimeout> | undefined } | undefined;
  #stopSent = false;
  readonly #historyLimit: number;

  private constructor(
    readonly server: ControlServer,
    readonly options: CoordinatorHostOptions,
  ) {
    this.#historyLimit = historyLimitOf('CoordinatorHost.attach', options.historyLimit);
    this.#collective = isCollectiveMode(options.mode);
    this.#joins = new JoinRule(server, this.#collective);
    const elche = options.coordinator.elche ?? { mode: options.mode };
    const maxFailure =
      options.coordinator.maxFailure ?? (options.run?.elastic ? options.run.maxFailure : undefined);
    // The run's one liveness setting gives the heartbeat timeout unless the options name one.
    const heartbeatTimeoutMs = options.coordinator.heartbeatTimeoutMs ?? options.run?.livenessMs;
    this.coordinator = new ClusterCoordinator(
      {
        ...options.coordinator,
        elche,
        ...(maxFailure ? { maxFailure } : {}),
        ...(heartbeatTimeoutMs === undefined ? {} : { heartbeatTimeoutMs }),
      },
      options.clock ?? { now: () => Date.now() },
    );
  }

  /** Attaches a coordinator driver to `server`; the tick timer stops when the run finishes. */
  static attach(server: ControlServer, options: CoordinatorHostOptions): CoordinatorHost {
    const host = new CoordinatorHost(server, options);
    host.#listen();
    return host;
  }

  /**
   * Attaches a coordinator driver formed from the run settings the ranks announce in their
   * `Hello` (`encodeRunSettings`, as the Trainer's ranks do): the first rank's settings give
   * the mode, the dataset length, the batch size, the epochs, the ElChe knobs and the
   * callback cadence. `launch` refuses ranks whose settings differ at the handshake. Ranks
   * that announce no settings (hand-written rank scripts) form no coordinator.
   */
  static attachFromRanks(server: ControlServer, options: RanksHostOptions = {}): void {
    let formed = false;
    const onConnected = (rank: number, hello: Hello): void => {
      if (formed) return;
      const settings = runSettingsOf(hello);
      if (settings === undefined || typeof settings === 'string') return;
      formed = true;
      server.off('rankConnected', onConnected);
      const { onAttached, resume, ...rest } = options;
      const host = new CoordinatorHost(server, {
        ...rest,
        mode: settings.mode,
        coordinator: {
          ...coordinatorOptionsFor(settings, hello.worldSize),
          ...(resume === undefined ? {} : { resume }),
        },
      });
      host.#listen();
      host.#onConnected(rank); // this event was emitted before the host listened
      onAttached?.(host, settings);
    };
    server.on('rankConnected', onConnected);
  }

  #listen(): void {
    const server = this.server;
    server.on('rankConnected', (rank) => this.#onConnected(rank));
    server.on('dataChannel', (rank) => this.#maybeJoin(rank));
    server.on('message', (rank, message) => {
      // Host modes: a session's bootstrap connection (data channel opener) is not the rank yet.
      if (!this.#joins.has(rank)) return;
      if (message.type === 'SnapshotReady') this.#onSnapshot(rank, message.version);
      this.feed({ ...message, rank } as CoordinatorInput);
    });
    server.on('rankDisconnected', (rank, error, hello) => {
      // A setup connection's close says nothing of the rank; nor does one with a newer
      // connection of the same rank still up.
      if (hello.capabilities.includes(BOOTSTRAP_CAPABILITY)) return;
      if (!this.#joins.has(rank) || server.connectedRanks().includes(rank)) return;
      // A clean close without Exiting is a loss too (the coordinator ignores it once finished).
      this.feed({ type: 'ConnectionLost', rank, message: error?.message ?? 'control connection closed' });
    });
    this.options.run?.onRankExit((exit) => this.#onRankExit(exit));
    this.#timer = setInterval(() => this.feed({ type: 'Tick' }), this.options.tickMs ?? 250);
    this.#timer.unref?.();
  }

  #onConnected(rank: number): void {
    this.#joins.connected(rank);
    this.#maybeJoin(rank);
  }

  /** True once the coordinator finished (Completed or a save-and-exit). */
  get finished(): boolean {
    return this.coordinator.state === 'finished';
  }

  /** Reports a rank's process end (the launcher's `run` does it by itself; host agents call it). */
  rankExited(exit: Omit<RankExited, 'type'>): void {
    this.feed({ type: 'RankExited', ...exit });
  }

  /** Stops the tick timer (done by itself once the run finished). */
  detach(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = undefined;
    if (this.#stop?.timer) clearTimeout(this.#stop.timer);
  }

  /**
   * Ends the run gracefully: every live rank gets `ShutdownWithSave(GracefulShutdown)`, and
   * saves then exits. Host modes send it right behind the next round's `RequestParams`, so the
   * ranks leave that round together (holding for its consensus) and stop at one coherent
   * step: the saved bundle is a point the run really passed through. When no round starts
   * within a few seconds (or in collective modes) it is sent at once. Idempotent.
   */
  requestStop(): void {
    if (this.#stop !== undefined || this.#stopSent || this.finished) return;
    if (this.#collective) {
      this.#sendStop();
      return;
    }
    const timer = setTimeout(() => this.#sendStop(), STOP_ROUND_WAIT_MS);
    timer.unref?.();
    this.#stop = { timer };
  }

  #sendStop(): void {
    if (this.#stopSent) return;
    this.#stopSent = true;
    if (this.#stop?.timer) clearTimeout(this.#stop.timer);
    this.#stop = undefined;
    for (const rank of this.coordinator.membership.liveRanks()) {
      this.#send(rank, { type: 'ShutdownWithSave', reason: 'GracefulShutdown' });
    }
  }

  /**
   * Adds an observer of what happens from now on (add it right after {@link attach}, in
   * `onServer`, to see the whole run); returns the function that removes it.
   */
  addObserver(observer: CoordinatorHostObserver): () => void {
    this.#observers.add(observer);
    return () => this.#observers.delete(observer);
  }

  #tell<K extends keyof CoordinatorHostObserver>(
    event: K,
    value: Parameters<NonNullable<CoordinatorHostObserver[K]>>[0],
  ): void {
    for (const observer of this.#observers) {
      try {
        (observer[event] as ((value: unknown) => void) | undefined)?.call(observer, value);
      } catch {
        // An observer's failure is its own: the run does not depend on it.
      }
    }
  }

  /** Feeds one input to the coordinator and sends what it produced. */
  feed(input: CoordinatorInput): void {
    const output = this.coordinator.handle(input);
    for (const notice of output.notices) {
      if (notice.type === 'RankDead') this.#endDeclaredDead(notice.record);
      pushBounded(this.notices, notice, this.#historyLimit);
      this.options.onNotice?.(notice);
      this.#tell('notice', notice);
    }
    // Host modes: the coordinator says what to collect and what to leave out of each round.
    for (const command of output.host) this.#onHostCommand(command);
    let roundStarted = false;
    for (const addressed of output.commands) {
      pushBounded(this.commands, addressed, this.#historyLimit);
      this.#tell('command', addressed);
      this.#dispatch(addressed);
      if (addressed.command.type === 'RequestParams') roundStarted = true;
    }
    if (roundStarted && this.#stop !== undefined) this.#sendStop();
    if (this.finished) {
      this.detach();
      this.#watchExits();
    }
  }

  /**
   * A rank declared dead whose process still runs (hung, stalled) is ended, not waited on. A
   * rank that dropped its connection or said Exiting early is most likely on its way out:
   * it gets a moment to end on its own (its own exit status then stays its record).
   */
  #endDeclaredDead(record: RankDeathRecord): void {
    const run = this.options.run;
    if (!run || record.cause === 'process-exit') return;
    // After a graceful stop every rank says Exiting once it saved: it is leaving on its own.
    if (this.#stopSent && record.cause === 'exited-early') return;
    const stop = (): void => {
      run.stopRank(record.rank, {
        reason: `declared dead by the coordinator (${record.cause}: ${record.message})`,
      });
    };
    if (record.cause === 'heartbeat-timeout' || record.cause === 'stalled') {
      stop();
      return;
    }
    setTimeout(stop, Math.min(LEAVING_GRACE_MS, run.livenessMs)).unref?.();
  }

  /**
   * Once the run finished, every rank process should end on its own (after a final save at
   * most): one still running past `max(2 × livenessMs, callbackTimeoutMs)` is ended through
   * the run's `stopRank`, so the launcher never waits on it forever.
   */
  #watchExits(): void {
    const run = this.options.run;
    if (!run || this.#exitWatch) return;
    const boundMs = Math.max(2 * run.livenessMs, this.coordinator.config.callbackTimeoutMs);
    this.#exitWatch = setTimeout(() => {
      for (const rank of run.ranks()) {
        if (rank.running)
          run.stopRank(rank.rank, { reason: `still running ${boundMs} ms after the run finished` });
      }
    }, boundMs);
    this.#exitWatch.unref?.();
  }

  #onHostCommand(command: HostCommand): void {
    switch (command.type) {
      case 'Collect':
        this.#reduce = {
          version: command.version,
          members: new Set(command.ranks),
          dropped: [],
          snapshots: new Set(),
          received: new Map(),
          closing: false,
          abandoned: false,
        };
        return;
      case 'Drop':
        if (this.#reduce?.version === command.version) this.#dropFromReduce(command.rank);
        return;
      case 'Abandon':
        if (this.#reduce?.version === command.version) {
          this.#reduce.abandoned = true;
          this.#reduce = undefined;
        }
        return;
    }
  }

  #onRankExit(exit: RankExitEvent): void {
    pushBounded(this.exits, exit, this.#historyLimit);
    this.#tell('exit', exit);
    const failure = exit.failure;
    this.rankExited({
      rank: exit.rank,
      pid: exit.pid,
      ...(exit.exitCode === null ? {} : { exitCode: exit.exitCode }),
      ...(exit.signal === null ? {} : { signal: exit.signal }),
      ...(failure ? { message: failure.message } : {}),
      ...(failure?.stack ? { stack: failure.stack } : {}),
    });
  }

  #maybeJoin(rank: number): void {
    if (this.#joins.tryJoin(rank)) this.feed({ type: 'RankJoined', rank });
  }

  #dispatch({ rank, command }: AddressedCommand): void {
    const reduce = this.#reduce;
    if (command.type === 'RequestParams' && reduce?.version === command.version) {
      // Listen before asking: the snapshot may arrive before the send resolves.
      const channel = this.server.dataChannelOf(rank);
      // Outside this feed: losing the rank feeds the coordinator again.
      if (!channel)
        queueMicrotask(() =>
          this.#contributionLost(
            reduce,
            rank,
            new FlodlError('ERR_RANK_FAILED', `rank ${rank} has no data channel`, { op: 'CoordinatorHost' }),
          ),
        );
      else {
        channel
          .receiveContribution({
            timeoutMs: this.options.timeoutMs ?? 2 * (this.options.run?.livenessMs ?? DEFAULT_LIVENESS_MS),
          })
          .then(
            (contribution) => {
              reduce.received.set(rank, contribution);
              this.#maybeClose(reduce);
            },
            (error: unknown) => this.#contributionLost(reduce, rank, error),
          );
      }
    }
    this.#send(rank, command);
    if (command.type === 'Checkpoint') {
      // Every live rank saves its own optimizer state into the target's bundle.
      for (const other of this.coordinator.membership.liveRanks()) {
        if (other !== rank) this.#send(other, command);
      }
    }
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
    this.#maybeClose(reduce);
  }

  /** A death mid-round: the rank's contribution enters neither the sum nor the divisor. */
  #dropFromReduce(rank: number): void {
    const reduce = this.#reduce;
    if (!reduce || reduce.closing || !reduce.members.delete(rank)) return;
    reduce.dropped.push(rank);
    reduce.received.delete(rank);
    this.#maybeClose(reduce);
  }

  /** A snapshot that cannot arrive (closed or timed-out data channel): the rank is lost. */
  #contributionLost(reduce: HostReduce, rank: number, error: unknown): void {
    if (reduce.abandoned || reduce.closing || !reduce.members.has(rank)) return;
    const why = error instanceof Error ? error.message : String(error);
    this.feed({ type: 'ConnectionLost', rank, message: `no snapshot for round ${reduce.version}: ${why}` });
    // Already out of the cohort (or the run finished): leave it out of this round all the same.
    this.#dropFromReduce(rank);
  }

  /**
   * Completes the round once every surviving member's snapshot is in on both channels (the
   * control channel can trail the data channel: the coordinator closes each window at its
   * SnapshotReady).
   */
  #maybeClose(reduce: HostReduce): void {
    if (reduce.abandoned || reduce.closing || reduce.members.size === 0) return;
    for (const rank of reduce.members) {
      if (!reduce.received.has(rank) || !reduce.snapshots.has(rank)) return;
    }
    reduce.closing = true;
    this.#completeReduce(reduce).catch((error: unknown) => this.options.onError?.(error));
  }

  async #completeReduce(reduce: HostReduce): Promise<void> {
    const accepted = [...reduce.members].sort((left, right) => left - right);
    // The consensus is written into a buffer set that neither the last consensus nor a round
    // still sending uses; it is given back once a later consensus replaces this one.
    const buffers = this.#consensusPool.acquire();
    let folded: FoldedRound;
    try {
      // The consensus goes out on the data channels (each tensor averaged as its turn comes)
      // before the coordinator's Update; a rank dying now is the coordinator's to declare (its
      // Update is never sent).
      folded = await foldAndSend(
        'CoordinatorHost',
        this.server,
        reduce.version,
        accepted,
        reduce.received,
        buffers,
      );
    } catch (error) {
      this.#consensusPool.release(buffers);
      throw error;
    }
    const { consensus, masses, totalMass } = folded;
    if (this.#reduce === reduce) this.#reduce = undefined;
    // A round nobody trained in leaves the replicas, and so the last consensus, as they were.
    if (totalMass > 0) {
      this.lastConsensus = consensus;
      this.#consensusPool.holdLast(buffers);
    } else {
      this.#consensusPool.release(buffers);
    }
    if (reduce.abandoned) return;
    const round: HostRound = {
      version: reduce.version,
      accepted,
      masses,
      totalMass,
      ...(reduce.dropped.length > 0 ? { dropped: [...reduce.dropped] } : {}),
    };
    pushBounded(this.rounds, round, this.#historyLimit);
    this.options.onRound?.(round);
    this.#tell('round', round);
    this.feed({ type: 'ReduceCompleted', version: reduce.version, accepted });
  }
}
