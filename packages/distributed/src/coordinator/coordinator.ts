import type { FlodlError } from '@flodl/tensor-native';
import type { SaveReason } from '../wire/messages.js';
import { buildWindowReport, DivergenceSlots } from './averaging/cycle.js';
import { lrScaleFactor } from './averaging/lr-scale.js';
import { MassLedger } from './averaging/mass-law.js';
import { OvershootBudget } from './averaging/overshoot.js';
import {
  type AveragingGate,
  type AveragingVerdict,
  averagingVerdict,
  holdsAtZeroSteps,
  meetsTrigger,
  throttleReasonOf,
} from './averaging/triggers.js';
import { WindowLedger } from './averaging/window-ledger.js';
import { CallbackScheduler } from './callbacks.js';
import { type Clock, systemClock } from './clock.js';
import { type ApplyPolicy, type AverageBackend, backendOf, policyOf } from './config.js';
import {
  type CoordinatorConfig,
  type CoordinatorOptions,
  resolveCoordinatorConfig,
} from './coordinator-config.js';
import { type DispatchContext, EpochDispatcher } from './dispatch/dispatcher.js';
import { ElChe } from './el-che/el-che.js';
import { type ConvergenceAction, type ConvergenceGuard, LevelGuard, NoGuard } from './guard.js';
import {
  type DeathCause,
  failureLimit,
  Membership,
  type RankDeathRecord,
  rankFailureError,
} from './membership.js';
import type { CoordinatorCommand, CoordinatorInput, CoordinatorOutput, RankReport } from './messages.js';
import { MetaController } from './meta-controller.js';
import { aggregateEpochMetrics, creditedReport, EpochMetricsCollector } from './metrics.js';
import { CallbackRoles } from './roles.js';
import { StallWatch } from './stall-watch.js';

/** The coordinator's lifecycle. */
export type CoordinatorState = 'forming' | 'running' | 'finishing' | 'finished';

interface Round {
  readonly version: number;
  readonly backend: AverageBackend;
  readonly startedAt: number;
  readonly participants: Set<number>;
  readonly joined: Set<number>;
}

/** The run's tail, in order: flush trailing steps, final eval, final checkpoint, shutdown. */
type TailStage = 'flush' | 'eval' | 'checkpoint' | 'shutdown';

