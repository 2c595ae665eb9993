import type { EpochMetrics, EpochPlan } from '../wire/messages.js';
import { ManualClock } from './clock.js';
import { ClusterCoordinator } from './coordinator.js';
import type { CoordinatorOptions } from './coordinator-config.js';
import type {
  AddressedCommand,
  CoordinatorCommand,
  CoordinatorInput,
  CoordinatorNotice,
} from './messages.js';

/** One simulated rank: how fast it computes and how it fails. */
export interface SimulatedRankSpec {
  /** Compute time per batch (ms). */
  msPerBatch: number;
  /** Data wait per batch (ms). Default 0. */
  dataMs?: number;
  /** Uniform relative jitter of the compute time (0.03 = ±3%). Default 0. */
  jitter?: number;
  /** Extra data wait on the first batch of each reduce window (the "fill"). Default 0. */
  fillMs?: number;
  /** The process dies at this time (its supervisor reports `RankExited`). */
  dieAtMs?: number;
  /** The rank stops responding at this time (only heartbeat staleness can notice). */
  hangAtMs?: number;
  /**
   * The rank stops training at this time but keeps heartbeating (a main thread stuck in a
   * native call, heartbeats from the worker thread): only stall suspicion can notice.
   */
  stallAtMs?: number;
  /**
   * The rank stops responding (as `hangAtMs`) inside the first collective it joins at or after
   * this time: its peers are left waiting in that collective with it (a SIGSTOP mid-reduce).
   */
  hangInCollectiveAtMs?: number;
  /** Eval callback duration (ms). Default 20. */
  evalMs?: number;
  /** Checkpoint callback duration (ms). Default 30. */
  checkpointMs?: number;
  /** Every checkpoint on this rank fails. Default false. */
  failCheckpoint?: boolean;
}

/** Options of {@link SimulatedCluster}. */
export interface SimulatedClusterOptions {
  ranks: readonly SimulatedRankSpec[];
  coordinator: Omit<CoordinatorOptions, 'worldSize'>;
  /** NCCL collective duration once every member has joined (ms). Default 5. */
  syncMs?: number;
  /**
   * How long a rank inside a collective takes to leave it after a peer's `DeclareDead` (ms):
   * the collective returns only once the dead peer's process is ended. Default 0.
   */
  collectiveAbortMs?: number;
  /** CPU reduce duration once every snapshot is in (ms). Default 5. */
  reduceMs?: number;
  /** Rank heartbeat period (ms). Default 1000. */
  heartbeatMs?: number;
  /** Coordinator tick period (ms). Default 500. */
  tickMs?: number;
  /** Divergence a rank reports for a round. Default 0.01. */
  divergence?: (round: { version: number; rank: number }) => number;
  /** Learning rate ranks report, by global step. Default constant 0.1. */
  lr?: (globalStep: number) => number;
  /** Jitter seed. Default 1. */
  seed?: number;
  /** Simulated-time limit (ms). Default 10⁹. */
  maxTimeMs?: number;
}

/** A slice a rank finished and reported (what epoch coverage is made of). */
export interface CompletedSlice {
  readonly rank: number;
  readonly epoch: number;
  readonly offset: number;
  readonly size: number;
  /** Simulated time the slice was reported (ms). */
  readonly timeMs: number;
}

/** A slice a rank was still working on when it died or hung, and how much of it ran. */
export interface AbandonedSlice extends CompletedSlice {
  readonly doneSamples: number;
}

/** What a simulation produced. */
export interface SimulationResult {
  readonly finished: boolean;
  readonly timeMs: number;
  readonly notices: readonly CoordinatorNotice[];
  readonly commands: readonly (AddressedCommand & { readonly timeMs: number })[];
  readonly epochs: readonly EpochMetrics[];
  readonly completed: readonly CompletedSlice[];
  readonly abandoned: readonly AbandonedSlice[];
}

