// The cooperative Worker: the user writes the training loop; the coordinator stays in charge of
// cadence, partitioning, averaging, callbacks and membership (floDl's cooperative tier).
import type { EpochMetrics, EpochPlan } from '@flodl/distributed';
import { writeDeathRecord } from '@flodl/distributed';
import { beginScope, endScope, FlodlError, type ScopeHandle, type Tensor, tidy } from '@flodl/tensor-native';
import type {
  AnyModule,
  Batch,
  ClusterRank,
  EpochEndOptions,
  EpochState,
  RankRuntime,
  RunMonitor,
  TrainedState,
  TrainStep,
} from '@flodl/trainer';
import { endSingleEpoch, saveFinal } from '@flodl/trainer';

/** What `step` reports: whether the coordinator ended the run (leave the loop). */
export interface StepOutcome {
  shutdown: boolean;
}

/** @internal How a Worker was formed. */
export type WorkerLink<M extends AnyModule> =
  | {
      kind: 'single';
      runtime: RankRuntime<M>;
      numEpochs: number;
      monitor?: RunMonitor;
      /**
       * What follows an epoch, as in the managed one-device run (`metricsFn`, the checkpoints,
       * the eval: `evalEvery`, `evalResultFn`); `evaluates`: an `evalFn` is set.
       */
      epochEnd: EpochEndOptions & { evaluates: boolean };
      release: () => void;
      trainStep: TrainStep<AnyModule>;
      cudaGraph: boolean;
    }
  | {
      kind: 'cluster';
      rank: ClusterRank<M>;
      afterFinish: () => Promise<void>;
      trainStep: TrainStep<AnyModule>;
      cudaGraph: boolean;
    };

const OP = 'Worker';

/**
 * One rank's handle on a cooperative run: the user owns the loop body (forward, loss,
 * `backward()`), the framework owns the tail (`step`: clipping, the LR schedule, the optimizer
 * step, zero-grad, timing, and any averaging the coordinator asks for) and everything the
 * coordinator decides (which samples, when to average, who evaluates or checkpoints). The
 * cohort is presented as one trainer: there is no rank or device in this API.
 *
 * @example
 * ```ts
 * const worker = await Trainer.builder(modelFactory, optimizerFactory, trainStep)
 *   .dataset(train).batchSize(64).numEpochs(5).intoWorker();
 * let plan;
 * while ((plan = await worker.nextPlan())) {
 *   let batch;
 *   while ((batch = await worker.nextBatch())) {
 *     const loss = crossEntropy(worker.model.forward(batch.at(0)), batch.at(1));
 *     loss.backward();
 *     if ((await worker.step(loss)).shutdown) break;
 *   }
 * }
 * const state = await worker.finish();
 * ```
 * floDl: `Trainer::builder(..).into_worker()` → `Worker`.
 */
export class Worker<M extends AnyModule = AnyModule> {
  readonly #link: WorkerLink<M>;
  readonly #runtime: RankRuntime<M>;
  #state: EpochState | undefined;
  #pendingPlan: EpochPlan | undefined;
  #inFlight: Batch | undefined;
  #scope: ScopeHandle | undefined;
  #computeStart: number | undefined;
  #nextEpoch = 0;
  #shutdown = false;
  #finished = false;
  #finishing: Promise<TrainedState> | undefined;
  readonly #guard: (() => void) | undefined;
  /** One device: the eval results not polled yet, `[epoch, metric]`. */
  readonly #evals: [number, number][] = [];
  /** One device: `requestEval()` asked for an eval after the epoch in flight. */
  #evalRequested = false;
  /** One device: the epochs ended and not polled yet, and the latest one. */
  readonly #metrics: EpochMetrics[] = [];
  #latestMetrics: EpochMetrics | undefined;

  /** @internal Use `Trainer.builder(...).intoWorker()`. */
  constructor(link: WorkerLink<M>) {
    this.#link = link;
    this.#runtime = link.kind === 'single' ? link.runtime : link.rank.runtime;
    // A resumed run continues with the epoch its bundle was saved in.
    this.#nextEpoch = this.#runtime.startEpoch;
    if (link.kind === 'cluster') {
      this.#runtime.enableMetricsStream();
      this.#runtime.enableEvalStream();
      this.#guard = armDeathGuard(() => this.#finished);
    }
  }

  /** The rank's model (train your forward on it). */
  get model(): M {
    this.#checkOpen('model');
    return this.#runtime.model;
  }

