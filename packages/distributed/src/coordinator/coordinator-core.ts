import type { SaveReason } from '../wire/messages.js';
import { DivergenceSlots } from './averaging/cycle.js';
import type { MassLedger } from './averaging/mass-law.js';
import { OvershootBudget } from './averaging/overshoot.js';
import type { AveragingGate } from './averaging/triggers.js';
import { WindowLedger } from './averaging/window-ledger.js';
import { CallbackScheduler } from './callbacks.js';
import type { Clock } from './clock.js';
import { type ApplyPolicy, type AverageBackend, backendOf, policyOf } from './config.js';
import {
  type CoordinatorConfig,
  type CoordinatorOptions,
  resolveCoordinatorConfig,
} from './coordinator-config.js';
import { type DispatchContext, EpochDispatcher } from './dispatch/dispatcher.js';
import { ElChe } from './el-che/el-che.js';
import { type ConvergenceGuard, LevelGuard, NoGuard } from './guard.js';
import { type DeathCause, Membership, type RankDeathRecord } from './membership.js';
import type { CoordinatorCommand, CoordinatorOutput } from './messages.js';
import { MetaController } from './meta-controller.js';
import { EpochMetricsCollector } from './metrics.js';
import { elcheFits } from './resume.js';
import { CallbackRoles } from './roles.js';
import { StallWatch } from './stall-watch.js';

/** The coordinator's lifecycle. */
export type CoordinatorState = 'forming' | 'running' | 'finishing' | 'finished';

/** The averaging round in flight: CPU averaging, or NCCL acks. */
export interface Round {
  readonly version: number;
  readonly backend: AverageBackend;
  readonly startedAt: number;
  readonly participants: Set<number>;
  readonly joined: Set<number>;
}

/** The run's tail, in order: flush trailing steps, final eval, final checkpoint, shutdown. */
export type TailStage = 'flush' | 'eval' | 'checkpoint' | 'shutdown';

/**
 * The state every section of the coordinator shares (formation and epochs, rank reports,
 * averaging rounds, end of run, membership), and the plumbing they all use. Internal: the
 * public face is `ClusterCoordinator`, which owns one core and routes each input to the
 * section that handles it.
 */
export class CoordinatorCore {
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
  readonly clock: Clock;
  readonly meta: MetaController | undefined;
  readonly metrics = new EpochMetricsCollector();
  readonly divergence: DivergenceSlots;
  readonly lastStepCount: number[];
  readonly throttled: boolean[];
  readonly stalls: StallWatch;
  state: CoordinatorState = 'forming';
  globalStep = 0;
  version = 0;
  round: Round | undefined;
  lastMasses: MassLedger | undefined;
  lastLr: number | undefined;
  ncclGenerator: number | undefined;
  lastBeacon = Number.NEGATIVE_INFINITY;
  rolesCalibrated = false;
  slackEpoch = -1;
  tail: TailStage = 'flush';
  finishReason: 'Completed' | SaveReason | undefined;
  out: CoordinatorOutput = { commands: [], notices: [], host: [] };
  /**
   * The rank that held the averaging gate at the last decision, and how. While it still holds
   * it (checked on its own figures, O(1)), the gate is shut whatever the other ranks did, so
   * the whole-cohort decision is skipped: what keeps a report's cost flat in the world size.
   */
  gateHolder: { readonly rank: number; readonly gate: AveragingGate } | undefined;