interface Piece {
  epoch: number;
  offset: number;
  size: number;
  done: number;
  startedAt: number;
  lossSum: number;
  computeMs: number;
  dataMs: number;
}

interface RankState {
  readonly rank: number;
  readonly spec: SimulatedRankSpec;
  pieces: Piece[];
  inbox: CoordinatorCommand[];
  computing: boolean;
  blocked: 'none' | 'collective' | 'callback';
  throttled: boolean;
  /** No activity at all (crashed, hung, or shut down). */
  gone: boolean;
  /** Gone but still heartbeating (`stallAtMs`). */
  stalled?: boolean;
  /** The process ended (crash or clean exit); a hung rank is gone but has not exited. */
  exited: boolean;
  stepCount: number;
  firstOfWindow: boolean;
  globalStep: number;
  divergence: number | undefined;
  /** Time spent outside steps (callbacks) that the next step's wait will show. */
  gapMs: number;
}

interface Event {
  readonly time: number;
  readonly seq: number;
  readonly run: () => void;
}

/**
 * A deterministic discrete-event simulation of ranks driving a {@link ClusterCoordinator} on a
 * {@link ManualClock}: the coordinator's in-process test backend. Ranks compute batches at
 * their own speed, report `Batch` / `Metrics`, obey every command (collectives, snapshots,
 * throttles, callbacks, shutdown), and can die or hang on schedule.
 *
 * @example
 * ```ts
 * const result = new SimulatedCluster({
 *   ranks: [{ msPerBatch: 35 }, { msPerBatch: 10 }],
 *   coordinator: { totalSamples: 32_000, batchSize: 32, numEpochs: 2, elche: { mode: 'CpuCadence' } },
 * }).run();
 * result.epochs.length; // 2
 * ```
 */
export class SimulatedCluster {
  readonly clock = new ManualClock();
  readonly coordinator: ClusterCoordinator;
  readonly options: SimulatedClusterOptions;
  #ranks: RankState[];
  #events: Event[] = [];
  #seq = 0;
  #random: () => number;
  #notices: CoordinatorNotice[] = [];
  #commands: (AddressedCommand & { timeMs: number })[] = [];
  #completed: CompletedSlice[] = [];
  #abandoned: AbandonedSlice[] = [];
  #collective = new Set<number>();
  #snapshots = new Set<number>();
  #roundRanks = new Set<number>();
  #roundVersion = 0;
  #reducePending = false;

