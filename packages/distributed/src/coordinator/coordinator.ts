import type { FlodlError } from '@flodl/tensor-native';
import type { SaveReason } from '../wire/messages.js';
import { lrScaleFactor } from './averaging/lr-scale.js';
import type { MassLedger } from './averaging/mass-law.js';
import type { OvershootBudget } from './averaging/overshoot.js';
import type { WindowLedger } from './averaging/window-ledger.js';
import type { CallbackScheduler } from './callbacks.js';
import { type Clock, systemClock } from './clock.js';
import type { ApplyPolicy, AverageBackend } from './config.js';
import type { CoordinatorConfig, CoordinatorOptions } from './coordinator-config.js';
import { CoordinatorCore, type CoordinatorState } from './coordinator-core.js';
import type { EpochDispatcher } from './dispatch/dispatcher.js';
import type { ElChe } from './el-che/el-che.js';
import { onJoined } from './epoch-flow.js';
import type { ConvergenceGuard } from './guard.js';
import { type Membership, type RankDeathRecord, rankFailureError } from './membership.js';
import type { CoordinatorInput, CoordinatorOutput } from './messages.js';
import { onBatch, onMetrics, onReduceCompleted, onSnapshotReady, onSyncAck } from './rank-reports.js';
import { declareDead, onExiting, onNcclId, onRankExited, onTick } from './re-formation.js';
import type { CallbackRoles } from './roles.js';
import { advanceTail } from './run-tail.js';

export type { CoordinatorState } from './coordinator-core.js';

/** Inputs that prove nothing of a rank's progress. */
const NOT_PROGRESS: ReadonlySet<CoordinatorInput['type']> = new Set([
  'Tick',
  'ReduceCompleted',
  'Heartbeat',
  'RankExited',
  'ConnectionLost',
]);

/**
 * The cluster coordinator (floDl `ClusterCoordinator`): a pure state machine that decides
 * cadence, partitions, averaging rounds, who evaluates and checkpoints, and how the cohort
 * shrinks. Ranks report and follow.
 *
 * Feed it typed inputs with {@link ClusterCoordinator.handle}; each call returns the commands
 * to send (per rank, in order) and host-side notices. No sockets and no timers: time comes
 * from the injected clock and advances through `Tick` inputs.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` from the constructor for an invalid configuration.
 * @example
 * ```ts
 * const coordinator = new ClusterCoordinator(
 *   { worldSize: 2, totalSamples: 6000, batchSize: 32, numEpochs: 3, elche: ElCheConfig.cpuCadence() },
 *   clock,
 * );
 * coordinator.handle({ type: 'RankJoined', rank: 0 });
 * const { commands } = coordinator.handle({ type: 'RankJoined', rank: 1 }); // roles, then StartEpoch plans
 * ```
 * floDl: `ClusterCoordinator::new(ClusterCoordinatorConfig { .. })`, driven by its event loop.
 */
export class ClusterCoordinator {
  readonly config: CoordinatorConfig;
  readonly policy: ApplyPolicy;
  readonly backend: AverageBackend;
  /** The cadence controller. */
  readonly elChe: ElChe;
  readonly dispatcher: EpochDispatcher;
  readonly ledger: WindowLedger;
  readonly membership: Membership;
  readonly roles: CallbackRoles;
  readonly callbacks: CallbackScheduler;
  readonly overshoot: OvershootBudget;
  readonly guard: ConvergenceGuard;
  /**
   * The state the sections share (`coordinator-core.ts`). Each input goes to the section that
   * handles it: `epoch-flow.ts` (formation and epochs), `rank-reports.ts`, `round-lifecycle.ts`
   * (averaging rounds), `run-tail.ts` (end of run), `re-formation.ts` (membership).
   */
  readonly #core: CoordinatorCore;

  constructor(options: CoordinatorOptions, clock: Clock = systemClock) {
    const core = new CoordinatorCore(options, clock);
    this.#core = core;
    this.config = core.config;
    this.policy = core.policy;
    this.backend = core.backend;
    this.elChe = core.elChe;
    this.dispatcher = core.dispatcher;
    this.ledger = core.ledger;
    this.membership = core.membership;
    this.roles = core.roles;
    this.callbacks = core.callbacks;
    this.overshoot = core.overshoot;
    this.guard = core.guard;
  }

