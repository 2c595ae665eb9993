import type { IntentKind } from '../wire/messages.js';
import type { Clock } from './clock.js';
import type { CoordinatorCommand, CoordinatorNotice, RankReport } from './messages.js';
import type { CallbackRoles } from './roles.js';

/** Where the scheduler's commands and notices go (the coordinator's output of the moment). */
export interface CallbackSink {
  send(rank: number, command: CoordinatorCommand): void;
  broadcast(command: CoordinatorCommand): void;
  notice(notice: CoordinatorNotice): void;
  /** Excludes a callback's wall time from `rank`'s window ledger. */
  exclude(rank: number, elapsedMs: number): void;
  isLive(rank: number): boolean;
  liveMask(): boolean[];
}

/** The cadence part of the coordinator's configuration the scheduler needs. */
export interface CallbackCadence {
  readonly checkpointEvery: number | undefined;
  readonly evalEveryEpochs: number | undefined;
  readonly epochCallback: boolean;
  readonly callbackTimeoutMs: number;
}

interface Pending {
  readonly id: number;
  readonly epoch: number;
  rank: number;
  readonly deadline: number;
}

type Result<T extends 'EvalResult' | 'CheckpointResult'> = Extract<RankReport, { type: T }>;

/**
 * Eval and checkpoint orchestration (floDl `callback_roles` + the dispatch side of
 * `epoch_dispatch`): the cadences (`checkpointEvery`, `evalEveryEpochs`), the cooperative
 * intents folded into the next epoch boundary, dispatch to the elected rank, results (the eval
 * broadcast to every rank, the checkpoint retried on the next untried live rank), callback-cost
 * learning and time exclusion, and the slack budget of the epoch's last window.
 */
export class CallbackScheduler {
  readonly roles: CallbackRoles;
  readonly cadence: CallbackCadence;
  #clock: Clock;
  #sink: CallbackSink;
  #evalIntent = false;
  #checkpointIntent = false;
  #scheduleIds = 0;
  #pendingEval: Pending | undefined;
  #pendingCheckpoint: Pending | undefined;

  constructor(roles: CallbackRoles, cadence: CallbackCadence, clock: Clock, sink: CallbackSink) {
    this.roles = roles;
    this.cadence = cadence;
    this.#clock = clock;
    this.#sink = sink;
  }

  /** An eval or checkpoint awaits its result. */
  get pendingEval(): boolean {
    return this.#pendingEval !== undefined;
  }
  get pendingCheckpoint(): boolean {
    return this.#pendingCheckpoint !== undefined;
  }
  /** True while `rank` runs a pending eval or checkpoint (its training may pause meanwhile). */
  busyWith(rank: number): boolean {
    return this.#pendingEval?.rank === rank || this.#pendingCheckpoint?.rank === rank;
  }

  /** Records a cooperative intent: a request served at the next coherent boundary. */
  request(kind: IntentKind): void {
    if (kind === 'EvalNow') this.#evalIntent = true;
    else this.#checkpointIntent = true;
  }

  /** Whether a checkpoint / eval fires at the boundary into `epoch` (cadence multiple or intent). */
  dueAt(epoch: number): { checkpoint: boolean; eval: boolean } {
    const { checkpointEvery, evalEveryEpochs } = this.cadence;
    return {
      checkpoint: this.#checkpointIntent || (checkpointEvery !== undefined && epoch % checkpointEvery === 0),
      eval: this.#evalIntent || (evalEveryEpochs !== undefined && epoch % evalEveryEpochs === 0),
    };
  }

  /** At the boundary into `epoch` (> 0): the checkpoint, then the eval, when due. */
  dispatchBoundary(epoch: number): void {
    if (epoch === 0) return;
    const due = this.dueAt(epoch);
    if (due.checkpoint) this.dispatchCheckpoint(epoch);
    if (due.eval) this.dispatchEval(epoch);
  }

