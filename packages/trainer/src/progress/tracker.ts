import type { EpochView, EvalView, StepView } from './format.js';

/** What a run tells the display when it starts. */
export interface ProgressRunInfo {
  /** Planned epochs (the run's ETA needs it). */
  epochs?: number;
  /** A label printed when it starts, e.g. the model's name. */
  label?: string;
}

/** One training step (or chunk), as the trainer reports it. */
export interface ProgressStep {
  /** 0-based epoch. */
  epoch: number;
  /** Batches done in this epoch, this one included. */
  batch: number;
  /** Batches in this epoch. */
  batches: number;
  /** Training throughput now. */
  samplesPerSec: number;
  /** This step's loss (smoothed for display; a non-finite one is shown as is). */
  loss: number;
}

/** An epoch's end. */
export interface ProgressEpoch {
  epoch: number;
  /** Mean training loss. */
  loss: number;
  /** The epoch's wall time; default: measured from its first step. */
  durationMs?: number;
  samplesPerSec?: number;
  /** Further named values to show (e.g. `lr`). */
  metrics?: Record<string, number>;
}

/**
 * The arithmetic of the display: a bias-corrected exponential moving average of the loss and
 * the ETAs (this epoch from its pace so far; the run from the mean finished epoch, or this
 * epoch's projection before one finished). Time comes from `clock`, so tests need no waiting.
 */
export class ProgressTracker {
  #epochs: number | undefined;
  #average = 0;
  #count = 0;
  #epoch = -1;
  #epochStartedAt = 0;
  #finished: number[] = [];
  #lastEval: EvalView | undefined;

  constructor(
    private readonly clock: () => number,
    /** Weight of the history in the moving average, in [0, 1). */
    private readonly smoothing = 0.9,
  ) {}

  start(info: ProgressRunInfo): void {
    this.#epochs = info.epochs;
    this.#epoch = -1;
    this.#finished = [];
    this.#lastEval = undefined;
    this.#average = 0;
    this.#count = 0;
  }

  get epochs(): number | undefined {
    return this.#epochs;
  }

  step(update: ProgressStep): StepView {
    const now = this.clock();
    if (update.epoch !== this.#epoch) {
      this.#epoch = update.epoch;
      // The pace is measured from the epoch's first step: batch - 1 steps in `elapsed`.
      this.#epochStartedAt = now;
    }
    let loss: number | null;
    if (Number.isFinite(update.loss)) {
      this.#count += 1;
      this.#average = this.smoothing * this.#average + (1 - this.smoothing) * update.loss;
      loss = this.#average / (1 - this.smoothing ** this.#count);
    } else loss = update.loss;
    const elapsed = now - this.#epochStartedAt;
    const perBatch = update.batch > 1 ? elapsed / (update.batch - 1) : null;
    const epochEtaMs = perBatch === null ? null : perBatch * (update.batches - update.batch);
    let runEtaMs: number | null = null;
    if (this.#epochs !== undefined && epochEtaMs !== null) {
      const epochMs =
        this.#finished.length > 0
          ? this.#finished.reduce((sum, ms) => sum + ms, 0) / this.#finished.length
          : (perBatch ?? 0) * update.batches;
      runEtaMs = epochEtaMs + Math.max(0, this.#epochs - update.epoch - 1) * epochMs;
    }
    return {
      epoch: update.epoch,
      ...(this.#epochs === undefined ? {} : { epochs: this.#epochs }),
      batch: update.batch,
      batches: update.batches,
      samplesPerSec: update.samplesPerSec,
      loss,
      epochEtaMs,
      runEtaMs,
      ...(this.#lastEval ? { lastEval: this.#lastEval } : {}),
    };
  }

  epochEnd(summary: ProgressEpoch): EpochView {
    const durationMs =
      summary.durationMs ?? (this.#epoch === summary.epoch ? this.clock() - this.#epochStartedAt : 0);
    this.#finished.push(durationMs);
    return {
      epoch: summary.epoch,
      ...(this.#epochs === undefined ? {} : { epochs: this.#epochs }),
      loss: summary.loss,
      durationMs,
      ...(summary.samplesPerSec === undefined ? {} : { samplesPerSec: summary.samplesPerSec }),
      ...(summary.metrics ? { metrics: summary.metrics } : {}),
    };
  }

  eval(result: EvalView): EvalView {
    this.#lastEval = result;
    return result;
  }
}