  /** @throws FlodlError `ERR_INVALID_ARGUMENT` for an invalid configuration. */
  constructor(options: CoordinatorOptions, clock: Clock) {
    this.config = resolveCoordinatorConfig(options);
    this.clock = clock;
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
      lookaheadBatches: this.config.lookaheadBatches,
      // The CPU backend's chunked modes stream into the next epoch (floDl): a rank done with
      // its share goes on instead of waiting for the epoch's last chunk. A collective cannot
      // (every rank must enter it), nor can Sync's lockstep.
      streamAhead: this.backend === 'Cpu' && this.policy !== 'Sync' && this.config.progressive,
    });
    // A reduce window must fit in one epoch.
    this.elChe.setMaxTotalBatches(this.dispatcher.epochBatches);
    this.ledger = new WindowLedger(worldSize);
    this.membership = new Membership(worldSize);
    this.roles = new CallbackRoles(this.config.epochCallbackPolicy, new Array<boolean>(worldSize).fill(true));
    this.callbacks = new CallbackScheduler(this.roles, this.config, clock, {
      send: (rank, command) => this.send(rank, command),
      broadcast: (command) => this.broadcast(command),
      notice: (notice) => this.out.notices.push(notice),
      exclude: (rank, elapsedMs) => this.ledger.absorbCallbackCost(rank, elapsedMs),
      isLive: (rank) => this.membership.isLive(rank),
      liveMask: () => this.membership.liveMask(),
    });
    this.overshoot = new OvershootBudget(this.dispatcher.epochBatches, elche.maxOvershoot);
    const resume = this.config.resume;
    this.guard =
      elche.convergenceGuard === 'none'
        ? new NoGuard()
        : new LevelGuard(elche.divergenceThreshold, resume?.guardHistory ?? []);
    this.meta = elche.metaController ? new MetaController() : undefined;
    this.divergence = new DivergenceSlots(worldSize);
    this.lastStepCount = new Array<number>(worldSize).fill(0);
    this.throttled = new Array<boolean>(worldSize).fill(false);
    this.stalls = new StallWatch(worldSize, this.config.stallFactor, this.config.stallFloorMs);
    if (resume) {
      // A saved run continues: its clocks, ElChe's trajectory (same world size only: another
      // cohort recalibrates) and the samples of the epoch in progress already trained.
      this.globalStep = resume.globalStep ?? 0;
      this.version = resume.averagingCount ?? 0;
      if (elcheFits(resume.elche, worldSize)) this.elChe.restoreState(resume.elche);
      this.dispatcher.resumeAt(resume.epoch, resume.covered ?? []);
    }
  }

  /** A call, not a field read: TypeScript would keep a narrowing across the calls that change it. */
  isFinished(): boolean {
    return this.state === 'finished';
  }

  /** Accepts traffic from a live rank (it counts as a heartbeat); rejects the rest. */
  admit(rank: number, input: string): boolean {
    if (!this.membership.isLive(rank)) {
      this.reject(input, `rank ${rank} is not a live member`);
      return false;
    }
    this.membership.touch(rank, this.clock.now());
    return true;
  }

  reject(input: string, reason: string): void {
    this.out.notices.push({ type: 'InputRejected', input, reason });
  }

  send(rank: number, command: CoordinatorCommand): void {
    this.out.commands.push({ rank, command });
  }

  broadcast(command: CoordinatorCommand): void {
    for (const rank of this.membership.liveRanks()) this.send(rank, command);
  }

  context(): DispatchContext {
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
      now: this.clock.now(),
    };
  }

  /** Async reduce barrier: a rank at `count + overshoot` gets no chunk until the reduce. */
  heldAtReduce(rank: number): boolean {
    if (this.policy !== 'Async') return false;
    const count = this.elChe.batchCount(rank);
    return count > 0 && this.ledger.steps(rank) >= count + this.overshoot.value;
  }

  /** Records the death and reports it (`RankDead`); false when the rank was already out. */
  recordDeath(
    rank: number,
    cause: DeathCause,
    details: Pick<RankDeathRecord, 'message'> & Partial<RankDeathRecord>,
  ): boolean {
    const record: RankDeathRecord = {
      ...details,
      rank,
      cause,
      timeMs: this.clock.now(),
      lastStepCount: this.lastStepCount[rank] ?? 0,
    };
    if (!this.membership.markDead(record)) return false;
    this.out.notices.push({ type: 'RankDead', record });
    return true;
  }

  inCohortOrSuspected(rank: number): boolean {
    return this.membership.isLive(rank) || this.membership.isSuspected(rank);
  }
}
