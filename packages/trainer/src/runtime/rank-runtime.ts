// The rank runtime: one rank's model, optimizer, data and counters, and the primitives both
// training tiers drive (floDl's GpuWorker). The managed Trainer runs `runEpochPlan`; the
// cooperative Worker calls the same primitives from the user's loop.

import type {
  CoordinatorMessage,
  DistributedSession,
  EpochMetrics,
  EpochPlan,
  IntentKind,
} from '@flodl/distributed';
import { livenessFromEnv } from '@flodl/distributed';
import type { Optimizer } from '@flodl/nn';
import { type Device, FlodlError, type Tensor } from '@flodl/tensor-native';
import type { BundleReason, CheckpointMeta, DataCursor } from '../checkpoint/meta.js';
import type { CheckpointBundle } from '../checkpoint/read.js';
import type { BundleSource } from '../checkpoint/write.js';
import type { Batch } from '../data/batch.js';
import { CapturedTrainStep } from './captured-train-step.js';
import { ControlDrain } from './control-drain.js';
import { CursorTracker } from './data-cursor.js';
import { EventLoopYield } from './event-loop-yield.js';
import { PlanReader } from './plan-reader.js';
import { type BundlePlace, restoreRank, saveClusterBundle, saveRankBundle } from './runtime-bundles.js';
import { checkpointAndBundle, runCheckpoint, runEval } from './runtime-callbacks.js';
import type { ChunkReport, RankRuntimeOptions } from './runtime-options.js';
import { loadState, paramNorm as normOf, snapshotState } from './snapshots.js';
import { applySchedule, holdLockstep, planReport, stepOptimizer } from './step-bookkeeping.js';
import { messageOf, runTrainStep } from './train-step.js';
import type { AnyModule, EpochState, TrainedState, TrainingDataset, TrainStep } from './types.js';

export type {
  ChunkReport,
  EpochContext,
  RankRuntimeOptions,
  RuntimeCallbacks,
  RuntimeStep,
} from './runtime-options.js';

const OP = 'RankRuntime';

/**
 * One rank's training engine. It owns the model, the optimizer, the data of its plans and the
 * step counters, and exposes the primitives of a training step; the coordinator (through the
 * rank's {@link DistributedSession}) decides plans, averaging and who runs callbacks, and the
 * runtime follows at its step points: after each step, while idle between plans.
 *
 * - `beginEpoch(plan)` → an {@link EpochState}; `nextBatch(state)` → the next batch (owned by
 *   the caller) or `undefined` at the end of the plan;
 * - `optimizerStepAndBookkeep()`: clip → LR from the schedule at `globalStep + stepsSinceAvg`
 *   (× lrScale) → step → zeroGrad → counters;
 * - `afterStep(state, loss, ms)`: timing report, control drain (averaging happens here);
 * - `endEpoch(state)`: the plan's report (always, even with 0 batches; not after a shutdown).
 */
export class RankRuntime<M extends AnyModule = AnyModule> {
  readonly model: M;
  readonly optimizer: Optimizer;
  readonly dataset: TrainingDataset;
  readonly batchSize: number;
  readonly seed: number;
  readonly device: Device;
  readonly rank: number;
  readonly worldSize: number;
  readonly session: DistributedSession | undefined;
  /** Optimizer steps taken (plus one per collective sync). */
  localStep = 0;
  /** The LR clock the coordinator last set (`SetGlobalStep`). */
  globalStep = 0;
  /** The epoch of the last plan begun. */
  currentEpoch = 0;
  readonly #options: RankRuntimeOptions<M>;
  readonly #reader: PlanReader;
  /** The model's parameters, listed once (the step reads them every time). */
  readonly #parameters: Tensor[];
  #stepsSinceAvg = 0;
  #lastEpochFired = -1;
  #reports: ChunkReport[] = [];
  #lastLr: number | undefined;
  #roundsHeld = 0;
  #disposed = false;
  /** The captured step of `cudaGraph`, made at the first step. */
  #captured: CapturedTrainStep<M> | undefined;
  readonly #cursor: CursorTracker;
  readonly #control: ControlDrain;
  #bundleRequested = false;
  /** The optimizer tail of a managed step, bound once. */
  readonly #tail = (): void => this.optimizerStepAndBookkeep();
  /** Averaging rounds of the run this one resumed (the session counts from them on). */
  #restoredAveraging = 0;
  /** A single device's turns of the event loop between steps (timers, the dashboard, signals). */
  readonly #turns = new EventLoopYield();
  #resumedFrom: string | undefined;