type Report<T extends RankReport['type']> = Extract<RankReport, { type: T }>;

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
/** Inputs that prove nothing of a rank's progress. */
const NOT_PROGRESS: ReadonlySet<CoordinatorInput['type']> = new Set([
  'Tick',
  'ReduceCompleted',
  'Heartbeat',
  'RankExited',
  'ConnectionLost',
]);

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
  #clock: Clock;
  #meta: MetaController | undefined;
  #metrics = new EpochMetricsCollector();
  #divergence: DivergenceSlots;
  #state: CoordinatorState = 'forming';
  #globalStep = 0;
  #version = 0;
  #round: Round | undefined;
  #lastMasses: MassLedger | undefined;
  #lastStepCount: number[];
  #throttled: boolean[];
  #stalls: StallWatch;
  #lastLr: number | undefined;
  #ncclGenerator: number | undefined;
  #lastBeacon = Number.NEGATIVE_INFINITY;
  #rolesCalibrated = false;
  #slackEpoch = -1;
  #tail: TailStage = 'flush';
  #finishReason: 'Completed' | SaveReason | undefined;
  #out: CoordinatorOutput = { commands: [], notices: [], host: [] };
  /**
   * The rank that held the averaging gate at the last decision, and how. While it still holds
   * it (checked on its own figures, O(1)), the gate is shut whatever the other ranks did, so
   * the whole-cohort decision is skipped: what keeps a report's cost flat in the world size.
   */
  #gateHolder: { readonly rank: number; readonly gate: AveragingGate } | undefined;

  constructor(options: CoordinatorOptions, clock: Clock = systemClock) {
    this.config = resolveCoordinatorConfig(options);
    this.#clock = clock;
    const { worldSize, elche } = this.config;
    this.policy = policyOf(elche.mode);
    this.backend = backendOf(elche.mode);
    this.elChe = ElChe.fromConfig(worldSize, elche);
    this.dispatcher = new EpochDispatcher({
      worldSize,
      totalSamples: this.config.totalSamples,
      batchSize: this.config.batchSize,
      numEpochs: this.config.numEpochs,
      progressive: this.config.progressive,
      minChunkBatches: this.config.minChunkBatches,
      streamAhead: elche.mode === 'CpuAsync' && this.config.progressive,
    });
    // A reduce window must fit in one epoch.
    this.elChe.setMaxTotalBatches(this.dispatcher.epochBatches);
    this.ledger = new WindowLedger(worldSize);
    this.membership = new Membership(worldSize);
    this.roles = new CallbackRoles(this.config.epochCallbackPolicy, new Array<boolean>(worldSize).fill(true));
    this.callbacks = new CallbackScheduler(this.roles, this.config, clock, {
      send: (rank, command) => this.#send(rank, command),
      broadcast: (command) => this.#broadcast(command),
      notice: (notice) => this.#out.notices.push(notice),
      exclude: (rank, elapsedMs) => this.ledger.absorbCallbackCost(rank, elapsedMs),
      isLive: (rank) => this.membership.isLive(rank),
      liveMask: () => this.membership.liveMask(),
    });
    this.overshoot = new OvershootBudget(this.dispatcher.epochBatches, elche.maxOvershoot);
    this.guard =
      elche.convergenceGuard === 'none' ? new NoGuard() : new LevelGuard(elche.divergenceThreshold);
    this.#meta = elche.metaController ? new MetaController() : undefined;
    this.#divergence = new DivergenceSlots(worldSize);
    this.#lastStepCount = new Array<number>(worldSize).fill(0);
    this.#throttled = new Array<boolean>(worldSize).fill(false);
    this.#stalls = new StallWatch(worldSize, this.config.stallFactor, this.config.stallFloorMs);
  }

  get state(): CoordinatorState {
    return this.#state;
  }
  /** The LR clock: Σ realized, accepted steps of every averaged window. */
  get globalStep(): number {
    return this.#globalStep;
  }
  /** Averaging rounds completed. */
  get version(): number {
    return this.#version;
  }
  /** True while a round (CPU averaging, or NCCL acks) is outstanding. */
  get roundInFlight(): boolean {
    return this.#round !== undefined;
  }
  /** The mass bookkeeping of the last completed round. */
  get lastMasses(): MassLedger | undefined {
    return this.#lastMasses;
  }
  /** The LR factor every rank applies: `1 + (W − 1) · lrScaleRatio`. */
  get lrScale(): number {
    return lrScaleFactor(this.config.worldSize, this.config.lrScaleRatio);
  }
  /** Why the run ended, once finished. */
  get finishReason(): 'Completed' | SaveReason | undefined {
    return this.#finishReason;
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
    this.#out = { commands: [], notices: [], host: [] };
    const rank = (input as { rank?: unknown }).rank;
    if (input.type !== 'Tick' && input.type !== 'ReduceCompleted' && !this.membership.isRank(rank)) {
      this.#reject(input.type, 'rank out of range');
      return this.#out;
    }
    // What a rank reports is progress; heartbeats (from its worker thread) and host reports are not.
    if (!NOT_PROGRESS.has(input.type)) this.#stalls.progress(rank as number, this.#clock.now());
    switch (input.type) {
      case 'RankJoined':
        this.#onJoined(input.rank);
        break;
      case 'Batch':
        this.#onBatch(input);
        break;
      case 'SyncAck':
        this.#onSyncAck(input);
        break;
      case 'SnapshotReady':
        this.#onSnapshotReady(input.rank, input.version);
        break;
      case 'ReduceCompleted':
        this.#onReduceCompleted(input.version, input.accepted);
        break;
      case 'Metrics':
        this.#onMetrics(input);
        break;
      case 'Intent':
        if (this.#admit(input.rank, input.type)) this.callbacks.request(input.intent);
        break;
      case 'EvalResult':
        if (this.#admit(input.rank, input.type) && this.callbacks.onEvalResult(input)) this.#advanceTail();
        break;
      case 'CheckpointResult':
        if (this.#admit(input.rank, input.type)) {
          this.callbacks.onCheckpointResult(input);
          this.#advanceTail();
        }
        break;
      case 'EpochFnElapsed':
        if (this.#admit(input.rank, input.type)) this.callbacks.onEpochCallback(input.rank, input.elapsedMs);
        break;
      case 'LrUpdate':
        if (this.#admit(input.rank, input.type) && Number.isFinite(input.lr)) this.#lastLr = input.lr;
        break;
      case 'Heartbeat':
        // A suspected rank's heartbeats are expected (it is alive, just not training): no notice.
        if (this.membership.isSuspected(input.rank)) break;
        if (this.#admit(input.rank, input.type)) this.#lastStepCount[input.rank] = input.stepCount;
        break;
      case 'Exiting':
        this.#onExiting(input.rank);
        break;
      case 'RankExited':
        this.#onRankExited(input);
        break;
      case 'ConnectionLost':
        if (this.#inCohortOrSuspected(input.rank) && !this.#isFinished()) {
          this.#declareDead(input.rank, 'connection-lost', {
            message: input.message ?? 'control connection lost',
          });
        }
        break;
      case 'NewNcclIdGenerated':
        this.#onNcclId(input.rank, input.uidBytes);
        break;
      case 'Tick':
        this.#onTick();
        break;
    }
    return this.#out;
  }

  // --- formation and epochs -------------------------------------------------------------

  #onJoined(rank: number): void {
    if (this.#state !== 'forming') {
      this.#reject('RankJoined', 'membership only shrinks after formation');
      return;
    }
    if (!this.membership.join(rank, this.#clock.now()) || !this.membership.formed) return;
    this.#state = 'running';
    this.#out.notices.push({ type: 'Formed', worldSize: this.config.worldSize });
    this.#openEpoch(0);
  }

  /** The epoch boundary, in floDl's order: the role, the checkpoint, the eval, then the plans. */
  #openEpoch(epoch: number): void {
    this.callbacks.broadcastRoleIfDirty();
    this.callbacks.dispatchBoundary(epoch);
    for (const { rank, plan } of this.dispatcher.startEpoch(epoch, this.#context())) {
      this.#send(rank, { type: 'StartEpoch', plan });
    }
    this.#maybeAverage();
  }

  /** Aggregates every epoch whose chunks are all reported, lowest first, and opens the next. */
  #tryAggregate(): void {
    for (
      let epoch = this.dispatcher.nextAggregatable();
      epoch !== undefined;
      epoch = this.dispatcher.nextAggregatable()
    ) {
      const pool = this.dispatcher.pool(epoch);
      const metrics = aggregateEpochMetrics(epoch, this.#metrics.take(epoch), {
        worldSize: this.config.worldSize,
        batchShare: this.elChe.recentBatchShare(),
        deviceIndices: this.config.deviceIndices,
        ...(this.config.progressive && pool ? { epochMs: this.#clock.now() - pool.startedAt } : {}),
      });
      this.dispatcher.markAggregated(epoch);
      this.#broadcast({ type: 'EpochAggregated', metrics });
      this.#out.notices.push({ type: 'EpochMetrics', metrics });
      if (epoch + 1 < this.config.numEpochs) this.#openEpoch(epoch + 1);
      else {
        this.#state = 'finishing';
        this.#advanceTail();
      }
    }
  }

  /** Hands a chunk to every live rank that has none in flight and is not held. */
  #pump(): void {
    if (this.#state !== 'running') return;
    const context = this.#context();
    // A rank with work in flight gets nothing: only the idle ones are visited.
    for (const rank of this.dispatcher.idleRanks()) {
      if (!this.membership.isLive(rank) || this.#throttled[rank] || this.#heldAtReduce(rank)) continue;
      const plan = this.dispatcher.nextChunk(rank, context);
      if (plan) this.#send(rank, { type: 'StartEpoch', plan });
    }
  }

  /** Async reduce barrier: a rank at `count + overshoot` gets no chunk until the reduce. */
  #heldAtReduce(rank: number): boolean {
    if (this.policy !== 'Async') return false;
    const count = this.elChe.batchCount(rank);
    return count > 0 && this.ledger.steps(rank) >= count + this.overshoot.value;
  }

  #context(): DispatchContext {
    const elChe = this.elChe;
    let msPerBatch: number[] | undefined;
    return {
      policy: this.policy,
      live: this.membership.liveMask(),
      calibrated: elChe.calibrated || elChe.hasSpeedHint(),
      counts: elChe.batchCounts,
      // Smoothed speeds are read by the tail balance only: computed when it asks.
      get msPerBatch() {
        msPerBatch ??= elChe.msPerBatch();
        return msPerBatch;
      },
      partitionRatios: this.config.elche.partitionRatios,
      now: this.#clock.now(),
    };
  }

  // --- rank reports -----------------------------------------------------------------------

  #onBatch(input: Report<'Batch'>): void {
    if (!this.#admit(input.rank, 'Batch')) return;
    const { rank } = input;
    this.#lastStepCount[rank] = input.stepCount;
    this.ledger.recordBatch(rank, input.batchMs, input.dataMs, input.batchLoss);
    this.dispatcher.noteBatch(rank);
    // CPU ranks report the divergence of the consensus they applied on their next batch.
    this.#divergence.record(rank, input.syncDivergence);
    this.#maybeThrottle(rank);
    this.#maybeAverage();
  }

  #onMetrics(input: Report<'Metrics'>): void {
    if (!this.#admit(input.rank, 'Metrics')) return;
    if (
      !Number.isInteger(input.samplesProcessed) ||
      input.samplesProcessed < 0 ||
      !(input.batchesProcessed >= 0)
    ) {
      this.#reject('Metrics', 'samplesProcessed and batchesProcessed must be counts >= 0');
      return;
    }
    if (!this.dispatcher.complete(input.rank, input.epoch, input.samplesProcessed)) {
      this.#reject('Metrics', `epoch ${input.epoch} is not open`);
      return;
    }
    const { type: _type, ...report } = input;
    this.#metrics.add(report);
    this.#tryAggregate();
    this.#pump();
    this.#maybeAverage();
  }

  #maybeThrottle(rank: number): void {
    if (this.#throttled[rank] || this.#state !== 'running') return;
    const reason = throttleReasonOf({
      policy: this.policy,
      backend: this.backend,
      steps: this.ledger.steps(rank),
      count: this.elChe.batchCount(rank),
      overshoot: this.overshoot.value,
      maxBatchDiff: this.config.elche.maxBatchDiff,
      slowestSteps: () => {
        let slowest = Number.POSITIVE_INFINITY;
        for (const live of this.membership.liveRanks()) slowest = Math.min(slowest, this.ledger.steps(live));
        return slowest;
      },
    });
    if (!reason) return;
    this.#throttled[rank] = true;
    this.#send(rank, { type: 'Throttle' });
  }

  // --- averaging rounds -------------------------------------------------------------------

  #decide(flush: boolean): AveragingVerdict {
    const live = this.membership.liveMask();
    const context = this.#context();
    const workLeft = this.dispatcher.hasWorkFor(context);
    return averagingVerdict({
      policy: this.policy,
      backend: this.backend,
      live,
      // An exited rank is removed from the cohort at once, so it never holds the gate.
      rankExited: false,
      roundInFlight: this.#round !== undefined,
      reforming: this.#ncclGenerator !== undefined,
      steps: this.ledger.stepsAll(),
      elapsedMs: this.ledger.elapsedAll(),
      counts: context.counts,
      calibrated: this.elChe.calibrated,
      anchorWallMs: this.elChe.anchorWallMs(),
      // Waiting for the reduce: throttled (it waits by definition), or idle with nothing to take.
      starved: live.map(
        (alive, rank) =>
          alive &&
          (this.#throttled[rank] === true || (this.dispatcher.inFlightSamples(rank) === 0 && !workLeft)),
      ),
      flush,
    });
  }

  #maybeAverage(): void {
    if (this.#state !== 'running') return;
    // The gates that need no per-rank state (the decision would stop at them too).
    if (this.#round !== undefined || this.#ncclGenerator !== undefined) return;
    if (this.#holderStillHolds()) return;
    const verdict = this.#decide(false);
    this.#gateHolder =
      !verdict.fire && verdict.rank !== undefined
        ? { rank: verdict.rank, gate: verdict.blockedBy }
        : undefined;
    if (verdict.fire) this.#startRound();
  }

  /** The last decision's gate holder, re-judged on its current figures exactly as `#decide` would. */
  #holderStillHolds(): boolean {
    const holder = this.#gateHolder;
    if (!holder || !this.membership.isLive(holder.rank)) return false;
    const { rank } = holder;
    const steps = this.ledger.steps(rank);
    let starved: boolean | undefined;
    const isStarved = (): boolean => {
      starved ??=
        this.#throttled[rank] === true ||
        (this.dispatcher.inFlightSamples(rank) === 0 && !this.dispatcher.hasWorkFor(this.#context()));
      return starved;
    };
    if (holder.gate === 'zero-step-rank') return holdsAtZeroSteps(this.backend, steps, isStarved());
    if (holder.gate !== 'trigger') return false;
    const cohort = {
      policy: this.policy,
      calibrated: this.elChe.calibrated,
      anchorWallMs: this.elChe.anchorWallMs(),
    };
    const figures = {
      steps,
      elapsedMs: this.ledger.elapsed(rank),
      count: this.elChe.batchCount(rank),
      starved: isStarved(),
    };
    return !meetsTrigger(cohort, figures);
  }

  #startRound(): void {
    const participants = new Set(this.membership.liveRanks());
    const version = this.#version + 1;
    this.#round = {
      version,
      backend: this.backend,
      startedAt: this.#clock.now(),
      participants,
      joined: new Set(),
    };
    this.#out.notices.push({ type: 'AveragingStarted', version, ranks: [...participants] });
    if (this.backend === 'Cpu') this.#out.host.push({ type: 'Collect', version, ranks: [...participants] });
    for (const rank of participants) {
      if (this.backend === 'Nccl') {
        this.#send(rank, { type: 'SyncNow' });
        continue;
      }
      this.#send(rank, { type: 'RequestParams', version });
      // Under CPU Sync ranks hold while the consensus is computed (floDl 0.5.3).
      if (this.policy === 'Sync') {
        this.#throttled[rank] = true;
        this.#send(rank, { type: 'Throttle' });
      }
    }
  }

  #onSyncAck(input: Report<'SyncAck'>): void {
    if (!this.#admit(input.rank, 'SyncAck')) return;
    const round = this.#round;
    if (round?.backend !== 'Nccl' || !round.participants.has(input.rank) || round.joined.has(input.rank)) {
      this.#reject('SyncAck', 'no SyncNow awaits this rank');
      return;
    }
    // Acks are not steps: the count only proves the rank is past the collective.
    this.#lastStepCount[input.rank] = input.stepCount;
    this.ledger.close(input.rank);
    round.joined.add(input.rank);
    this.#divergence.record(input.rank, input.divergence, input.preNorm, input.postNorm);
    // Only participants join (checked above): the round is complete when the counts meet.
    if (round.joined.size === round.participants.size) this.#finishRound([...round.joined]);
  }

  #onSnapshotReady(rank: number, version: number): void {
    if (!this.#admit(rank, 'SnapshotReady')) return;
    const round = this.#round;
    if (round?.backend !== 'Cpu' || round.version !== version || !round.participants.has(rank)) {
      this.#reject('SnapshotReady', 'no RequestParams awaits this rank');
      return;
    }
    // The snapshot froze this rank's contribution: later steps belong to the next window.
    this.ledger.close(rank);
    round.joined.add(rank);
  }

  #onReduceCompleted(version: number, accepted: readonly number[]): void {
    const round = this.#round;
    if (round?.backend !== 'Cpu' || round.version !== version) {
      this.#reject('ReduceCompleted', `no CPU round ${version} in flight`);
      return;
    }
    for (const rank of round.participants) this.ledger.close(rank);
    this.#finishRound(accepted.filter((rank) => round.participants.has(rank)));
  }

  /**
   * The feedback half of a reduce, in floDl's `finish_averaging_head` order: callback slack →
   * window report → (first calibration elects roles) → divergence → guard verdict →
   * meta-controller → version → apply verdict → overshoot → global step; then the tail
   * (SetGlobalStep, CPU Update, throttles released, idle ranks woken).
   */
  #finishRound(accepted: readonly number[]): void {
    const round = this.#round;
    if (!round) return;
    this.#round = undefined;
    const syncMs = this.#clock.now() - round.startedAt;
    const windows = this.ledger.takeRound();
    const live = this.membership.liveMask();
    const previousAnchor = this.elChe.anchor;
    this.#stageCallbackSlack();
    const report = buildWindowReport(windows, live, this.policy, syncMs);
    this.elChe.reportWindow(report);
    if (!this.#rolesCalibrated && this.elChe.calibrated) {
      // The first pace measurement is the first moment "fastest" means anything.
      this.#rolesCalibrated = true;
      this.roles.elect(live, (rank) => this.elChe.smoothedMs(rank));
      this.callbacks.broadcastRoleIfDirty();
    }
    const steps = windows.map((window, rank) => (round.participants.has(rank) ? window.steps : 0));
    const action = this.#guardVerdict(steps);
    const nudge = this.#meta?.observe(this.#lastLr, this.elChe.anchor, action, this.elChe.phase);
    if (nudge !== undefined) this.elChe.applyVerdict({ kind: 'NudgeDown', factor: nudge });
    this.#version = round.version;
    const relaxUp = this.policy === 'Async' && this.config.elche.relaxUp;
    this.elChe.applyVerdict(action.kind === 'Stable' ? { kind: 'Stable', relaxUp } : action);
    this.overshoot.onVerdict(action.kind);
    const masses = new MassLedger(round.version, this.config.elche.gamma);
    for (const rank of round.participants) masses.expect(rank, steps[rank] ?? 0);
    for (const rank of accepted) if (live[rank]) masses.accept(rank);
    this.#lastMasses = masses;
    // Only realized, accepted work advances the LR clock; acks are not steps.
    for (const rank of masses.acceptedRanks()) this.#globalStep += steps[rank] ?? 0;
    this.#out.notices.push({
      type: 'Averaged',
      version: round.version,
      globalStep: this.#globalStep,
      steps,
      divisor: masses.divisor(),
      verdict: action.kind,
      anchor: this.elChe.anchor,
      batchCounts: this.elChe.batchCounts,
      phase: this.elChe.phase,
      feed: report.deliveredCoherent ? 'delivered' : 'compute',
      syncMs,
    });
    if (this.elChe.anchor !== previousAnchor) {
      this.#out.notices.push({ type: 'AnchorChanged', from: previousAnchor, to: this.elChe.anchor });
    }
    this.#broadcast({ type: 'SetGlobalStep', globalStep: this.#globalStep });
    if (round.backend === 'Cpu') this.#broadcast({ type: 'Update', version: round.version });
    this.#divergence.clear();
    this.#throttled.fill(false);
    if (this.#state === 'finishing') {
      this.#advanceTail();
      return;
    }
    this.#pump();
    this.#maybeAverage();
  }

  #guardVerdict(steps: readonly number[]): ConvergenceAction {
    // Sync is always Stable: it has no window to grow.
    const report = this.policy === 'Sync' ? undefined : this.#divergence.report();
    if (!report) return { kind: 'Stable' };
    return this.guard.report(
      report,
      steps.reduce((sum, count) => sum + count, 0),
      Math.max(0, ...steps),
    );
  }

  /**
   * When the next window is the epoch's last and callbacks will fire at the boundary, shrinks
   * the firing ranks' quotas by their learned callback cost, so the callback runs in freed
   * slack instead of stretching the barrier.
   */
  #stageCallbackSlack(): void {
    if (!this.elChe.calibrated || !this.config.progressive) return;
    const epoch = this.dispatcher.activeEpoch;
    const pool = this.dispatcher.pool(epoch);
    if (!pool || epoch === this.#slackEpoch || pool.remaining() === 0) return;
    const live = this.membership.liveMask();
    const window = this.elChe.batchCounts.reduce((sum, count, rank) => sum + (live[rank] ? count : 0), 0);
    if (pool.remaining() / this.config.batchSize > window) return;
    const slack = this.callbacks.slackFor(epoch + 1, live);
    // floDl's floor: only slack worth a batch or two moves a quota.
    const floor = Math.max(0.05 * this.elChe.anchorWallMs(), 100);
    if (!slack.some((ms) => ms >= floor)) return;
    this.#slackEpoch = epoch;
    this.elChe.applyCallbackSlack(slack.map((ms) => (ms >= floor ? ms : 0)));
  }

  // --- end of run -------------------------------------------------------------------------

  /** Walks the run's tail: flush (average trailing steps), final eval (broadcast before Shutdown), final checkpoint, Shutdown. */
  #advanceTail(): void {
    if (this.#state !== 'finishing') return;
    if (this.#tail === 'flush') {
      if (this.#round) return;
      const decision = this.#decide(true);
      if (decision.fire) {
        this.#startRound();
        return;
      }
      if (decision.blockedBy === 'nccl-reforming') return;
      this.#tail = 'eval';
      // The final canonical eval runs whenever evals are configured or asked for.
      const finalEval =
        this.config.evalEveryEpochs !== undefined || this.callbacks.dueAt(this.config.numEpochs).eval;
      if (finalEval && this.callbacks.dispatchEval(this.config.numEpochs)) return;
    }
    if (this.#tail === 'eval') {
      if (this.callbacks.pendingEval) return;
      this.#tail = 'checkpoint';
      const due = this.callbacks.dueAt(this.config.numEpochs).checkpoint;
      if (due && this.callbacks.dispatchCheckpoint(this.config.numEpochs)) return;
    }
    if (this.#tail === 'checkpoint' && this.callbacks.pendingCheckpoint) return;
    this.#tail = 'shutdown';
    this.#broadcast({ type: 'Shutdown' });
    this.#finish('Completed');
  }

  #finish(reason: 'Completed' | SaveReason): void {
    this.#state = 'finished';
    // A rank still suspected when the run ends never made its work: it is dead (and ended).
    for (const rank of this.membership.suspectedRanks()) {
      this.#recordDeath(rank, 'stalled', { message: 'stalled (work overdue) when the run finished' });
    }
    if (this.#round?.backend === 'Cpu')
      this.#out.host.push({ type: 'Abandon', version: this.#round.version });
    this.#round = undefined;
    this.#finishReason = reason;
    const failedRanks = this.membership.records().map((record) => record.rank);
    this.#out.notices.push({ type: 'Finished', reason, failedRanks });
  }

  /** Drives one final save through the rank with the freshest state, then every survivor exits. */
  #saveAndExit(reason: SaveReason): void {
    const survivors = this.membership.liveRanks();
    const saver = survivors.reduce<number | undefined>(
      (best, rank) =>
        best === undefined || (this.#lastStepCount[rank] ?? 0) > (this.#lastStepCount[best] ?? 0)
          ? rank
          : best,
      undefined,
    );
    for (const rank of survivors) {
      this.#send(rank, rank === saver ? { type: 'ShutdownWithSave', reason } : { type: 'Shutdown' });
    }
    this.#finish(reason);
  }

  // --- membership -------------------------------------------------------------------------

  #onExiting(rank: number): void {
    if (this.#isFinished()) this.membership.markExited(rank);
    else if (this.membership.isLive(rank)) {
      this.#declareDead(rank, 'exited-early', { message: 'rank exited before Shutdown' });
    }
  }

  #onRankExited(input: Extract<CoordinatorInput, { type: 'RankExited' }>): void {
    const status = input.signal ?? `exit code ${input.exitCode ?? 'unknown'}`;
    const exit = {
      ...(input.exitCode === undefined ? {} : { exitCode: input.exitCode }),
      ...(input.signal === undefined ? {} : { signal: input.signal }),
      ...(input.pid === undefined ? {} : { pid: input.pid }),
      ...(input.stack === undefined ? {} : { stack: input.stack }),
    };
    // Declared dead earlier (its connection dropped first, or it went silent): the record
    // keeps that cause and gains the exit status.
    if (this.membership.isDead(input.rank)) {
      this.membership.mergeExit(input.rank, {
        ...exit,
        message: input.message ?? `process ended (${status})`,
      });
      return;
    }
    if (!this.#inCohortOrSuspected(input.rank) || this.#isFinished()) return;
    this.#declareDead(input.rank, 'process-exit', {
      message: input.message ?? `process ended (${status})`,
      ...exit,
    });
  }

  /**
   * Shrinks the cohort (floDl `dead_ranks`): records the death, drops the rank from the reduce
   * in flight, from ElChe and from the roles, returns its data to the survivors, and either
   * continues (NCCL: after re-forming the communicator) or saves and exits when the failure
   * threshold is crossed.
   */
  #declareDead(
    rank: number,
    cause: DeathCause,
    details: Pick<RankDeathRecord, 'message'> & Partial<RankDeathRecord>,
  ) {
    const suspected = this.membership.isSuspected(rank);
    if (!this.#recordDeath(rank, cause, details)) return;
    if (!suspected) {
      this.#shrink(rank);
      return;
    }
    // A suspected rank left the cohort already: only the failure threshold can change now.
    const breach = this.#failureBreach();
    if (breach === 'AllRanksLost') this.#finish(breach);
    else if (breach) this.#saveAndExit(breach);
  }

  /** Records the death and reports it (`RankDead`); false when the rank was already out. */
  #recordDeath(
    rank: number,
    cause: DeathCause,
    details: Pick<RankDeathRecord, 'message'> & Partial<RankDeathRecord>,
  ): boolean {
    const record: RankDeathRecord = {
      ...details,
      rank,
      cause,
      timeMs: this.#clock.now(),
      lastStepCount: this.#lastStepCount[rank] ?? 0,
    };
    if (!this.membership.markDead(record)) return false;
    this.#out.notices.push({ type: 'RankDead', record });
    return true;
  }

  #inCohortOrSuspected(rank: number): boolean {
    return this.membership.isLive(rank) || this.membership.isSuspected(rank);
  }

  /**
   * Takes a rank out of the cohort (a death, or a suspected stall): drops it from the round in
   * flight, from ElChe and the roles, returns its data to the others, and either continues
   * (NCCL: after re-forming the communicator) or saves and exits when a threshold is crossed.
   */
  #shrink(rank: number): void {
    this.#throttled[rank] = false;
    this.#divergence.drop(rank);
    this.#dropFromRound(rank);
    this.ledger.clear(rank);
    this.elChe.removeRank(rank);
    this.roles.onDeath(rank, this.membership.liveMask(), (candidate) => this.elChe.smoothedMs(candidate));
    if (this.config.progressive) this.dispatcher.forfeit(rank);
    else {
      // A whole partition was out: credit what the rank ran (in the epoch's metrics too, so
      // they count every sample once), hand the rest to the survivors.
      this.dispatcher.forfeit(rank, this.dispatcher.doneInFlightBatches(rank), (epoch, samples) =>
        this.#metrics.add(creditedReport(rank, epoch, samples)),
      );
      for (const { rank: target, epoch, offset, size } of this.dispatcher.distributeReclaimed(
        this.#context(),
      )) {
        this.#send(target, { type: 'ExtendPartition', epoch, offset, size });
      }
    }
    const breach = this.#failureBreach();
    if (breach === 'AllRanksLost') {
      this.#finish(breach);
      return;
    }
    if (breach) {
      this.#saveAndExit(breach);
      return;
    }
    this.callbacks.broadcastRoleIfDirty();
    if (this.backend === 'Nccl') {
      // Survivors abort the communicator; the lowest survivor generates the new session id.
      this.#broadcast({ type: 'DeclareDead', rank });
      this.#ncclGenerator = this.membership.liveRanks()[0];
      if (this.#ncclGenerator !== undefined) this.#send(this.#ncclGenerator, { type: 'RequestNewNcclId' });
    }
    this.callbacks.onDeath(rank);
    this.#tryAggregate();
    this.#pump();
    this.#maybeAverage();
    this.#advanceTail();
  }

  /** A death mid-round: NCCL's collective is aborted (windows reopen); CPU continues without the rank. */
  #dropFromRound(rank: number): void {
    const round = this.#round;
    if (!round) return;
    round.participants.delete(rank);
    round.joined.delete(rank);
    if (round.backend !== 'Nccl') {
      this.#out.host.push({ type: 'Drop', version: round.version, rank });
      return;
    }
    for (const participant of round.participants) this.ledger.reopen(participant);
    this.#round = undefined;
  }

  #failureBreach(): SaveReason | undefined {
    const live = this.membership.liveCount;
    if (live === 0) return 'AllRanksLost';
    const { maxFailure, worldSize } = this.config;
    if (maxFailure && this.membership.deadCount >= failureLimit(maxFailure, worldSize))
      return 'MaxFailureExceeded';
    if (this.backend === 'Nccl' && worldSize >= 2 && live < 2) return 'SingleSurvivor';
    return undefined;
  }

  #onNcclId(rank: number, uidBytes: Uint8Array): void {
    if (this.#ncclGenerator !== rank) {
      this.#reject('NewNcclIdGenerated', 'this rank was not asked for a session id');
      return;
    }
    this.#ncclGenerator = undefined;
    const survivors = this.membership.liveRanks();
    survivors.forEach((survivor, newRank) => {
      this.#send(survivor, { type: 'NewNcclSession', uidBytes, newRank, newWorldSize: survivors.length });
    });
    this.#maybeAverage();
    this.#advanceTail();
  }

  #onTick(): void {
    const now = this.#clock.now();
    if (this.#state === 'forming' || this.#isFinished()) return;
    for (const rank of this.membership.staleRanks(now, this.config.heartbeatTimeoutMs)) {
      if (this.#isFinished()) return;
      this.#declareDead(rank, 'heartbeat-timeout', {
        message: `no heartbeat for more than ${this.config.heartbeatTimeoutMs} ms`,
      });
    }
    if (this.#isFinished()) return;
    this.#watchStalls(now);
    if (this.#isFinished()) return;
    if (this.#round && now - this.#round.startedAt > this.config.reduceStallMs) {
      this.#saveAndExit('ReduceStall');
      return;
    }
    if (now - this.#lastBeacon >= this.config.coordHeartbeatMs) {
      this.#lastBeacon = now;
      this.#broadcast({ type: 'CoordHeartbeat' });
    }
    if (this.#state === 'finishing' && this.callbacks.expire(now)) this.#advanceTail();
  }

  /**
   * Stall suspicion: a live rank that owes work and made no progress for far longer than its
   * own smoothed step time leaves the cohort (its work goes to the others); a rank without
   * progress for the whole heartbeat timeout (or its allowance, when longer) is declared dead,
   * suspected or not. A rank is never suspected when its leaving would end the run (the last
   * live rank, NCCL's last pair): it is declared dead at the timeout instead. Before a rank has
   * a smoothed step time, only heartbeat staleness applies.
   */
  #watchStalls(now: number): void {
    const timeoutMs = this.config.heartbeatTimeoutMs;
    if (!this.#stalls.enabled) return;
    const stalled = (rank: number, allowanceMs?: number): boolean => {
      if (!this.#stalls.deathDue(rank, now, timeoutMs, allowanceMs)) return false;
      const silentMs = now - this.#stalls.lastProgress(rank);
      this.#declareDead(rank, 'stalled', { message: `owed work and made no progress for ${silentMs} ms` });
      return true;
    };
    for (const rank of this.membership.suspectedRanks()) {
      if (stalled(rank) && this.#isFinished()) return;
    }
    if (this.#state !== 'running') return;
    for (const rank of this.membership.liveRanks()) {
      // Owing nothing keeps the clock current: the allowance starts when work is owed.
      if (!this.#owesWork(rank)) {
        this.#stalls.progress(rank, now);
        continue;
      }
      // Before its first smoothed reading (warm-up, compilation) nothing says how long a step
      // may take: only heartbeat staleness applies.
      const smoothedMs = this.elChe.smoothedMs(rank);
      if (smoothedMs === undefined) continue;
      const allowanceMs = this.#stalls.allowanceMs(smoothedMs);
      if (stalled(rank, allowanceMs)) {
        if (this.#state !== 'running') return;
        continue;
      }
      if (!this.#stalls.overdue(rank, now, smoothedMs)) continue;
      if (!this.#canSuspect()) continue;
      this.membership.suspect(rank);
      this.#stalls.suspected(rank, allowanceMs);
      this.#out.notices.push({
        type: 'RankSuspected',
        rank,
        overdueMs: now - this.#stalls.lastProgress(rank),
        allowanceMs,
      });
      this.#shrink(rank);
      if (this.#state !== 'running') return;
    }
  }

  /** `rank` has work to run or a round to join, and nothing (a throttle, a callback, the reduce) excuses a pause. */
  #owesWork(rank: number): boolean {
    if (this.#throttled[rank] || this.callbacks.busyWith(rank) || this.#heldAtReduce(rank)) return false;
    const round = this.#round;
    if (round?.participants.has(rank)) return !round.joined.has(rank);
    return this.dispatcher.inFlightBatches(rank) > 0;
  }

  /** Whether one more rank can leave without ending the run. */
  #canSuspect(): boolean {
    const left = this.membership.liveCount - 1;
    return left >= 1 && !(this.backend === 'Nccl' && this.config.worldSize >= 2 && left < 2);
  }

  // --- plumbing ---------------------------------------------------------------------------

  /** A call, not a field read: TypeScript would keep a narrowing across the calls that change it. */
  #isFinished(): boolean {
    return this.#state === 'finished';
  }

  /** Accepts traffic from a live rank (it counts as a heartbeat); rejects the rest. */
  #admit(rank: number, input: string): boolean {
    if (!this.membership.isLive(rank)) {
      this.#reject(input, `rank ${rank} is not a live member`);
      return false;
    }
    this.membership.touch(rank, this.#clock.now());
    return true;
  }

  #reject(input: string, reason: string): void {
    this.#out.notices.push({ type: 'InputRejected', input, reason });
  }

  #send(rank: number, command: CoordinatorCommand): void {
    this.#out.commands.push({ rank, command });
  }

  #broadcast(command: CoordinatorCommand): void {
    for (const rank of this.membership.liveRanks()) this.#send(rank, command);
  }
}
