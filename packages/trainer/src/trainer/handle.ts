// The handle of a managed run: its metrics as they arrive, its eval results, and its result.
import type { DeathRecord, EpochMetrics } from '@flodl/distributed';
import { type Device, FlodlError } from '@flodl/tensor-native';
import type { TrainedState } from '../runtime/types.js';

/** What `join()` resolves with: the trained state, plus the ranks a cluster run lost. */
export interface TrainedRun extends TrainedState {
  /** Ranks lost on the way (elastic runs), their death records earliest first. */
  lost: DeathRecord[];
}

/**
 * A running (or finished) managed training run. Metrics arrive once per epoch, oldest first:
 * iterate them with `for await (const m of handle.metrics())`, or take them with
 * `pollMetrics()` / `nextMetrics()` (those two share one cursor; `metrics()` iterators each
 * start from the first epoch). On a cluster the handle lives in the launching process and
 * `join()` resolves with the run's final consensus parameters.
 */
export class TrainerHandle {
  readonly #metrics: EpochMetrics[] = [];
  readonly #evals: [number, number][] = [];
  #pollCursor = 0;
  #evalCursor = 0;
  #waiters: (() => void)[] = [];
  #done = false;
  readonly #result: Promise<TrainedRun>;
  readonly #stop: () => void;
  #requestCheckpoint: (() => void) | undefined;

  /** @internal */
  constructor(
    /** Ranks of the run (1 on a single device). */
    readonly worldSize: number,
    /** The device of each rank. */
    readonly devices: readonly Device[],
    start: (handle: TrainerHandle) => Promise<TrainedRun>,
    stop: () => void,
    /**
     * True in a rank process of a cluster run: the script goes on past `run()` there too (as
     * in PyTorch's processes), but the run's view (metrics, evals, `join`) is the launching
     * process's; print from `!handle.isRank`.
     */
    readonly isRank = false,
  ) {
    this.#stop = stop;
    this.#result = start(this).finally(() => {
      this.#done = true;
      this.#wake();
    });
    // join() reports the failure; an unobserved handle must not crash the process twice.
    this.#result.catch(() => undefined);
  }

  /** The trained state once the run ends (CPU tensors, parameter order), with the lost ranks. */
  join(): Promise<TrainedRun> {
    return this.#result;
  }

  /** Every epoch's metrics, oldest first, until the run ends. */
  async *metrics(): AsyncGenerator<EpochMetrics, void, undefined> {
    let cursor = 0;
    for (;;) {
      while (cursor < this.#metrics.length) yield this.#metrics[cursor++] as EpochMetrics;
      if (this.#done) return;
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** The epochs that arrived since the last `pollMetrics` / `nextMetrics`, oldest first. */
  pollMetrics(): EpochMetrics[] {
    const taken = this.#metrics.slice(this.#pollCursor);
    this.#pollCursor = this.#metrics.length;
    return taken;
  }

  /** The next epoch's metrics, or `undefined` once the run ended without more. */
  async nextMetrics(): Promise<EpochMetrics | undefined> {
    for (;;) {
      if (this.#pollCursor < this.#metrics.length) return this.#metrics[this.#pollCursor++];
      if (this.#done) return undefined;
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** The eval results (`[epoch, metric]`, epoch 1-based) that arrived since the last call. */
  pollEval(): [number, number][] {
    const taken = this.#evals.slice(this.#evalCursor);
    this.#evalCursor = this.#evals.length;
    return taken;
  }

  /** True once the run ended. */
  get finished(): boolean {
    return this.#done;
  }

  /** Stops the run gracefully after the step in flight; `join()` then resolves with the state so far. */
  stop(): void {
    this.#stop();
  }

  /**
   * Writes a checkpoint bundle under `savePath` after the step in flight
   * (`<savePath>.step-<N>`, counted in `keepLast`).
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT when the run has no savePath, runs on a cluster
   *   (there, `checkpointEvery` / `checkpointAtEpoch` and the Worker's `requestCheckpoint` ask),
   *   or has finished (its final bundle is at `savePath`)
   */
  requestCheckpoint(): void {
    if (this.#done) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'requestCheckpoint after the run finished', {
        op: 'TrainerHandle.requestCheckpoint',
        expected: 'a request while the run trains (its final bundle is written at savePath)',
        got: 'a finished run',
      });
    }
    if (!this.#requestCheckpoint) {
      throw new FlodlError(
        'ERR_INVALID_ARGUMENT',
        'requestCheckpoint needs a single-device run with a savePath',
        {
          op: 'TrainerHandle.requestCheckpoint',
          expected: ".savePath('runs/model') on a one-device run",
          got: this.worldSize > 1 ? `a cluster run of ${this.worldSize} ranks` : 'no savePath',
        },
      );
    }
    this.#requestCheckpoint();
  }

  /** @internal What `requestCheckpoint` does. */
  setCheckpointRequest(request: () => void): void {
    this.#requestCheckpoint = request;
  }

  /** @internal */
  pushMetrics(metrics: EpochMetrics): void {
    this.#metrics.push(metrics);
    this.#wake();
  }

  /** @internal */
  pushEval(epoch: number, metric: number): void {
    this.#evals.push([epoch, metric]);
  }

  #wake(): void {
    const waiters = this.#waiters.splice(0);
    for (const wake of waiters) wake();
  }
}