  constructor(options: RankRuntimeOptions<M>) {
    this.#options = options;
    this.model = options.model;
    this.optimizer = options.optimizer;
    this.dataset = options.dataset;
    this.batchSize = options.batchSize;
    this.seed = options.seed;
    this.device = options.device;
    this.rank = options.rank ?? 0;
    this.worldSize = options.worldSize ?? 1;
    this.session = options.session;
    this.#parameters = options.model.parameters();
    this.#cursor = new CursorTracker(options.batchSize);
    this.#reader = new PlanReader(options.dataset, {
      batchSize: options.batchSize,
      seed: options.seed,
      device: options.device,
      prefetch: options.prefetch ?? 2,
      resident: options.resident ?? 'auto',
      op: `${OP}.beginEpoch`,
    });
    this.#control = new ControlDrain({
      rank: this.rank,
      get evaluates() {
        return options.callbacks?.evalFn !== undefined;
      },
      extendOpenPlan: (epoch, offset, size) => {
        if (!this.#reader.extend(epoch, offset, size)) return false;
        this.#cursor.extend(offset, size);
        return true;
      },
      setGlobalStep: (globalStep) => {
        this.globalStep = globalStep;
      },
      evaluate: () => this.evaluate(),
      checkpoint: (version) => this.#clusterCheckpoint(version),
      checkpointPart: async () => {
        if (this.#options.savePath !== undefined) await this.#saveClusterOrWarn('every', false);
      },
      saveBeforeShutdown: async () => {
        if (this.#options.savePath !== undefined)
          await this.#saveClusterOrWarn('shutdownWithSave', true, false);
      },
      saveAtStop: async () => {
        if (this.#options.savePath !== undefined)
          await this.#saveClusterOrWarn('stop', this.rank === (this.#control.epochRole ?? 0));
      },
    });
    const lrScale = options.lrScale ?? 1;
    if (options.scheduler === undefined && lrScale !== 1) {
      for (const [index, group] of this.optimizer.paramGroups.entries()) {
        this.optimizer.setGroupLr(index, group.lr * lrScale);
      }
    }
  }

  /** Every sample position of an epoch (the dataset length). */
  get totalSamples(): number {
    return this.dataset.length;
  }

  /** Realized steps since this rank's state last entered an averaging round (the reduce mass). */
  get #lockstep(): boolean {
    const mode = this.session?.mode;
    return mode === 'CpuSync' || mode === 'NcclSync';
  }

  get stepsSinceAvg(): number {
    return this.session ? this.session.windowSteps : this.#stepsSinceAvg;
  }

  /** True once the coordinator said `Shutdown` / `ShutdownWithSave`. */
  get shutdownSeen(): boolean {
    return this.#control.shutdown || (this.session?.stopped ?? false);
  }

  /** Ends the plan in flight after its current step (a graceful stop; the coordinator's Shutdown in a cluster). */
  requestStop(): void {
    this.#control.shutdown = true;
  }

  /** Routes a coordinator message to the runtime (the session's `onControl`). */
  receive(message: CoordinatorMessage): void {
    this.#control.receive(message, this.session?.version ?? 0);
  }

  // ---- plans and batches ----------------------------------------------------------------

  /** Opens `plan`: this rank's slice of the epoch permutation, batched by `batchSize`. */
  beginEpoch(plan: EpochPlan): EpochState {
    this.#checkLive('beginEpoch');
    this.currentEpoch = plan.epoch;
    const state = this.#reader.stateOf(plan);
    // A resumed epoch: the batches trained before the save are skipped, its totals carried on.
    this.#cursor.begin(plan, state);
    this.#reader.open(state);
    return state;
  }

  /** The next batch of `state` (owned by the caller: dispose it), or `undefined` at its end. */
  nextBatch(state: EpochState): Batch | undefined {
    this.#checkLive('nextBatch');
    return this.#reader.next(state);
  }

  /** Waits for an averaging writeback before the next forward (none pending on this runtime's paths). */
  syncBeforeForward(): void {}

  /** Clip → LR → optimizer step → zeroGrad → counters. Gradients must be populated. */
  optimizerStepAndBookkeep(): void {
    this.#checkLive('optimizerStepAndBookkeep');
    stepOptimizer(this.optimizer, this.#parameters, this.#options, this.#lrStep());
    this.#countStep();
  }

  #lrStep(): number {
    return this.#options.scheduler === undefined ? 0 : this.globalStep + this.stepsSinceAvg;
  }

  #countStep(): void {
    this.localStep += 1;
    if (!this.session) this.#stepsSinceAvg += 1;
  }

  /** Books the step, reports its timing and follows the coordinator (a reduce can run here). */
  async afterStep(state: EpochState, loss: number, ms: number): Promise<void> {
    this.#book(state, loss, ms);
    const session = this.session;
    if (!session) {
      this.#afterLocalStep(state);
      if (this.#turns.due()) await this.#passTurn(state);
      return;
    }
    const paramNorm = (this.stepsSinceAvg + 1) % 10 === 0 ? normOf(this.#parameters) : undefined;
    await session.afterStep({
      loss,
      batchMs: ms,
      dataMs: state.lastDataMs,
      ...(paramNorm === undefined ? {} : { paramNorm }),
    });
    // The coordinator sends the next chunk once the reports show this many batches left.
    const lookahead = this.#options.lookaheadBatches ?? 0;
    if (lookahead > 0 && Math.ceil(state.picks.length / this.batchSize) - state.booked === lookahead)
      session.control.flush();
    const lr = this.optimizer.getLr();
    if (lr !== this.#lastLr) {
      this.#lastLr = lr;
      session.control.send({ type: 'LrUpdate', lr });
    }
    await this.serviceControl();
    if (this.#lockstep) {
      await holdLockstep(session, state, this.batchSize, this.#roundsHeld + 1, {
        stopped: () => this.shutdownSeen,
        service: () => this.serviceControl(),
      });
    }
    this.#roundsHeld = session.version;
    if (this.shutdownSeen) state.shutdown = true;
  }

  /** Counts a finished step into `state` and tells the step listener. */
  #book(state: EpochState, loss: number, ms: number): void {
    state.booked += 1;
    state.computeMsTotal += ms;
    state.totalLoss += loss;
    this.#options.onStep?.({
      epoch: state.epoch,
      batch: state.batchDone,
      batches: Math.floor(state.picks.length / this.batchSize),
      loss,
      ms,
      batchSize: this.batchSize,
      localStep: this.localStep,
    });
  }

  /** A single device's step tail: a requested bundle, a requested stop (nothing to wait on). */
  #afterLocalStep(state: EpochState): void {
    if (this.#bundleRequested) {
      this.#bundleRequested = false;
      this.#saveOrWarn('request');
    }
    if (this.#control.shutdown) state.shutdown = true;
  }

  /** Lets the event loop run between two steps; a stop asked for meanwhile ends the plan here. */
  async #passTurn(state: EpochState): Promise<void> {
    await this.#turns.pass();
    if (this.#control.shutdown) state.shutdown = true;
  }

  /** Closes `state` and sends its report (skipped after a shutdown seen mid-plan). */
  endEpoch(state: EpochState): void {
    if (this.#reader.isOpen(state)) this.#reader.close();
    if (state.shutdown) return;
    this.#cursor.closed(state);
    const report = planReport(state, this.batchSize);
    if (this.session) this.session.control.metrics(report);
    else this.#reports.push({ rank: this.rank, ...report });
  }

  /** One step of `trainStep` on `batch` (forward + loss), then backward and the tail; → (loss, ms). */
  trainStep(
    trainStep: TrainStep<M>,
    batch: Batch,
    where: { epoch: number; batch: number },
  ): [number, number] {
    const started = performance.now();
    if (this.#options.cudaGraph) {
      this.#captured ??= new CapturedTrainStep(
        this.model,
        this.optimizer,
        trainStep,
        batch.names,
        this.#options.maxGradNorm,
      );
      applySchedule(this.optimizer, this.#options, this.#lrStep());
      const loss = this.#captured.run(batch, where);
      this.#countStep();
      return [loss, performance.now() - started];
    }
    const loss = runTrainStep(this.model, trainStep, batch, where.epoch, where.batch, this.#tail);
    return [loss, performance.now() - started];
  }

  /** Trains every batch of `plan` (the managed tier); true when a shutdown arrived. */
  async runEpochPlan(plan: EpochPlan, trainStep: TrainStep<M>): Promise<boolean> {
    const state = this.beginEpoch(plan);
    for (;;) {
      const batch = this.nextBatch(state);
      if (!batch) break;
      this.syncBeforeForward();
      let loss: number;
      let ms: number;
      try {
        if (this.#options.cudaGraph) {
          [loss, ms] = this.trainStep(trainStep, batch, { epoch: plan.epoch, batch: state.batchDone - 1 });
        } else {
          // The eager step without the per-step objects of `trainStep` (its where, its pair).
          const started = performance.now();
          loss = runTrainStep(this.model, trainStep, batch, plan.epoch, state.batchDone - 1, this.#tail);
          ms = performance.now() - started;
        }
      } finally {
        batch.dispose();
      }
      // One device has nothing to wait on: the event loop gets a turn only every ~50 ms.
      if (this.session) await this.afterStep(state, loss, ms);
      else {
        this.#book(state, loss, ms);
        this.#afterLocalStep(state);
        if (this.#turns.due()) await this.#passTurn(state);
      }
      if (state.shutdown) {
        this.#reader.close();
        return true;
      }
    }
    this.endEpoch(state);
    return false;
  }

  // ---- averaging --------------------------------------------------------------------------

  /** A copy of the parameters and buffers (never aliasing them) with the steps since the last average. */
  snapshotParams(): TrainedState & { batchCount: number } {
    return { ...snapshotState(this.model), batchCount: this.stepsSinceAvg };
  }

  /**
   * Overwrites the parameters (and buffers) with an averaged state.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT when the counts or shapes differ from the model's
   */
  loadAveraged(update: TrainedState): void {
    loadState(this.model, update, `${OP}.loadAveraged`);
  }

  // ---- checkpoint bundles ------------------------------------------------------------------

  /**
   * Where training stands in the data: the open plan's epoch and its booked batches, or the
   * next epoch at a boundary.
   */
  dataCursor(): DataCursor {
    return this.#cursor.cursor();
  }

  /** The rank's objects and counters, as a bundle records them. */
  bundleSource(): BundleSource {
    return {
      model: this.model,
      optimizer: this.optimizer,
      scheduler: this.#options.scheduler,
      device: this.device,
      rank: this.rank,
      worldSize: this.worldSize,
      mode: this.session?.mode ?? 'single',
      membership: Array.from({ length: this.worldSize }, (_, rank) => rank),
      seed: this.seed,
      batchSize: this.batchSize,
      datasetLength: this.totalSamples,
      globalStep: this.globalStep,
      localStep: this.localStep,
      stepsSinceAvg: this.stepsSinceAvg,
      averagingCount: Math.max(this.session?.version ?? 0, this.#restoredAveraging),
      cursor: this.dataCursor(),
      covered: this.#cursor.covered(),
    };
  }

  /**
   * Writes a checkpoint bundle under `savePath`: periodic reasons (`every`, `atEpoch`,
   * `request`) at `<savePath>.step-<LR step>`, keeping the newest `keepLast`; `final`, `stop`
   * and `shutdownWithSave` at `savePath` itself. Call between steps.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT without a `savePath`; ERR_IO when a file cannot be written
   */
  saveBundle(reason: BundleReason): CheckpointMeta {
    return saveRankBundle(`${OP}.saveBundle`, this.#bundlePlace(), this.bundleSource(), reason);
  }

  /**
   * A cluster bundle: this rank writes the model, the scheduler and the meta when it is
   * `writer` (after gathering every live rank's optimizer file; `gather` false: alone), else
   * only its own optimizer file. Every rank of the save must call it with the same `reason`.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT without a `savePath`; ERR_IO when a file cannot be written
   */
  saveClusterBundle(reason: BundleReason, writer: boolean, gather = true): Promise<void> {
    // Half the session's bound on a wait: the other ranks save at the same step point.
    const waitMs = writer && gather ? livenessFromEnv().sessionTimeoutMs / 2 : 0;
    return saveClusterBundle(`${OP}.saveClusterBundle`, this.#bundlePlace(), this.bundleSource(), reason, {
      writes: writer,
      waitMs,
    });
  }

  /** Where this rank's bundles go; a periodic one is named after the LR step (a cluster's: the coordinator's, which every rank shares). */
  #bundlePlace(): BundlePlace {
    return {
      savePath: this.#options.savePath,
      keepLast: this.#options.keepLast ?? 3,
      worldSize: this.worldSize,
      lrStep: this.session ? this.globalStep : this.globalStep + this.stepsSinceAvg,
    };
  }

  /** The rank the coordinator elected for callbacks (`undefined` before it said, and on one device). */
  get electedRank(): number | undefined {
    return this.#control.epochRole;
  }

  /** The stem of the run's bundles, if it has one. */
  get savePath(): string | undefined {
    return this.#options.savePath;
  }

  /** Asks for a bundle after the step in flight (or now, between steps: see `saveBundle`). */
  requestCheckpoint(): void {
    this.#bundleRequested = true;
  }

  /** Writes the pending requested bundle now (between steps); a failure is reported, not thrown. */
  flushCheckpointRequest(): void {
    if (!this.#bundleRequested) return;
    this.#bundleRequested = false;
    this.#saveOrWarn('request');
  }

  /**
   * Restores a bundle into this rank: weights, optimizer, scheduler, generator states, the
   * step counters, and the data cursor the next plan of its epoch resumes from. Call before
   * the first plan.
   *
   * @throws FlodlError ERR_CHECKPOINT naming the file when the bundle does not fit this run
   */
  restore(bundle: CheckpointBundle): void {
    const restored = restoreRank(
      bundle,
      {
        model: this.model,
        optimizer: this.optimizer,
        scheduler: this.#options.scheduler,
        device: this.device,
        rank: this.rank,
        batchSize: this.batchSize,
        datasetLength: this.totalSamples,
      },
      this.session !== undefined,
    );
    this.localStep = restored.localStep;
    this.globalStep = restored.globalStep;
    this.#restoredAveraging = bundle.meta.averagingCount;
    this.#resumedFrom = bundle.stem;
    if (this.session) {
      // A cluster: the coordinator's plans leave out what was trained (the coverage), so no
      // batch is skipped here; a later save of this epoch still counts those positions.
      const { coverage } = bundle.meta;
      this.#cursor.trainedBefore(coverage.epoch, coverage.covered);
      this.currentEpoch = bundle.meta.epoch;
      if (coverage.covered.length > 0) this.#lastEpochFired = bundle.meta.epoch;
      return;
    }
    if (restored.stepsSinceAvg !== undefined) this.#stepsSinceAvg = restored.stepsSinceAvg;
    const { cursor } = restored;
    this.#cursor.resumeAt(cursor);
    this.currentEpoch = cursor.epoch;
    // The epoch callback of an epoch already begun fired before the save.
    if (cursor.batch > 0) this.#lastEpochFired = cursor.epoch;
  }

  /** The stem of the bundle `restore` took, if any. */
  get resumedFrom(): string | undefined {
    return this.#resumedFrom;
  }

  /** The epoch a resumed run continues with (0 for a fresh one). */
  get startEpoch(): number {
    return this.#cursor.startEpoch;
  }

  /** The elected rank's checkpoint: the `checkpointFn` callback (if any), then a bundle (with a `savePath`). */
  #clusterCheckpoint(version: number): Promise<{ error?: string; elapsedMs: number }> {
    const { callbacks, savePath } = this.#options;
    return checkpointAndBundle(
      callbacks?.checkpointFn ? () => this.checkpoint(version) : undefined,
      savePath !== undefined ? () => this.saveClusterBundle('every', true) : undefined,
    );
  }

  async #saveClusterOrWarn(reason: BundleReason, writer: boolean, gather = true): Promise<void> {
    try {
      await this.saveClusterBundle(reason, writer, gather);
    } catch (error) {
      process.stderr.write(`flodl: checkpoint failed: ${messageOf(error)}\n`);
    }
  }

  #saveOrWarn(reason: BundleReason): void {
    try {
      this.saveBundle(reason);
    } catch (error) {
      process.stderr.write(`flodl: checkpoint failed: ${messageOf(error)}\n`);
    }
  }

  // ---- coordinator-driven flow -----------------------------------------------------------

  /** The next plan the coordinator hands this rank, servicing control meanwhile; `undefined` at shutdown. */
  async waitForEpochPlan(): Promise<EpochPlan | undefined> {
    const session = this.#requireSession('waitForEpochPlan');
    for (;;) {
      await this.serviceControl();
      const plan = this.#control.plans.shift();
      if (plan) return plan;
      if (this.shutdownSeen) return undefined;
      await session.drain();
      await session.awaitControl();
    }
  }

  /** Runs the epoch callback once per epoch, on the elected rank (every epoch on a single device). */
  async fireEpochCallback(epoch: number): Promise<void> {
    if (epoch === this.#lastEpochFired) return;
    this.#lastEpochFired = epoch;
    if (this.session && this.#control.epochRole !== this.rank) return;
    const epochFn = this.#options.callbacks?.epochFn;
    if (!epochFn) return;
    const started = performance.now();
    await epochFn(epoch, {
      model: this.model,
      optimizer: this.optimizer,
      rank: this.rank,
      worldSize: this.worldSize,
      setLr: (lr) => this.optimizer.setLr(lr),
    });
    this.session?.control.send({ type: 'EpochFnElapsed', epoch, elapsedMs: performance.now() - started });
  }

  /** Asks the coordinator for an eval or a checkpoint at the next coherent boundary (a no-op alone). */
  reportIntent(kind: IntentKind): void {
    this.session?.control.intent(kind);
  }

  /** Follows every control message that arrived: plans, roles, callbacks, metrics, throttling. */
  async serviceControl(): Promise<void> {
    const session = this.session;
    if (!session) return;
    await this.#control.service(session, () => this.shutdownSeen);
  }

  /** Collects every aggregated epoch (`EpochAggregated`) from now on; see `takeMetrics`. */
  enableMetricsStream(): void {
    this.#control.metricsStream ??= [];
  }

  /** Collects every eval broadcast (`EvalBroadcast`) from now on; see `takeEvals`. */
  enableEvalStream(): void {
    this.#control.evalStream ??= [];
  }

  /** The latest aggregated epoch the coordinator broadcast. */
  get latestMetrics(): EpochMetrics | undefined {
    return this.#control.latest;
  }

  /** The aggregated epochs collected since the last call, oldest first. */
  takeMetrics(): EpochMetrics[] {
    return this.#control.metricsStream?.splice(0) ?? [];
  }

  /** The eval broadcasts collected since the last call, oldest first. */
  takeEvals(): [number, number][] {
    return this.#control.evalStream?.splice(0) ?? [];
  }

  /** Single device: the chunk reports since the last call. */
  takeReports(): ChunkReport[] {
    return this.#reports.splice(0);
  }

  /** Runs the eval callback now (single device); the metric, or the error. */
  evaluate(): Promise<{ metric: number; error?: string; elapsedMs: number }> {
    return runEval(this.model, this.#options.callbacks);
  }

  /** Runs the checkpoint callback now; the error, if it failed. */
  checkpoint(version: number): Promise<{ error?: string; elapsedMs: number }> {
    return runCheckpoint(this.model, this.#options.callbacks, version);
  }

  /** This rank's final state: CPU copies in parameter / buffer order. */
  finalState(): TrainedState {
    return snapshotState(this.model);
  }

  /** Frees the loader (and what it prepared ahead). Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#captured?.dispose();
    this.#captured = undefined;
    this.#reader.dispose();
    this.#disposed = true;
  }

  #requireSession(method: string): DistributedSession {
    if (!this.session) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `${method} needs a coordinator (a cluster rank)`, {
        op: `${OP}.${method}`,
      });
    }
    return this.session;
  }

  #checkLive(method: string): void {
    if (this.#disposed) {
      throw new FlodlError('ERR_DISPOSED', 'the rank runtime was disposed', { op: `${OP}.${method}` });
    }
  }
}
