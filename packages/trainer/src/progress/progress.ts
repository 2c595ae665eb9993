import { isMainThread } from 'node:worker_threads';
import { checkOptions, invalidArgument } from '@flodl/tensor-native';
import cliProgress from 'cli-progress';
import {
  type EvalView,
  formatClusterLine,
  formatEpochLine,
  formatEvalLine,
  formatStepLine,
  type RankView,
} from './format.js';
import { type ProgressEpoch, type ProgressRunInfo, type ProgressStep, ProgressTracker } from './tracker.js';

/** Where the display writes: a Node stream (a terminal when `isTTY`). */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** Options of {@link createProgress}. */
export interface ProgressOptions {
  /** Where to write. Default `process.stdout` (only when it is the user's: see {@link createProgress}). */
  stream?: ProgressStream;
  /** Draw in place (a terminal) or print plain lines. Default: the stream's `isTTY`. */
  tty?: boolean;
  /** Plain mode: at most one step line per this many ms. Default 5000. */
  intervalMs?: number;
  /** Terminal mode: redraws per second at most. Default 10. */
  fps?: number;
  /** Weight of the history in the loss's moving average, in [0, 1). Default 0.9. */
  smoothing?: number;
  /** Clock, ms. Default `performance.now`. */
  clock?: () => number;
}

/** `progress` as a trainer takes it: `false` off, `true` (default) on, or options. */
export type ProgressSetting = boolean | ProgressOptions;

/** The display a trainer drives; every method is a no-op when it is off. */
export interface Progress {
  /** True when it writes anything. */
  readonly enabled: boolean;
  /** The run starts (prints the label, if any). */
  start(info?: ProgressRunInfo): void;
  /** A step (or chunk) finished. */
  step(update: ProgressStep): void;
  /** An epoch finished: one line that stays. */
  epochEnd(summary: ProgressEpoch): void;
  /** An eval result arrived: one line that stays; the step line shows it until the next. */
  eval(result: EvalView): void;
  /** A cluster's per-rank share and speed (the line under the step line). */
  cluster(ranks: readonly RankView[]): void;
  /** Prints a line without breaking the drawing. */
  log(line: string): void;
  /** The run ended: the last drawing stays, a closing line when given. */
  finish(message?: string): void;
}

const OPTIONS = ['stream', 'tty', 'intervalMs', 'fps', 'smoothing', 'clock'] as const;

/**
 * True when this process's stdout is the user's to draw on: the main thread (a worker thread's
 * stdout goes through its parent), not a launched rank other than rank 0 (rank 0 speaks for the
 * cohort; the launcher prefixes its lines), and `FLODL_PROGRESS` is not `0`.
 */
export function stdoutIsUsers(env: NodeJS.ProcessEnv = process.env, mainThread = isMainThread): boolean {
  if (!mainThread || env.FLODL_PROGRESS === '0') return false;
  return env.FLODL_RANK === undefined || env.FLODL_RANK === '0';
}

/** Nothing at all. */
const OFF: Progress = {
  enabled: false,
  start() {},
  step() {},
  epochEnd() {},
  eval() {},
  cluster() {},
  log() {},
  finish() {},
};

/** The shared part: the tracker's arithmetic, and the lines that stay (epochs, evals). */
abstract class Display implements Progress {
  readonly enabled = true;
  protected readonly tracker: ProgressTracker;

  constructor(
    protected readonly stream: ProgressStream,
    protected readonly clock: () => number,
    smoothing: number,
  ) {
    this.tracker = new ProgressTracker(clock, smoothing);
  }

  start(info: ProgressRunInfo = {}): void {
    this.tracker.start(info);
    if (info.label) this.log(info.label);
  }

  epochEnd(summary: ProgressEpoch): void {
    this.log(formatEpochLine(this.tracker.epochEnd(summary)));
  }

  eval(result: EvalView): void {
    this.log(formatEvalLine(this.tracker.eval(result)));
  }

  abstract step(update: ProgressStep): void;
  abstract cluster(ranks: readonly RankView[]): void;
  abstract log(line: string): void;
  abstract finish(message?: string): void;
}

/** Not a terminal (CI, a log file): a step line at most every `intervalMs`, the others as they come. */
class PlainDisplay extends Display {
  #lastLine = Number.NEGATIVE_INFINITY;
  #ranks: readonly RankView[] | undefined;

  constructor(
    stream: ProgressStream,
    clock: () => number,
    smoothing: number,
    private readonly intervalMs: number,
  ) {
    super(stream, clock, smoothing);
  }