  constructor(options: SimulatedClusterOptions) {
    this.options = options;
    this.coordinator = new ClusterCoordinator(
      { ...options.coordinator, worldSize: options.ranks.length },
      this.clock,
    );
    this.#random = mulberry32(options.seed ?? 1);
    this.#ranks = options.ranks.map((spec, rank) => ({
      rank,
      spec,
      pieces: [],
      inbox: [],
      computing: false,
      blocked: 'none',
      throttled: false,
      gone: false,
      exited: false,
      stepCount: 0,
      firstOfWindow: true,
      globalStep: 0,
      divergence: undefined,
      gapMs: 0,
    }));
  }

  /** Runs until the coordinator finishes (or the time limit) and returns what happened. */
  run(): SimulationResult {
    const maxTime = this.options.maxTimeMs ?? 1e9;
    for (const state of this.#ranks) {
      if (state.spec.dieAtMs !== undefined) this.#at(state.spec.dieAtMs, () => this.#die(state));
      if (state.spec.hangAtMs !== undefined) this.#at(state.spec.hangAtMs, () => this.#hang(state));
      if (state.spec.stallAtMs !== undefined) this.#at(state.spec.stallAtMs, () => this.#hang(state, true));
      this.#at(0, () => this.#feed({ type: 'RankJoined', rank: state.rank }));
      this.#scheduleHeartbeat(state);
    }
    this.#scheduleTick();
    while (this.#events.length > 0 && this.coordinator.state !== 'finished') {
      const event = this.#events.shift()!;
      if (event.time > maxTime) break;
      this.clock.set(event.time);
      event.run();
    }
    return {
      finished: this.coordinator.state === 'finished',
      timeMs: this.clock.now(),
      notices: this.#notices,
      commands: this.#commands,
      epochs: this.#notices.flatMap((notice) => (notice.type === 'EpochMetrics' ? [notice.metrics] : [])),
      completed: this.#completed,
      abandoned: this.#abandoned,
    };
  }

  #at(time: number, run: () => void): void {
    const event = { time, seq: this.#seq++, run };
    let index = this.#events.length;
    while (index > 0) {
      const previous = this.#events[index - 1]!;
      if (previous.time < time || (previous.time === time && previous.seq < event.seq)) break;
      index -= 1;
    }
    this.#events.splice(index, 0, event);
  }

  #feed(input: CoordinatorInput): void {
    const output = this.coordinator.handle(input);
    this.#notices.push(...output.notices);
    for (const notice of output.notices) this.#observe(notice);
    for (const addressed of output.commands) {
      this.#commands.push({ ...addressed, timeMs: this.clock.now() });
      const state = this.#ranks[addressed.rank];
      if (!state || state.gone) continue;
      if (addressed.command.type === 'DeclareDead' && state.blocked === 'collective') {
        // The abort reaches a rank inside the collective once the dead peer is ended.
        const command = addressed.command;
        this.#at(this.clock.now() + (this.options.collectiveAbortMs ?? 0), () => {
          if (state.gone) return;
          this.#apply(state, command);
          this.#drain(state);
        });
        continue;
      }
      state.inbox.push(addressed.command);
      if (!state.computing && state.blocked === 'none') this.#at(this.clock.now(), () => this.#drain(state));
    }
  }

  /** The sim's CPU reduce root follows the rounds through the notices. */
  #observe(notice: CoordinatorNotice): void {
    if (notice.type === 'AveragingStarted') {
      this.#roundVersion = notice.version;
      this.#roundRanks = new Set(notice.ranks);
      this.#snapshots.clear();
      this.#collective.clear();
      this.#reducePending = false;
    } else if (notice.type === 'RankDead' || notice.type === 'RankSuspected') {
      const rank = notice.type === 'RankDead' ? notice.record.rank : notice.rank;
      this.#roundRanks.delete(rank);
      this.#collective.delete(rank);
      this.#maybeReduce();
    }
  }

  #drain(state: RankState): void {
    if (state.gone) return;
    while (state.inbox.length > 0 && state.blocked === 'none' && !state.gone) {
      this.#apply(state, state.inbox.shift()!);
    }
    if (!state.gone && !state.computing && state.blocked === 'none' && !state.throttled)
      this.#startBatch(state);
  }

  #apply(state: RankState, command: CoordinatorCommand): void {
    const now = this.clock.now();
    switch (command.type) {
      case 'StartEpoch':
        state.pieces.push(newPiece(command.plan, now));
        return;
      case 'ExtendPartition':
        state.pieces.push(
          newPiece(
            { epoch: command.epoch, partitionOffset: command.offset, partitionSize: command.size },
            now,
          ),
        );
        return;
      case 'SyncNow':
        // A DeclareDead behind this SyncNow aborts the collective before it can complete.
        if (state.inbox.some((queued) => queued.type === 'DeclareDead')) return;
        state.blocked = 'collective';
        this.#collective.add(state.rank);
        if (state.spec.hangInCollectiveAtMs !== undefined && now >= state.spec.hangInCollectiveAtMs) {
          this.#hang(state);
          return;
        }
        this.#maybeCollective();
        return;
      case 'RequestParams':
        state.firstOfWindow = true;
        this.#feed({ type: 'SnapshotReady', rank: state.rank, version: command.version });
        this.#snapshots.add(state.rank);
        this.#maybeReduce();
        return;
      case 'Update':
        state.throttled = false;
        state.divergence = this.options.divergence?.({ version: command.version, rank: state.rank }) ?? 0.01;
        return;
      case 'Throttle':
        state.throttled = true;
        return;
      case 'SetGlobalStep':
        state.globalStep = command.globalStep;
        this.#feed({ type: 'LrUpdate', rank: state.rank, lr: this.options.lr?.(command.globalStep) ?? 0.1 });
        return;
      case 'Checkpoint':
        if (command.targetRank === state.rank) this.#callback(state, 'checkpoint', command.version);
        return;
      case 'ExecuteEvalCallback':
        if (command.targetRank === state.rank)
          this.#callback(state, 'eval', command.scheduleId, command.epoch);
        return;
      case 'DeclareDead':
        if (state.blocked === 'collective') {
          state.blocked = 'none';
          this.#collective.delete(state.rank);
        }
        return;
      case 'RequestNewNcclId':
        this.#feed({ type: 'NewNcclIdGenerated', rank: state.rank, uidBytes: new Uint8Array(128) });
        return;
      case 'Shutdown':
      case 'ShutdownWithSave':
        state.gone = true;
        state.exited = true;
        this.#feed({ type: 'Exiting', rank: state.rank });
        return;
      default:
        return;
    }
  }

  #maybeCollective(): void {
    const members = [...this.#roundRanks].filter((rank) => !this.#ranks[rank]?.exited);
    if (members.length === 0 || !members.every((rank) => this.#collective.has(rank))) return;
    const version = this.#roundVersion;
    const joined = [...this.#collective];
    this.#collective.clear();
    this.#at(this.clock.now() + (this.options.syncMs ?? 5), () => {
      for (const rank of joined) {
        const state = this.#ranks[rank]!;
        if (state.gone || state.blocked !== 'collective') continue;
        state.blocked = 'none';
        state.firstOfWindow = true;
        const divergence = this.options.divergence?.({ version, rank }) ?? 0.01;
        this.#feed({ type: 'SyncAck', rank, stepCount: state.stepCount, divergence });
      }
      for (const rank of joined) this.#drain(this.#ranks[rank]!);
    });
  }

  #maybeReduce(): void {
    if (this.#reducePending || this.#roundRanks.size === 0) return;
    const members = [...this.#roundRanks];
    if (!members.every((rank) => this.#snapshots.has(rank))) return;
    if (this.coordinator.backend !== 'Cpu') return;
    this.#reducePending = true;
    const version = this.#roundVersion;
    this.#at(this.clock.now() + (this.options.reduceMs ?? 5), () => {
      const accepted = members.filter((rank) => !this.#ranks[rank]?.gone);
      this.#roundRanks = new Set();
      this.#feed({ type: 'ReduceCompleted', version, accepted });
    });
  }

  #callback(state: RankState, kind: 'eval' | 'checkpoint', id: number, epoch = 0): void {
    state.blocked = 'callback';
    const elapsedMs = kind === 'eval' ? (state.spec.evalMs ?? 20) : (state.spec.checkpointMs ?? 30);
    this.#at(this.clock.now() + elapsedMs, () => {
      if (state.gone) return;
      state.blocked = 'none';
      state.gapMs += elapsedMs;
      if (kind === 'eval') {
        this.#feed({ type: 'EvalResult', rank: state.rank, scheduleId: id, epoch, metric: 0.9, elapsedMs });
      } else {
        this.#feed({
          type: 'CheckpointResult',
          rank: state.rank,
          version: id,
          elapsedMs,
          ...(state.spec.failCheckpoint ? { error: 'disk full' } : {}),
        });
      }
      this.#drain(state);
    });
  }

  #startBatch(state: RankState): void {
    const piece = state.pieces[0];
    if (!piece) return;
    const jitter = state.spec.jitter ?? 0;
    const compute = state.spec.msPerBatch * (1 + jitter * (2 * this.#random() - 1));
    // The step timer runs from the previous step's end, so callback time shows up as wait.
    const data =
      (state.spec.dataMs ?? 0) + (state.firstOfWindow ? (state.spec.fillMs ?? 0) : 0) + state.gapMs;
    state.gapMs = 0;
    state.firstOfWindow = false;
    state.computing = true;
    this.#at(this.clock.now() + compute + data, () => this.#finishBatch(state, piece, compute, data));
  }

  #finishBatch(state: RankState, piece: Piece, compute: number, data: number): void {
    state.computing = false;
    if (state.gone) return;
    const batchSize = this.coordinator.config.batchSize;
    state.stepCount += 1;
    piece.done += 1;
    const loss = 2 / (1 + state.globalStep / 50);
    piece.lossSum += loss;
    piece.computeMs += compute;
    piece.dataMs += data;
    this.#feed({
      type: 'Batch',
      rank: state.rank,
      batchMs: compute,
      dataMs: data,
      stepCount: state.stepCount,
      batchLoss: loss,
      ...(state.divergence === undefined ? {} : { syncDivergence: state.divergence }),
    });
    state.divergence = undefined;
    if (piece.done * batchSize >= piece.size) {
      state.pieces.shift();
      const { epoch, offset, size } = piece;
      this.#completed.push({ rank: state.rank, epoch, offset, size, timeMs: this.clock.now() });
      this.#feed({
        type: 'Metrics',
        rank: state.rank,
        epoch: piece.epoch,
        avgLoss: piece.lossSum / piece.done,
        batchesProcessed: piece.done,
        epochMs: this.clock.now() - piece.startedAt,
        samplesProcessed: piece.size,
        shareCompleteMs: piece.computeMs + piece.dataMs,
        computeOnlyMs: piece.computeMs,
        dataStarveMs: piece.dataMs,
        scalars: { accuracy: { sum: 0.8 * piece.done, count: piece.done } },
      });
    }
    this.#drain(state);
  }

  #abandon(state: RankState): void {
    const batchSize = this.coordinator.config.batchSize;
    for (const piece of state.pieces) {
      const { epoch, offset, size } = piece;
      const doneSamples = piece.done * batchSize;
      this.#abandoned.push({ rank: state.rank, epoch, offset, size, doneSamples, timeMs: this.clock.now() });
    }
    state.pieces = [];
  }

  #die(state: RankState): void {
    if (state.gone) return;
    this.#abandon(state);
    state.gone = true;
    state.exited = true;
    this.#feed({
      type: 'RankExited',
      rank: state.rank,
      exitCode: 1,
      pid: 1000 + state.rank,
      message: 'simulated crash',
    });
    this.#maybeReduce();
  }

  #hang(state: RankState, heartbeating = false): void {
    if (state.gone) return;
    this.#abandon(state);
    state.gone = true;
    state.stalled = heartbeating;
  }

  #scheduleHeartbeat(state: RankState): void {
    const period = this.options.heartbeatMs ?? 1000;
    this.#at(this.clock.now() + period, () => {
      if ((state.gone && !state.stalled) || this.coordinator.state === 'finished') return;
      this.#feed({ type: 'Heartbeat', rank: state.rank, stepCount: state.stepCount });
      this.#scheduleHeartbeat(state);
    });
  }

  #scheduleTick(): void {
    this.#at(this.clock.now() + (this.options.tickMs ?? 500), () => {
      if (this.coordinator.state === 'finished') return;
      this.#feed({ type: 'Tick' });
      this.#scheduleTick();
    });
  }
}

function newPiece(plan: EpochPlan, now: number): Piece {
  return {
    epoch: plan.epoch,
    offset: plan.partitionOffset,
    size: plan.partitionSize,
    done: 0,
    startedAt: now,
    lossSum: 0,
    computeMs: 0,
    dataMs: 0,
  };
}

/** A small seeded PRNG (mulberry32) so simulated jitter is reproducible. */
function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let value = state;
    value = Math.imul(value ^ (value >>> 15), value | 1);
    value ^= value + Math.imul(value ^ (value >>> 7), value | 61);
    return ((value ^ (value >>> 14)) >>> 0) / 4294967296;
  };
}
