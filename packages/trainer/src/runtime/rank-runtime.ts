// The rank runtime: one rank's model, optimizer, data and counters, and the primitives both
// training tiers drive (floDl's GpuWorker). The managed Trainer runs `runEpochPlan`; the
// cooperative Worker calls the same primitives from the user's loop.

import { noGrad } from '@flodl/autograd';
import type {
  CoordinatorMessage,
  DistributedSession,
  EpochMetrics,
  EpochPlan,
  IntentKind,
} from '@flodl/distributed';
import type { Metrics } from '@flodl/distributed/wire';
import { CapturedStep, clipGradNorm, type LRScheduler, type Optimizer } from '@flodl/nn';
import { type Device, FlodlError, type Tensor, tidy } from '@flodl/tensor-native';
import type { BundleReason, CheckpointMeta, DataCursor } from '../checkpoint/meta.js';
import { periodicStem, prunePeriodic } from '../checkpoint/paths.js';
import type { CheckpointBundle } from '../checkpoint/read.js';
import { restoreBundle } from '../checkpoint/read.js';
import { type BundleSource, writeBundle } from '../checkpoint/write.js';
import { Batch } from '../data/batch.js';
import { DataLoader } from '../data/loader/data-loader.js';
import { epochPermutation } from '../data/random.js';
import { CursorTracker } from './data-cursor.js';
import { PlanSampler } from './plan-sampler.js';
import { drainScalars } from './scalars.js';
import type { AnyModule, EpochState, TrainedState, TrainingDataset, TrainStep } from './types.js';

/** What the elected rank's epoch callback can reach. */
export interface EpochContext<M extends AnyModule = AnyModule> {
  readonly model: M;
  readonly optimizer: Optimizer;
  readonly rank: number;
  readonly worldSize: number;
  /** Sets every parameter group's learning rate. */
  setLr(lr: number): void;
}

/** The user callbacks a rank services (the elected rank only, in a cluster). */
export interface RuntimeCallbacks<M extends AnyModule = AnyModule> {
  /** Evaluates the model (run in eval mode, without grad); returns the metric. */
  evalFn?: (model: M, dataset: TrainingDataset | undefined) => number | Promise<number>;
  evalDataset?: TrainingDataset;
  /** Saves a checkpoint of averaging round (or epoch) `version`. */
  checkpointFn?: (version: number, model: M) => void | Promise<void>;
  /** Runs before each epoch (0-based). */
  epochFn?: (epoch: number, context: EpochContext<M>) => void | Promise<void>;
}

/** Options of {@link RankRuntime}. */
export interface RankRuntimeOptions<M extends AnyModule = AnyModule> {
  model: M;
  optimizer: Optimizer;
  dataset: TrainingDataset;
  batchSize: number;
  /** Shuffle seed: plan `(epoch, offset, size)` trains `epochPermutation(N, seed, epoch)[offset, offset + size)`. */
  seed: number;
  device: Device;
  /** Default 0 of 1. */
  rank?: number;
  worldSize?: number;
  /** Clip the global gradient norm to this before each step. Default none. */
  maxGradNorm?: number;
  /** Sets the learning rate of each step from `lrAt(globalStep + stepsSinceAvg)`. Default none. */
  scheduler?: LRScheduler;
  /** Multiplies the learning rate (Goyal scaling). Default 1. */
  lrScale?: number;
  /** Loader prefetch depth. Default 2. */
  prefetch?: number;
  /** Loader resident mode. Default `'auto'`. */
  resident?: boolean | 'auto';
  /** Capture the step (forward to update) into a CUDA graph and replay it per batch. Default off. */
  cudaGraph?: boolean;
  callbacks?: RuntimeCallbacks<M>;
  /** Hears every step after it is booked (a progress display, a metrics log). Default none. */
  onStep?: (step: RuntimeStep) => void;
  /** The rank's link to the coordinator; absent on a single device. */
  session?: DistributedSession;
  /** Stem of the run's checkpoint bundles (`saveBundle`). Default none. */
  savePath?: string;
  /** Periodic bundles kept under `savePath` (older ones are removed). Default 3. */
  keepLast?: number;
}