  step(update: ProgressStep): void {
    const view = this.tracker.step(update);
    const now = this.clock();
    if (now - this.#lastLine < this.intervalMs) return;
    this.#lastLine = now;
    this.log(formatStepLine(view));
    if (this.#ranks) this.log(formatClusterLine(this.#ranks));
  }

  cluster(ranks: readonly RankView[]): void {
    this.#ranks = ranks;
  }

  log(line: string): void {
    this.stream.write(`${line}\n`);
  }

  finish(message?: string): void {
    if (message) this.log(message);
  }
}

/** cli-progress's MultiBar, its redraw timer unref'd (a display never keeps the process alive). */
class QuietMultiBar extends cliProgress.MultiBar {
  override update(): void {
    super.update();
    (this as unknown as { timer: ReturnType<typeof setTimeout> | null }).timer?.unref?.();
  }
}

type LinePayload = { line: (bar: string) => string };

/** A terminal: the step line (with a bar) and the cluster line redrawn in place by cli-progress. */
class TerminalDisplay extends Display {
  readonly #bars: QuietMultiBar;
  #stepBar: cliProgress.SingleBar | undefined;
  #clusterBar: cliProgress.SingleBar | undefined;

  constructor(stream: ProgressStream, clock: () => number, smoothing: number, fps: number) {
    super(stream, clock, smoothing);
    this.#bars = new QuietMultiBar({
      stream: stream as NodeJS.WritableStream,
      fps,
      barsize: 20,
      barCompleteChar: '█',
      barIncompleteChar: '░',
      hideCursor: false,
      clearOnComplete: false,
      // Lines logged above the bars overwrite them: every redraw draws them again.
      forceRedraw: true,
      format: (options, params, payload: LinePayload) =>
        payload.line(cliProgress.Format.BarFormat(params.progress, options)),
    });
  }

  step(update: ProgressStep): void {
    const view = this.tracker.step(update);
    const payload: LinePayload = { line: (bar) => formatStepLine(view, bar) };
    if (!this.#stepBar) this.#stepBar = this.#bars.create(view.batches, view.batch, payload);
    else {
      this.#stepBar.setTotal(view.batches);
      this.#stepBar.update(view.batch, payload);
    }
  }

  cluster(ranks: readonly RankView[]): void {
    const payload: LinePayload = { line: () => formatClusterLine(ranks) };
    if (!this.#clusterBar) this.#clusterBar = this.#bars.create(1, 0, payload);
    else this.#clusterBar.update(0, payload);
  }

  log(line: string): void {
    if (this.#stepBar || this.#clusterBar) this.#bars.log(`${line}\n`);
    else this.stream.write(`${line}\n`);
  }

  finish(message?: string): void {
    if (this.#stepBar || this.#clusterBar) {
      this.#bars.update(); // flushes lines logged since the last redraw
      this.#bars.stop();
    }
    if (message) this.stream.write(`${message}\n`);
    this.#stepBar = undefined;
    this.#clusterBar = undefined;
  }
}

/**
 * The progress display of a training run: epoch, batch within it, samples/s, the smoothed
 * loss, the ETA of the epoch and of the run, eval results as they arrive and, on a cluster, a
 * line of per-rank share and speed. On a terminal it redraws in place (cli-progress); otherwise
 * (CI, a log file) it prints a plain step line at most every `intervalMs`, and every epoch and
 * eval line.
 *
 * `false` turns it off. With no `stream` it writes to `process.stdout`, and only when that is
 * the user's ({@link stdoutIsUsers}): never from a worker thread or a launched rank other than 0.
 *
 * @throws `ERR_INVALID_ARGUMENT` for an unknown option or a bad value.
 * @example
 * ```ts
 * const progress = createProgress();
 * progress.start({ epochs: 3 });
 * progress.step({ epoch: 0, batch: 1, batches: 469, samplesPerSec: 4500, loss: 2.3 });
 * progress.epochEnd({ epoch: 0, loss: 0.52 });
 * progress.finish('done');
 * ```
 */
export function createProgress(setting: ProgressSetting = true): Progress {
  if (setting === false) return OFF;
  const options = checkOptions('createProgress', setting === true ? {} : setting, OPTIONS);
  const { intervalMs = 5000, fps = 10, smoothing = 0.9, clock = () => performance.now() } = options;
  if (typeof intervalMs !== 'number' || !(intervalMs >= 0))
    throw invalidArgument('createProgress', 'intervalMs', 'a number of ms >= 0', intervalMs);
  if (typeof fps !== 'number' || !(fps > 0))
    throw invalidArgument('createProgress', 'fps', 'a number > 0', fps);
  if (typeof smoothing !== 'number' || !(smoothing >= 0 && smoothing < 1))
    throw invalidArgument('createProgress', 'smoothing', 'a number in [0, 1)', smoothing);
  if (options.stream === undefined && !stdoutIsUsers()) return OFF;
  const stream = options.stream ?? process.stdout;
  if (typeof stream?.write !== 'function')
    throw invalidArgument('createProgress', 'stream', 'a writable stream', stream);
  const tty = options.tty ?? stream.isTTY === true;
  return tty
    ? new TerminalDisplay(stream, clock, smoothing, fps)
    : new PlainDisplay(stream, clock, smoothing, intervalMs);
}