  get state(): CoordinatorState {
    return this.#core.state;
  }
  /** The LR clock: Σ realized, accepted steps of every averaged window. */
  get globalStep(): number {
    return this.#core.globalStep;
  }
  /** Averaging rounds completed. */
  get version(): number {
    return this.#core.version;
  }
  /** True while a round (CPU averaging, or NCCL acks) is outstanding. */
  get roundInFlight(): boolean {
    return this.#core.round !== undefined;
  }
  /** The mass bookkeeping of the last completed round. */
  get lastMasses(): MassLedger | undefined {
    return this.#core.lastMasses;
  }
  /** The LR factor every rank applies: `1 + (W − 1) · lrScaleRatio`. */
  get lrScale(): number {
    return lrScaleFactor(this.config.worldSize, this.config.lrScaleRatio);
  }
  /** Why the run ended, once finished. */
  get finishReason(): 'Completed' | SaveReason | undefined {
    return this.#core.finishReason;
  }
  /** Every rank death so far. */
  deathRecords(): readonly RankDeathRecord[] {
    return this.membership.records();
  }
  /** The run's failure as one `ERR_RANK_FAILED` error naming the earliest death, or undefined. */
  failure(): FlodlError | undefined {
    const records = this.membership.records();
    return records.length > 0 ? rankFailureError(records) : undefined;
  }

  /**
   * Processes one input and returns what it produced. Malformed or stale inputs (an unknown
   * rank, a dead rank's late frame, an ack nobody awaits) are answered with an `InputRejected`
   * notice, never an exception.
   */
  handle(input: CoordinatorInput): CoordinatorOutput {
    const core = this.#core;
    core.out = { commands: [], notices: [], host: [] };
    const rank = (input as { rank?: unknown }).rank;
    if (input.type !== 'Tick' && input.type !== 'ReduceCompleted' && !core.membership.isRank(rank)) {
      core.reject(input.type, 'rank out of range');
      return core.out;
    }
    // What a rank reports is progress; heartbeats (from its worker thread) and host reports are not.
    if (!NOT_PROGRESS.has(input.type)) core.stalls.progress(rank as number, core.clock.now());
    switch (input.type) {
      case 'RankJoined':
        onJoined(core, input.rank);
        break;
      case 'Batch':
        onBatch(core, input);
        break;
      case 'SyncAck':
        onSyncAck(core, input);
        break;
      case 'SnapshotReady':
        onSnapshotReady(core, input.rank, input.version);
        break;
      case 'ReduceCompleted':
        onReduceCompleted(core, input.version, input.accepted);
        break;
      case 'Metrics':
        onMetrics(core, input);
        break;
      case 'Intent':
        if (core.admit(input.rank, input.type)) core.callbacks.request(input.intent);
        break;
      case 'EvalResult':
        if (core.admit(input.rank, input.type) && core.callbacks.onEvalResult(input)) advanceTail(core);
        break;
      case 'CheckpointResult':
        if (core.admit(input.rank, input.type)) {
          core.callbacks.onCheckpointResult(input);
          advanceTail(core);
        }
        break;
      case 'EpochFnElapsed':
        if (core.admit(input.rank, input.type)) core.callbacks.onEpochCallback(input.rank, input.elapsedMs);
        break;
      case 'LrUpdate':
        if (core.admit(input.rank, input.type) && Number.isFinite(input.lr)) core.lastLr = input.lr;
        break;
      case 'Heartbeat':
        // A suspected rank's heartbeats are expected (it is alive, just not training): no notice.
        if (core.membership.isSuspected(input.rank)) break;
        if (core.admit(input.rank, input.type)) core.lastStepCount[input.rank] = input.stepCount;
        break;
      case 'Exiting':
        onExiting(core, input.rank);
        break;
      case 'RankExited':
        onRankExited(core, input);
        break;
      case 'ConnectionLost':
        if (core.inCohortOrSuspected(input.rank) && !core.isFinished()) {
          declareDead(core, input.rank, 'connection-lost', {
            message: input.message ?? 'control connection lost',
          });
        }
        break;
      case 'NewNcclIdGenerated':
        onNcclId(core, input.rank, input.uidBytes);
        break;
      case 'Tick':
        onTick(core);
        break;
    }
    return core.out;
  }
}