/** A booked step, as {@link RankRuntimeOptions.onStep} hears it. */
export interface RuntimeStep {
  epoch: number;
  /** Batches done in this plan, this one included. */
  batch: number;
  /** Batches in this plan. */
  batches: number;
  loss: number;
  /** The step's compute time, ms. */
  ms: number;
  /** Samples per batch. */
  batchSize: number;
  /** The rank's optimizer steps so far. */
  localStep: number;
}

/** One chunk report of a single-device run, as the coordinator would have received it. */
export type ChunkReport = { rank: number } & Omit<Metrics, 'type'>;

const OP = 'RankRuntime';

/** Longest lockstep wait after a plan's last step, ms (see `afterStep`). */
const LAST_STEP_HOLD_MS = 3000;

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
  readonly #sampler: PlanSampler;
  readonly #loader: DataLoader;
  /** The model's parameters, listed once (the step reads them every time). */
  readonly #parameters: Tensor[];
  #stepsSinceAvg = 0;
  #plans: EpochPlan[] = [];
  #inbox: CoordinatorMessage[] = [];
  #open: EpochState | undefined;
  #iterator: Iterator<Batch> | undefined;
  #runEnd = 0;
  #epochRole: number | undefined;
  #lastEpochFired = -1;
  #latest: EpochMetrics | undefined;
  #metricsStream: EpochMetrics[] | undefined;
  #evalStream: [number, number][] | undefined;
  #reports: ChunkReport[] = [];
  #lastLr: number | undefined;
  #shutdown = false;
  #throttled = false;
  #throttledAt = 0;
  #roundsHeld = 0;
  #disposed = false;
  /** The captured step of `cudaGraph`, made at the first step. */
  #captured: CapturedStep | null = null;
  #where = { epoch: 0, batch: 0 };
  readonly #cursor: CursorTracker;
  #bundleRequested = false;

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
    this.#sampler = new PlanSampler(options.dataset.length);
    this.#cursor = new CursorTracker(options.batchSize);
    this.#loader = new DataLoader(options.dataset, {
      batchSize: options.batchSize,
      sampler: this.#sampler,
      device: options.device,
      prefetch: options.prefetch ?? 2,
      resident: options.resident ?? 'auto',
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
    return this.#shutdown || (this.session?.stopped ?? false);
  }

  /** Ends the plan in flight after its current step (a graceful stop; the coordinator's Shutdown in a cluster). */
  requestStop(): void {
    this.#shutdown = true;
  }

  /** Routes a coordinator message to the runtime (the session's `onControl`). */
  receive(message: CoordinatorMessage): void {
    // A Throttle holds until the round after the one applied when it arrived.
    if (message.type === 'Throttle') this.#throttledAt = this.session?.version ?? 0;
    this.#inbox.push(message);
  }

  // ---- plans and batches ----------------------------------------------------------------

  /** Opens `plan`: this rank's slice of the epoch permutation, batched by `batchSize`. */
  beginEpoch(plan: EpochPlan): EpochState {
    this.#checkLive('beginEpoch');
    this.#closeIterator();
    this.currentEpoch = plan.epoch;
    const state: EpochState = {
      epoch: plan.epoch,
      picks: this.#picks(plan.epoch, plan.partitionOffset, plan.partitionSize),
      batchDone: 0,
      booked: 0,
      totalLoss: 0,
      computeMsTotal: 0,
      dataStarveMsTotal: 0,
      lastDataMs: 0,
      epochStart: performance.now(),
      shutdown: false,
    };
    // A resumed epoch: the batches trained before the save are skipped, its totals carried on.
    this.#cursor.begin(plan, state);
    this.#open = state;
    return state;
  }

  /** The next batch of `state` (owned by the caller: dispose it), or `undefined` at its end. */
  nextBatch(state: EpochState): Batch | undefined {
    this.#checkLive('nextBatch');
    const total = Math.floor(state.picks.length / this.batchSize);
    if (state.batchDone >= total) return undefined;
    if (this.#iterator === undefined || this.#open !== state || state.batchDone >= this.#runEnd) {
      // A fresh pass over the batches known now (an ExtendPartition adds to them later).
      this.#closeIterator();
      this.#open = state;
      const from = state.batchDone * this.batchSize;
      this.#sampler.set(Int32Array.from(state.picks.slice(from, total * this.batchSize)));
      this.#iterator = this.#loader.epoch(state.epoch)[Symbol.iterator]();
      this.#runEnd = total;
    }
    const started = performance.now();
    const next = this.#iterator.next();
    if (next.done) {
      this.#closeIterator();
      return undefined;
    }
    state.lastDataMs = performance.now() - started;
    state.dataStarveMsTotal += state.lastDataMs;
    state.batchDone += 1;
    return next.value;
  }

  /** Waits for an averaging writeback before the next forward (none pending on this runtime's paths). */
  syncBeforeForward(): void {}

  /** Clip → LR → optimizer step → zeroGrad → counters. Gradients must be populated. */
  optimizerStepAndBookkeep(): void {
    this.#checkLive('optimizerStepAndBookkeep');
    const { maxGradNorm } = this.#options;
    if (maxGradNorm !== undefined) {
      const withGrad = this.#parameters.filter((parameter) => parameter.grad !== undefined);
      if (withGrad.length > 0) clipGradNorm(withGrad, maxGradNorm);
    }
    this.#applySchedule();
    this.optimizer.step();
    this.optimizer.zeroGrad();
    this.#countStep();
  }

  /** The learning rate of this step from the schedule (× lrScale), when there is one. */
  #applySchedule(): void {
    const { scheduler } = this.#options;
    if (scheduler === undefined) return;
    const lrs = scheduler.lrAt(this.globalStep + this.stepsSinceAvg);
    const scale = this.#options.lrScale ?? 1;
    lrs.forEach((lr, group) => {
      this.optimizer.setGroupLr(group, lr * scale);
    });
  }

  #countStep(): void {
    this.localStep += 1;
    if (!this.session) this.#stepsSinceAvg += 1;
  }

  /** The step of `cudaGraph`: the schedule's LR, then forward to update replayed from a graph. */
  #capturedStep(trainStep: TrainStep<M>, batch: Batch, where: { epoch: number; batch: number }): number {
    this.#where = where;
    this.#captured ??= new CapturedStep(
      this.optimizer,
      (tensors) => {
        let output: unknown;
        try {
          output = trainStep(this.model, new Batch(tensors, batch.names));
        } catch (error) {
          throw whereTrainStepThrew(error, this.#where);
        }
        return checkLoss(output);
      },
      {
        otherShapes: 'eager',
        ...(this.#options.maxGradNorm === undefined ? {} : { maxGradNorm: this.#options.maxGradNorm }),
      },
    );
    this.#applySchedule();
    const loss = this.#captured.run([...batch]).item() as number;
    this.#countStep();
    return loss;
  }

  /** Books the step, reports its timing and follows the coordinator (a reduce can run here). */
  async afterStep(state: EpochState, loss: number, ms: number): Promise<void> {
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
    const session = this.session;
    if (!session) {
      if (this.#bundleRequested) {
        this.#bundleRequested = false;
        this.#saveOrWarn('request');
      }
      if (this.#shutdown) state.shutdown = true;
      return;
    }
    const paramNorm = (this.stepsSinceAvg + 1) % 10 === 0 ? this.#paramNorm() : undefined;
    await session.afterStep({
      loss,
      batchMs: ms,
      dataMs: state.lastDataMs,
      ...(paramNorm === undefined ? {} : { paramNorm }),
    });
    const lr = this.optimizer.getLr();
    if (lr !== this.#lastLr) {
      this.#lastLr = lr;
      session.control.send({ type: 'LrUpdate', lr });
    }
    await this.serviceControl();
    // Sync modes train in lockstep: every step is followed by its averaging round (the
    // coordinator fires one as soon as every rank has a step), so each round averages exactly
    // one step per rank and a run is a deterministic function of its seed, data and world size.
    // After a plan's last batch the wait is bounded: a rank with one batch less in the epoch
    // would hold the round back (a collective needs a step from every rank).
    if (this.#lockstep) {
      const last = state.batchDone >= Math.floor(state.picks.length / this.batchSize);
      const deadline = last ? performance.now() + LAST_STEP_HOLD_MS : Number.POSITIVE_INFINITY;
      const target = this.#roundsHeld + 1;
      while (session.version < target && !this.shutdownSeen && performance.now() < deadline) {
        await sleep(1);
        await this.serviceControl();
      }
    }
    this.#roundsHeld = session.version;
    if (this.shutdownSeen) state.shutdown = true;
  }

  /** Closes `state` and sends its report (skipped after a shutdown seen mid-plan). */
  endEpoch(state: EpochState): void {
    if (this.#open === state) this.#closeIterator();
    if (state.shutdown) return;
    this.#cursor.closed(state);
    const batches = state.batchDone;
    const elapsed = performance.now() - state.epochStart;
    const report: Omit<Metrics, 'type'> = {
      epoch: state.epoch,
      avgLoss: batches === 0 ? 0 : state.totalLoss / batches,
      batchesProcessed: batches,
      epochMs: batches === 0 ? 0 : elapsed,
      samplesProcessed: batches * this.batchSize,
      shareCompleteMs: batches === 0 ? 0 : state.computeMsTotal + state.dataStarveMsTotal,
      computeOnlyMs: state.computeMsTotal,
      dataStarveMs: state.dataStarveMsTotal,
      scalars: drainScalars(),
    };
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
      const loss = tidy(() => this.#capturedStep(trainStep, batch, where));
      return [loss, performance.now() - started];
    }
    const loss = tidy(() => {
      let output: unknown;
      try {
        output = trainStep(this.model, batch);
      } catch (error) {
        throw whereTrainStepThrew(error, where);
      }
      const loss = checkLoss(output);
      loss.backward();
      this.optimizerStepAndBookkeep();
      // Read after the step is queued: on a GPU an earlier read would wait for the forward
      // before backward and the step could be launched.
      return loss.item() as number;
    });
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
        [loss, ms] = this.trainStep(trainStep, batch, { epoch: plan.epoch, batch: state.batchDone - 1 });
      } finally {
        batch.dispose();
      }
      await this.afterStep(state, loss, ms);
      if (state.shutdown) {
        this.#closeIterator();
        return true;
      }
    }
    this.endEpoch(state);
    return false;
  }

  // ---- averaging --------------------------------------------------------------------------

  /** A copy of the parameters and buffers (never aliasing them) with the steps since the last average. */
  snapshotParams(): TrainedState & { batchCount: number } {
    const copy = (tensors: Tensor[]): Tensor[] =>
      noGrad(() => tidy(() => tensors.map((tensor) => tensor.detach().to('cpu').clone())));
    return {
      params: copy(this.model.parameters()),
      buffers: copy(this.model.buffers()),
      batchCount: this.stepsSinceAvg,
    };
  }

  /**
   * Overwrites the parameters (and buffers) with an averaged state.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT when the counts or shapes differ from the model's
   */
  loadAveraged(update: TrainedState): void {
    const parameters = this.model.parameters();
    const buffers = this.model.buffers();
    if (update.params.length !== parameters.length || update.buffers.length !== buffers.length) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'the averaged state does not match the model', {
        op: `${OP}.loadAveraged`,
        expected: `${parameters.length} parameters and ${buffers.length} buffers`,
        got: `${update.params.length} and ${update.buffers.length}`,
      });
    }
    noGrad(() => {
      parameters.forEach((parameter, index) => {
        parameter.copy_(update.params[index] as Tensor);
      });
      buffers.forEach((buffer, index) => {
        buffer.copy_(update.buffers[index] as Tensor);
      });
    });
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
      averagingCount: this.session?.version ?? 0,
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
    const savePath = this.#options.savePath;
    if (savePath === undefined) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'a checkpoint bundle needs a savePath', {
        op: `${OP}.saveBundle`,
        expected: ".savePath('runs/model') on the builder",
        got: 'no savePath',
      });
    }
    const periodic = reason === 'every' || reason === 'atEpoch' || reason === 'request';
    const stem = periodic ? periodicStem(savePath, this.globalStep + this.stepsSinceAvg) : savePath;
    const meta = writeBundle(stem, this.bundleSource(), reason);
    if (periodic) prunePeriodic(savePath, this.#options.keepLast ?? 3, this.worldSize);
    return meta;
  }

  /** The rank the coordinator elected for callbacks (`undefined` before it said, and on one device). */
  get electedRank(): number | undefined {
    return this.#epochRole;
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
    restoreBundle(bundle, {
      model: this.model,
      optimizer: this.optimizer,
      scheduler: this.#options.scheduler,
      device: this.device,
      rank: this.rank,
      batchSize: this.batchSize,
      datasetLength: this.totalSamples,
    });
    const { meta } = bundle;
    this.localStep = meta.localStep;
    if (this.session) {
      this.globalStep = meta.globalStep;
    } else {
      // One device: the LR clock is the step count (a cluster bundle's global step folds in).
      this.globalStep = 0;
      this.#stepsSinceAvg = meta.worldSize > 1 ? meta.globalStep + meta.stepsSinceAvg : meta.stepsSinceAvg;
    }
    // A cluster bundle's cursor is one rank's share: its epoch restarts from the beginning here.
    const cursor =
      meta.worldSize > 1
        ? { epoch: meta.cursor.epoch, batch: 0, totalLoss: 0, computeMs: 0, dataMs: 0 }
        : meta.cursor;
    this.#cursor.resumeAt(cursor);
    this.currentEpoch = cursor.epoch;
    // The epoch callback of an epoch already begun fired before the save.
    if (cursor.batch > 0) this.#lastEpochFired = cursor.epoch;
  }

  /** The epoch a resumed run continues with (0 for a fresh one). */
  get startEpoch(): number {
    return this.#cursor.startEpoch;
  }

  /** The elected rank's checkpoint: the `checkpointFn` callback (if any), then a bundle (with a `savePath`). */
  async #clusterCheckpoint(version: number): Promise<{ error?: string; elapsedMs: number }> {
    const started = performance.now();
    const errors: string[] = [];
    if (this.#options.callbacks?.checkpointFn) {
      const { error } = await this.checkpoint(version);
      if (error !== undefined) errors.push(error);
    }
    if (this.#options.savePath !== undefined) {
      try {
        this.saveBundle('every');
      } catch (error) {
        errors.push(messageOf(error));
      }
    }
    return {
      ...(errors.length > 0 ? { error: errors.join('; ') } : {}),
      elapsedMs: performance.now() - started,
    };
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
      const plan = this.#plans.shift();
      if (plan) return plan;
      if (this.shutdownSeen) return undefined;
      await session.drain();
      await sleep(1);
    }
  }

  /** Runs the epoch callback once per epoch, on the elected rank (every epoch on a single device). */
  async fireEpochCallback(epoch: number): Promise<void> {
    if (epoch === this.#lastEpochFired) return;
    this.#lastEpochFired = epoch;
    if (this.session && this.#epochRole !== this.rank) return;
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
    await session.drain();
    await this.#handleInbox();
    if (!this.#throttled) return;
    // Throttle: hold until the next averaging round (or the end of the run).
    const version = this.#throttledAt;
    while (session.version === version && !this.shutdownSeen) {
      await sleep(1);
      await session.drain();
      await this.#handleInbox();
    }
    this.#throttled = false;
  }

  /** Collects every aggregated epoch (`EpochAggregated`) from now on; see `takeMetrics`. */
  enableMetricsStream(): void {
    this.#metricsStream ??= [];
  }

  /** Collects every eval broadcast (`EvalBroadcast`) from now on; see `takeEvals`. */
  enableEvalStream(): void {
    this.#evalStream ??= [];
  }

  /** The latest aggregated epoch the coordinator broadcast. */
  get latestMetrics(): EpochMetrics | undefined {
    return this.#latest;
  }

  /** The aggregated epochs collected since the last call, oldest first. */
  takeMetrics(): EpochMetrics[] {
    return this.#metricsStream?.splice(0) ?? [];
  }

  /** The eval broadcasts collected since the last call, oldest first. */
  takeEvals(): [number, number][] {
    return this.#evalStream?.splice(0) ?? [];
  }

  /** Single device: the chunk reports since the last call. */
  takeReports(): ChunkReport[] {
    return this.#reports.splice(0);
  }

  /** Runs the eval callback now (single device); the metric, or the error. */
  async evaluate(): Promise<{ metric: number; error?: string; elapsedMs: number }> {
    const { evalFn, evalDataset } = this.#options.callbacks ?? {};
    const started = performance.now();
    if (!evalFn) return { metric: Number.NaN, error: 'no evalFn', elapsedMs: 0 };
    try {
      this.model.eval();
      const metric = await noGrad(() => evalFn(this.model, evalDataset));
      if (typeof metric !== 'number') {
        return { metric: Number.NaN, error: `evalFn returned ${typeof metric}, not a number`, elapsedMs: 0 };
      }
      return { metric, elapsedMs: performance.now() - started };
    } catch (error) {
      return { metric: Number.NaN, error: messageOf(error), elapsedMs: performance.now() - started };
    } finally {
      this.model.train();
    }
  }

  /** Runs the checkpoint callback now; the error, if it failed. */
  async checkpoint(version: number): Promise<{ error?: string; elapsedMs: number }> {
    const checkpointFn = this.#options.callbacks?.checkpointFn;
    const started = performance.now();
    if (!checkpointFn) return { error: 'no checkpointFn', elapsedMs: 0 };
    try {
      await checkpointFn(version, this.model);
      return { elapsedMs: performance.now() - started };
    } catch (error) {
      return { error: messageOf(error), elapsedMs: performance.now() - started };
    }
  }

  /** This rank's final state: CPU copies in parameter / buffer order. */
  finalState(): TrainedState {
    const { params, buffers } = this.snapshotParams();
    return { params, buffers };
  }

  /** Frees the loader (and what it prepared ahead). Idempotent. */
  dispose(): void {
    if (this.#disposed) return;
    this.#captured?.dispose();
    this.#captured = null;
    this.#closeIterator();
    this.#loader.dispose();
    this.#disposed = true;
  }

  async #handleInbox(): Promise<void> {
    while (this.#inbox.length > 0) {
      const message = this.#inbox.shift() as CoordinatorMessage;
      await this.#handle(message);
    }
  }

  async #handle(message: CoordinatorMessage): Promise<void> {
    const session = this.session as DistributedSession;
    switch (message.type) {
      case 'StartEpoch':
        this.#plans.push(message.plan);
        return;
      case 'ExtendPartition': {
        const open = this.#open;
        if (open && open.epoch === message.epoch && !open.shutdown) {
          open.picks.push(...this.#picks(message.epoch, message.offset, message.size));
        } else {
          this.#plans.push({
            epoch: message.epoch,
            partitionOffset: message.offset,
            partitionSize: message.size,
          });
        }
        return;
      }
      case 'SetGlobalStep':
        this.globalStep = message.globalStep;
        return;
      case 'SetEpochCallbackRole':
        this.#epochRole = message.rank;
        return;
      case 'Throttle':
        this.#throttled = true;
        return;
      case 'EpochAggregated':
        this.#latest = message.metrics;
        this.#metricsStream?.push(message.metrics);
        return;
      case 'EvalBroadcast':
        this.#evalStream?.push([message.epoch, message.metric]);
        return;
      case 'ExecuteEvalCallback': {
        if (message.targetRank !== this.rank || !this.#options.callbacks?.evalFn) return;
        const result = await this.evaluate();
        session.control.send({
          type: 'EvalResult',
          scheduleId: message.scheduleId,
          epoch: message.epoch,
          metric: result.metric,
          elapsedMs: result.elapsedMs,
          ...(result.error === undefined ? {} : { error: result.error }),
        });
        return;
      }
      case 'Checkpoint': {
        if (message.targetRank !== this.rank) return;
        const result = await this.#clusterCheckpoint(message.version);
        session.control.send({
          type: 'CheckpointResult',
          version: message.version,
          elapsedMs: result.elapsedMs,
          ...(result.error === undefined ? {} : { error: result.error }),
        });
        return;
      }
      case 'Shutdown':
        this.#shutdown = true;
        return;
      case 'ShutdownWithSave':
        // This rank holds the freshest state: it persists it before the run ends.
        if (this.#options.savePath !== undefined && !this.#shutdown) this.#saveOrWarn('shutdownWithSave');
        this.#shutdown = true;
        return;
      default:
        // DeclareDead / NewNcclSession / heartbeats: the session owns them.
        return;
    }
  }

  #picks(epoch: number, offset: number, size: number): number[] {
    const total = this.totalSamples;
    if (
      !Number.isInteger(offset) ||
      !Number.isInteger(size) ||
      offset < 0 ||
      size < 0 ||
      offset + size > total
    ) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'the plan runs past the end of the dataset', {
        op: `${OP}.beginEpoch`,
        expected: `0 <= offset, offset + size <= ${total}`,
        got: `offset ${offset}, size ${size}`,
      });
    }
    return Array.from(epochPermutation(total, this.seed, epoch).subarray(offset, offset + size));
  }

  #closeIterator(): void {
    const iterator = this.#iterator;
    this.#iterator = undefined;
    iterator?.return?.();
  }

  #paramNorm(): number {
    return tidy(() => {
      let sum = 0;
      for (const parameter of this.#parameters) {
        sum += parameter.detach().to('float64').pow(2).sum().item() as number;
      }
      return Math.sqrt(sum);
    });
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