  /**
   * The next plan (an epoch, or one chunk of it under Cadence/Async dispatch: the same
   * `epoch` can repeat), or `null` once the run is over (and from then on). Fires the elected
   * rank's `epochFn` on an epoch change; closes a plan the loop left undrained.
   */
  async nextPlan(): Promise<EpochPlan | null> {
    this.#checkOpen('nextPlan');
    // A stop on one device (`stop()`, a signal) ends the run: no plan after it.
    if (this.#link.kind === 'single' && this.#runtime.shutdownSeen) this.#shutdown = true;
    if (this.#shutdown) return null;
    const closed = this.#closeOpenPlan();
    if (closed) await this.#afterPlan(closed);
    this.#pendingPlan = undefined;
    this.#computeStart = undefined;
    let plan: EpochPlan | undefined;
    if (this.#link.kind === 'single') {
      if (this.#nextEpoch < this.#link.numEpochs) {
        plan = { epoch: this.#nextEpoch, partitionOffset: 0, partitionSize: this.#runtime.totalSamples };
        this.#nextEpoch += 1;
        await this.#runtime.fireEpochCallback(plan.epoch);
      }
    } else {
      plan = await this.#runtime.waitForEpochPlan();
      if (plan) await this.#runtime.fireEpochCallback(plan.epoch);
      else this.#shutdown = true;
    }
    this.#pendingPlan = plan;
    return plan ?? null;
  }

  /**
   * The next batch of the current plan, on the rank's device, or `null` at the plan's end
   * (its report is sent then). The batch and every tensor the loop body creates until `step`
   * (activations, the loss) are freed by `step` (or the next `nextBatch`): `keep()` what must
   * outlive the step.
   */
  async nextBatch(): Promise<Batch | null> {
    this.#checkOpen('nextBatch');
    this.#releaseBatch();
    if (!this.#state) {
      const plan = this.#pendingPlan;
      if (!plan) return null;
      this.#pendingPlan = undefined;
      this.#state = this.#runtime.beginEpoch(plan);
    }
    const state = this.#state;
    // A loop that did not leave at `step`'s `shutdown` gets no batch after the stop.
    if (this.#runtime.shutdownSeen) state.shutdown = true;
    const batch = state.shutdown ? undefined : this.#runtime.nextBatch(state);
    if (!batch) {
      this.#state = undefined;
      if (state.shutdown) this.#shutdown = true;
      else {
        this.#runtime.endEpoch(state);
        await this.#afterPlan(state);
      }
      return null;
    }
    this.#runtime.syncBeforeForward();
    this.#inFlight = batch;
    // The loop body's tensors (activations, the loss) are freed at step(): keep() what must outlive it.
    this.#scope = beginScope('Worker step');
    this.#computeStart = performance.now();
    return batch;
  }

  /**
   * The framework-owned tail of a step, after the loop's `loss.backward()`: clip, LR, optimizer
   * step, zero-grad, counters, the timing report, and whatever the coordinator asked for
   * meanwhile (an averaging round runs here, never by the loop's hand).
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT when no batch is in flight (call `nextBatch()` first)
   *   or `loss` is not the loss tensor
   */
  async step(loss: Tensor): Promise<StepOutcome> {
    this.#checkOpen('step');
    if (this.#link.cudaGraph) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'with cudaGraph, the step runs inside the graph', {
        op: `${OP}.step`,
        expected: "worker.trainStep() after nextBatch() (it runs the builder's trainStep captured)",
        got: 'step(loss) after a forward outside the graph',
      });
    }
    const state = this.#state;
    if (!state || this.#computeStart === undefined) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'Worker.step called with no batch in flight', {
        op: `${OP}.step`,
        expected: 'worker.nextBatch() first, then forward, backward, step(loss)',
        got: 'no batch',
      });
    }
    if (typeof loss !== 'object' || loss === null || typeof (loss as Tensor).item !== 'function') {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'Worker.step needs the loss tensor', {
        op: `${OP}.step`,
        expected: 'the scalar loss you called backward() on',
        got: loss === null ? 'null' : typeof loss,
      });
    }
    // The step is queued before the loss is read: on a GPU the read waits for the step's
    // kernels instead of holding them back.
    tidy(() => this.#runtime.optimizerStepAndBookkeep());
    const value = loss.item() as number;
    const ms = performance.now() - this.#computeStart;
    this.#computeStart = undefined;
    this.#releaseBatch();
    await this.#runtime.afterStep(state, value, ms);
    if (state.shutdown) this.#shutdown = true;
    return { shutdown: state.shutdown };
  }

