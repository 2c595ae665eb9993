// Ctrl-C (SIGINT) and SIGTERM during a run: the first one stops the run after the step in
// flight and lets it write its stop bundle, close its monitor and exit with the conventional
// code; a second one exits at once. Installed only while a run is active, in the process that
// owns the run's view (the single-device process, or a cluster's launcher); a cluster's ranks
// only keep Ctrl-C from killing them (the terminal signals the whole process group), and their
// launcher drives the orderly stop.

import { constants } from 'node:os';
import { isMainThread } from 'node:worker_threads';

/** The signals a run stops on. */
export type StopSignal = 'SIGINT' | 'SIGTERM';

const STOP_SIGNALS: readonly StopSignal[] = ['SIGINT', 'SIGTERM'];

/** The exit code of a process ended by `signal`, as a shell reports it: 128 + its number (130, 143). */
export function signalExitCode(signal: StopSignal): number {
  return 128 + constants.signals[signal];
}

/** What a run tells {@link RunSignals}. */
export interface RunSignalHooks {
  /** Stops the run gracefully (after the step in flight); it then saves and ends. */
  stop: () => void;
  /** Where the run stands, for the line: `after step 1234`. */
  where: () => string;
  /** The stem the stop bundle goes to, if the run has one. */
  savePath: string | undefined;
  /** Prints one line for the user (the progress display's stream, else stderr). */
  notice: (line: string) => void;
  /** Runs before a second signal exits the process (a launcher ends its ranks). */
  beforeExit?: () => void;
}

/**
 * The first SIGINT / SIGTERM of a run: the run stops after the step in flight, writes its stop
 * bundle (with a `savePath`), closes its monitor, and the process then exits with 130 / 143
 * (`exitIfStopped`); one line says so. A second one exits at once. When the script has a
 * listener of its own for the signal, the run still stops and saves, but the process is left
 * to the script (neither signal exits it). Listeners are added by `watch` and removed by
 * `release`; in a worker thread (no signals there) nothing is installed.
 *
 * @example
 * ```ts fragment
 * const signals = RunSignals.watch({ stop, where: () => `after step ${runtime.localStep}`, savePath, notice });
 * try {
 *   await train();
 * } finally {
 *   signals.release();
 * }
 * signals.exitIfStopped();
 * ```
 * Lightning: the SIGTERM handler of its SLURM environment (save, then stop the fit).
 */
export class RunSignals {
  readonly #hooks: RunSignalHooks;
  #received: StopSignal | undefined;
  /** The script listened to the first signal itself: the process is its to end. */
  #scriptListens = false;
  readonly #listeners = new Map<StopSignal, () => void>();

  private constructor(hooks: RunSignalHooks) {
    this.#hooks = hooks;
  }

  /** Starts watching SIGINT and SIGTERM for a run (`enabled` false: a no-op watcher). */
  static watch(hooks: RunSignalHooks, enabled = true): RunSignals {
    const signals = new RunSignals(hooks);
    if (enabled && isMainThread) {
      for (const signal of STOP_SIGNALS) {
        const listener = (): void => signals.#receive(signal);
        signals.#listeners.set(signal, listener);
        process.on(signal, listener);
      }
    }
    return signals;
  }

  /** The first signal received, if any. */
  get received(): StopSignal | undefined {
    return this.#received;
  }

  /** Removes the listeners (the signals' default action is back). Idempotent. */
  release(): void {
    for (const [signal, listener] of this.#listeners) process.off(signal, listener);
    this.#listeners.clear();
  }

  /** After the stopped run ended: exits with 130 / 143, unless no signal came or the script listens itself. */
  exitIfStopped(): void {
    const signal = this.#received;
    if (signal === undefined || this.#scriptListens) return;
    process.exit(signalExitCode(signal));
  }

  #receive(signal: StopSignal): void {
    const scriptListens = process
      .listeners(signal)
      .some((listener) => listener !== this.#listeners.get(signal));
    if (this.#received !== undefined) {
      if (this.#scriptListens || scriptListens) return;
      this.#hooks.notice(`flodl: ${signal} again: exiting now, without saving`);
      this.#hooks.beforeExit?.();
      process.exit(signalExitCode(signal));
    }
    this.#received = signal;
    this.#scriptListens = scriptListens;
    this.#hooks.notice(stopLine(signal, this.#hooks.where(), this.#hooks.savePath, scriptListens));
    this.#hooks.stop();
  }
}

/** `flodl: SIGINT: stopping after step N, saving a stop bundle at <path> (Ctrl-C again to exit at once)`. */
export function stopLine(
  signal: StopSignal,
  where: string,
  savePath: string | undefined,
  scriptListens: boolean,
): string {
  const saving =
    savePath === undefined ? 'with no savePath: nothing is saved' : `saving a stop bundle at ${savePath}`;
  const again = scriptListens
    ? `the script's own ${signal} listener keeps the process`
    : signal === 'SIGINT'
      ? 'Ctrl-C again to exit at once'
      : 'SIGTERM again to exit at once';
  return `flodl: ${signal}: stopping ${where}, ${saving} (${again})`;
}

/**
 * A cluster rank started by a flodl launcher: Ctrl-C in the terminal reaches every process of
 * the foreground group, so the rank ignores SIGINT while it trains and follows its launcher's
 * orderly stop instead. SIGTERM keeps its default (the launcher's and the orphan guard's way to
 * end a rank). Returns the function that removes the listener.
 */
export function ignoreInterruptsInRank(enabled = true): () => void {
  if (!enabled || !isMainThread) return () => undefined;
  const ignore = (): void => undefined;
  process.on('SIGINT', ignore);
  return () => {
    process.off('SIGINT', ignore);
  };
}