/**
 * The error of a throwing `trainStep`, naming where it threw: a FlodlError (a wrong shape, a
 * tensor on another device) keeps its code; the user's own error stays a plain Error. The
 * original is the `cause` either way.
 */
function whereTrainStepThrew(error: unknown, where: { epoch: number; batch: number }): Error {
  const message = `trainStep threw at epoch ${where.epoch}, batch ${where.batch}: ${error instanceof Error ? error.message : String(error)}`;
  if (FlodlError.isInstance(error)) return new FlodlError(error.code, message, { cause: error });
  return new Error(message, { cause: error });
}

function checkLoss(output: unknown): Tensor {
  const tensor = output as Tensor | undefined;
  if (
    typeof tensor !== 'object' ||
    tensor === null ||
    typeof tensor.backward !== 'function' ||
    typeof tensor.item !== 'function'
  ) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'trainStep must return the loss tensor', {
      op: 'trainStep',
      expected: 'a scalar Tensor that requires grad (forward + loss only)',
      got: tensor === null ? 'null' : typeof tensor,
    });
  }
  if (tensor.numel !== 1) {
    throw new FlodlError('ERR_SHAPE', 'trainStep must return a scalar loss', {
      op: 'trainStep',
      expected: 'a tensor of one element',
      got: `shape [${tensor.shape.join(', ')}]`,
    });
  }
  return tensor;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