  /**
   * One whole step on the batch in flight with the builder's `trainStep` (forward and loss),
   * then the framework's tail as `step`: backward, clipping, LR, optimizer step, counters and
   * the coordinator's requests. With `cudaGraph` the step is captured into a CUDA graph once
   * and replayed per batch (the only way to train a Worker with `cudaGraph`).
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT when no batch is in flight; what `trainStep`
   *   threw, naming the epoch and batch
   */
  async trainStep(): Promise<StepOutcome & { loss: number }> {
    this.#checkOpen('trainStep');
    const state = this.#state;
    const batch = this.#inFlight;
    if (!state || batch === undefined || this.#computeStart === undefined) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'Worker.trainStep called with no batch in flight', {
        op: `${OP}.trainStep`,
        expected: 'worker.nextBatch() first, then trainStep()',
        got: 'no batch',
      });
    }
    const [loss] = this.#runtime.trainStep(this.#link.trainStep as TrainStep<M>, batch, {
      epoch: state.epoch,
      batch: state.batchDone - 1,
    });
    const ms = performance.now() - this.#computeStart;
    this.#computeStart = undefined;
    this.#releaseBatch();
    await this.#runtime.afterStep(state, loss, ms);
    if (state.shutdown) this.#shutdown = true;
    return { shutdown: state.shutdown, loss };
  }

  /**
   * Ends this rank's part: closes a plan in flight and returns the final state (CPU tensors,
   * parameter order, owned by the caller). The run's own model and optimizer are freed (as the
   * managed Trainer frees them): from here on, use the returned state. On a cluster it says
   * Exiting to the coordinator; the process is then done with the run. Idempotent.
   */
  finish(): Promise<TrainedState> {
    this.#finishing ??= (async () => {
      this.#releaseBatch();
      const link = this.#link;
      if (link.kind === 'single' && this.#runtime.savePath !== undefined) {
        // Saved before the open plan closes: the bundle's cursor is the batches trained so far.
        saveFinal(this.#runtime, this.#runtime.dataCursor().epoch >= link.numEpochs ? 'final' : 'stop');
      }
      const closed = this.#closeOpenPlan();
      // A plan the loop left at finish(): its metrics, no checkpoint or eval after it.
      if (closed) await this.#afterPlan(closed, true);
      if (link.kind === 'single') {
        try {
          return this.#runtime.finalState();
        } finally {
          link.release();
          this.#finished = true;
          await link.monitor?.close('Completed');
        }
      }
      const state = await link.rank.finish();
      this.#finished = true;
      this.#guard?.();
      await link.afterFinish();
      return state;
    })();
    return this.#finishing;
  }

  /**
   * The latest epoch the coordinator aggregated (on one device, the latest epoch this Worker
   * ended), `undefined` before the first.
   */
  epochMetrics(): EpochMetrics | undefined {
    return this.#link.kind === 'single' ? this.#latestMetrics : this.#runtime.latestMetrics;
  }

  /**
   * Every aggregated epoch since the last call, oldest first (on one device, the epochs this
   * Worker ended: what `metricsFn` got).
   */
  pollMetrics(): EpochMetrics[] {
    return this.#link.kind === 'single' ? this.#metrics.splice(0) : this.#runtime.takeMetrics();
  }

  /**
   * The eval results since the last call, `[epoch, metric]` (epoch 1-based: the epochs done):
   * the elected rank's on a cluster; on one device the `evalFn` this Worker ran after an epoch
   * (every `evalEvery` epochs, as the managed run does; a failed eval is warned about, not listed).
   */
  pollEval(): [number, number][] {
    return this.#link.kind === 'single' ? this.#evals.splice(0) : this.#runtime.takeEvals();
  }

  /**
   * Asks for an eval at the next coherent boundary: on a cluster the elected rank's; on one
   * device after the epoch in flight (when it ends: `nextBatch()` returns `null`, or
   * `nextPlan()` closes it), whatever `evalEvery` says. A no-op without an `evalFn`.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT after `finish()`
   */
  requestEval(): void {
    this.#checkOpen('requestEval');
    if (this.#link.kind === 'single') {
      if (this.#link.epochEnd.evaluates) this.#evalRequested = true;
      return;
    }
    this.#runtime.reportIntent('EvalNow');
  }

  /**
   * Asks for a checkpoint at the next coherent boundary: on a cluster, the elected rank's;
   * on one device with a `savePath`, a bundle (`<savePath>.step-<N>`) after the step in flight,
   * or at once between steps (a no-op on one device without a `savePath`).
   */
  requestCheckpoint(): void {
    this.#checkOpen('requestCheckpoint');
    if (this.#link.kind === 'cluster') {
      this.#runtime.reportIntent('CheckpointNow');
      return;
    }
    if (this.#runtime.savePath === undefined) return;
    this.#runtime.requestCheckpoint();
    if (this.#computeStart === undefined) this.#runtime.flushCheckpointRequest();
  }

  /**
   * Stops a one-device run after the step in flight: that step (or the next, when none is in
   * flight) reports `shutdown: true`, and `nextBatch()` / `nextPlan()` return `null` from then
   * on; `finish()` then writes the stop bundle at `savePath` (the batches trained so far, so
   * `resumeFrom` continues at the next step). Safe from a timer or a signal listener: `step`
   * gives the event loop a turn every ~50 ms of steps, where such callbacks run.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT on a cluster rank (its launcher stops the cohort:
   *   `handle.stop()` or Ctrl-C there), or after `finish()`
   * @example
   * ```ts fragment
   * setTimeout(() => worker.stop(), 60_000); // train for a minute at most
   * ```
   * Lightning: `trainer.should_stop = True`.
   */
  stop(): void {
    this.#checkOpen('stop');
    if (this.#link.kind === 'cluster') {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'a cluster rank cannot stop the run alone', {
        op: `${OP}.stop`,
        expected: "the launcher's handle.stop() (or Ctrl-C in its terminal): the ranks stop together",
        got: 'worker.stop() on a cluster rank',
      });
    }
    this.#runtime.requestStop();
  }

  /** The plans as an async iterator (`for await (const plan of worker.plans())`). */
  async *plans(): AsyncGenerator<EpochPlan, void, undefined> {
    for (let plan = await this.nextPlan(); plan; plan = await this.nextPlan()) yield plan;
  }

  /** The current plan's batches as an async iterator. */
  async *batches(): AsyncGenerator<Batch, void, undefined> {
    for (let batch = await this.nextBatch(); batch; batch = await this.nextBatch()) yield batch;
  }

  /** `await using worker = ...`: finishes the Worker (a cluster rank that never finished reports its death). */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#finished || this.#finishing) {
      await this.#finishing;
      return;
    }
    if (this.#link.kind === 'single') {
      await this.finish();
      return;
    }
    dieUnfinished('the cooperative Worker was disposed without finish()');
  }

  /** Closes a plan the loop left undrained (its report sent); the state it closed (`undefined`: none, or a shutdown). */
  #closeOpenPlan(): EpochState | undefined {
    const state = this.#state;
    this.#state = undefined;
    if (!state || state.shutdown) return undefined;
    this.#runtime.endEpoch(state);
    return state;
  }

  /**
   * One device: what follows the plan's epoch, as in the managed run ({@link endSingleEpoch}):
   * its metrics (`metricsFn`, `pollMetrics`, the monitor), the checkpoints due, the eval due
   * (`evalEvery`, or `requestEval()`), its metric kept for `pollEval`; `metricsOnly` at
   * `finish()`. On a cluster the coordinator sends all of it where it goes.
   */
  async #afterPlan(state: EpochState, metricsOnly = false): Promise<void> {
    const link = this.#link;
    if (link.kind !== 'single') return;
    const requested = this.#evalRequested;
    this.#evalRequested = false;
    const options = metricsOnly
      ? { metricsFn: link.epochEnd.metricsFn, evalEvery: 0 }
      : requested
        ? { ...link.epochEnd, evalEvery: 1 }
        : link.epochEnd;
    await endSingleEpoch(this.#runtime, options, state.epoch, link.monitor, {
      metrics: (metrics) => {
        this.#metrics.push(metrics);
        this.#latestMetrics = metrics;
      },
      eval: (epoch, metric) => this.#evals.push([epoch, metric]),
    });
  }

  #releaseBatch(): void {
    const scope = this.#scope;
    this.#scope = undefined;
    if (scope) endScope(scope);
    this.#inFlight?.dispose();
    this.#inFlight = undefined;
  }

  #checkOpen(method: string): void {
    if (this.#finishing) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `Worker.${method} after finish()`, {
        op: `${OP}.${method}`,
        expected: 'every call before finish()',
        got: `${method}() after finish()`,
      });
    }
  }
}