  /** Sends `ExecuteEvalCallback` to the eval role; false when no live rank holds it. */
  dispatchEval(epoch: number): boolean {
    this.#evalIntent = false;
    const target = this.roles.evalRole;
    if (target === undefined || !this.#sink.isLive(target)) return false;
    const id = ++this.#scheduleIds;
    this.#pendingEval = { id, epoch, rank: target, deadline: this.#deadline() };
    this.#sink.send(target, { type: 'ExecuteEvalCallback', scheduleId: id, epoch, targetRank: target });
    return true;
  }

  /** Sends `Checkpoint` to the checkpoint role; false when no live rank holds it. */
  dispatchCheckpoint(version: number): boolean {
    this.#checkpointIntent = false;
    const target = this.roles.checkpointRole;
    if (target === undefined || !this.#sink.isLive(target)) return false;
    this.#pendingCheckpoint = { id: version, epoch: version, rank: target, deadline: this.#deadline() };
    this.#sink.send(target, { type: 'Checkpoint', version, targetRank: target });
    return true;
  }

  /** An eval result: excluded from the ledger, learned, broadcast when it succeeded. True when it settled the pending eval. */
  onEvalResult(result: Result<'EvalResult'>): boolean {
    // The wall time was spent either way.
    this.#sink.exclude(result.rank, result.elapsedMs);
    this.roles.evalCost.add(result.elapsedMs);
    this.#sink.notice({
      type: 'EvalResult',
      rank: result.rank,
      epoch: result.epoch,
      metric: result.metric,
      ...(result.error === undefined ? {} : { error: result.error }),
    });
    // Eval failures are logged, not retried (floDl).
    if (result.error === undefined) {
      this.#sink.broadcast({ type: 'EvalBroadcast', epoch: result.epoch, metric: result.metric });
    }
    if (this.#pendingEval?.id !== result.scheduleId) return false;
    this.#pendingEval = undefined;
    return true;
  }

  /** A checkpoint result: success moves the role there; failure retries on the next untried live rank. */
  onCheckpointResult(result: Result<'CheckpointResult'>): void {
    this.#sink.exclude(result.rank, result.elapsedMs);
    const pending = this.#pendingCheckpoint?.id === result.version ? this.#pendingCheckpoint : undefined;
    if (result.error === undefined) {
      this.roles.checkpointSucceeded(result.version, result.rank, result.elapsedMs);
      this.#sink.notice({ type: 'CheckpointResult', rank: result.rank, version: result.version });
      if (pending) this.#pendingCheckpoint = undefined;
      return;
    }
    const next = this.roles.checkpointFailed(
      result.version,
      result.rank,
      this.#sink.liveMask(),
      result.elapsedMs,
    );
    this.#sink.notice({
      type: 'CheckpointResult',
      rank: result.rank,
      version: result.version,
      error: result.error,
      ...(next === undefined ? { gaveUp: true } : {}),
    });
    if (next === undefined) {
      if (pending) this.#pendingCheckpoint = undefined;
      return;
    }
    if (pending) pending.rank = next;
    this.#sink.send(next, { type: 'Checkpoint', version: result.version, targetRank: next });
  }

  /** An epoch callback ran for `elapsedMs` on `rank`. */
  onEpochCallback(rank: number, elapsedMs: number): void {
    this.#sink.exclude(rank, elapsedMs);
    this.roles.epochCallbackCost.add(elapsedMs);
  }

  /** A dead rank's pending checkpoint moves on (as a failure); its pending eval goes to the new eval role. */
  onDeath(rank: number): void {
    const checkpoint = this.#pendingCheckpoint;
    if (checkpoint?.rank === rank) {
      const next = this.roles.checkpointFailed(checkpoint.id, rank, this.#sink.liveMask(), 0);
      if (next === undefined) this.#pendingCheckpoint = undefined;
      else {
        checkpoint.rank = next;
        this.#sink.send(next, { type: 'Checkpoint', version: checkpoint.id, targetRank: next });
      }
    }
    if (this.#pendingEval?.rank === rank) {
      const { epoch } = this.#pendingEval;
      this.#pendingEval = undefined;
      this.dispatchEval(epoch);
    }
  }

  /** Gives up on callbacks past their deadline; true when one expired. */
  expire(now: number): boolean {
    let expired = false;
    if (this.#pendingEval && now > this.#pendingEval.deadline) {
      this.#pendingEval = undefined;
      expired = true;
    }
    if (this.#pendingCheckpoint && now > this.#pendingCheckpoint.deadline) {
      this.#pendingCheckpoint = undefined;
      expired = true;
    }
    return expired;
  }

  /**
   * Per-rank callback wall time (learned EWMA, ms) that will fire at the boundary into
   * `nextEpoch`: the epoch callback on its role, and the checkpoint / eval on theirs when due.
   */
  slackFor(nextEpoch: number, live: readonly boolean[]): number[] {
    const slack = new Array<number>(live.length).fill(0);
    const add = (rank: number | undefined, cost: number | undefined) => {
      if (rank !== undefined && cost !== undefined && live[rank]) slack[rank] = (slack[rank] ?? 0) + cost;
    };
    if (this.cadence.epochCallback) add(this.roles.epochCallbackRole, this.roles.epochCallbackCost.value);
    const due = this.dueAt(nextEpoch);
    if (due.checkpoint) add(this.roles.checkpointRole, this.roles.checkpointCost.value);
    if (due.eval) add(this.roles.evalRole, this.roles.evalCost.value);
    return slack;
  }

  /** Sends `SetEpochCallbackRole` to every live rank when the role moved. */
  broadcastRoleIfDirty(): void {
    const role = this.roles.takeDirtyEpochRole();
    if (role !== undefined) this.#sink.broadcast({ type: 'SetEpochCallbackRole', rank: role });
  }

  #deadline(): number {
    return this.#clock.now() + this.cadence.callbackTimeoutMs;
  }
}