/**
 * A cluster rank whose loop ends without `finish()` (an uncaught error, an early exit, an
 * empty event loop) writes its death record and exits non-zero, so its peers are unblocked
 * within the detection bound instead of waiting on it. Returns the disarm function.
 */
function armDeathGuard(finished: () => boolean): () => void {
  const onBeforeExit = (): void => {
    if (!finished()) dieUnfinished('the cooperative Worker was dropped without finish() (the loop ended)');
  };
  const onExit = (code: number): void => {
    // A crash wrote its own record (installDeathRecord); a clean exit without finish() must not pass as success.
    if (finished() || code !== 0) return;
    writeDeathRecord(unfinishedError('the cooperative Worker exited without finish()'), 1);
    process.exitCode = 1;
  };
  process.on('beforeExit', onBeforeExit);
  process.on('exit', onExit);
  return () => {
    process.off('beforeExit', onBeforeExit);
    process.off('exit', onExit);
  };
}

function dieUnfinished(reason: string): never {
  const error = unfinishedError(reason);
  writeDeathRecord(error);
  process.stderr.write(`flodl: ${reason}\n`);
  process.exit(1);
}

/** The failure of a cluster rank whose Worker ended without `finish()`, as its death record names it. */
function unfinishedError(reason: string): FlodlError {
  return new FlodlError('ERR_RANK_FAILED', reason, {
    op: 'Worker',
    expected: 'worker.finish() once the loop is done',
    got: 'the process ending without it',
  });
}
