import { checkOptions, invalidArgument } from '@flodl/tensor-native';
import { MetricsLog, type RunInfo } from './metrics-log.js';
import { RunState } from './run-state.js';
import type { MonitorRecord, MonitorRecordInput } from './schema.js';

/** Options of {@link RunRecorder}. */
export interface RunRecorderOptions {
  /** What ran (the log's first line). */
  run?: RunInfo;
  /** Also write every record to this metrics log (a path is opened with `metricsLog`). */
  log?: string | MetricsLog;
  /** Keep one step record in `stepEvery` per rank (the first step always). Default 10. */
  stepEvery?: number;
  /** Bound of each list the state keeps (see {@link RunState}). Default 4000. */
  limit?: number;
  /** Wall clock, ms since the Unix epoch. Default `Date.now`. */
  clock?: () => number;
}

/** Something that hears every record a recorder keeps (the dashboard). */
export type RecordListener = (record: MonitorRecord) => void;

const OPTIONS = ['run', 'log', 'stepEvery', 'limit', 'clock'] as const;

/**
 * The launcher side of watching a run: takes records (from {@link observe}, or from a trainer
 * directly), samples steps, folds everything into a {@link RunState}, writes the metrics log
 * when one is given, and tells its listeners (a dashboard) of each kept record.
 *
 * @example
 * ```ts
 * const recorder = new RunRecorder({ run: { name: 'mnist', epochs: 3 }, log: 'run.jsonl' });
 * recorder.record({ kind: 'step', rank: 0, step: 1, loss: 2.3, stepMs: 12 });
 * recorder.close();
 * ```
 */
export class RunRecorder {
  readonly state: RunState;
  readonly log: MetricsLog | undefined;
  readonly #stepEvery: number;
  readonly #clock: () => number;
  readonly #listeners = new Set<RecordListener>();
  readonly #ownsLog: boolean;

  /** @throws `ERR_INVALID_ARGUMENT` for an unknown option or a bad `stepEvery`; `ERR_IO` when the log cannot be created. */
  constructor(options: RunRecorderOptions = {}) {
    checkOptions('RunRecorder', options, OPTIONS);
    const stepEvery = options.stepEvery ?? 10;
    if (!Number.isSafeInteger(stepEvery) || stepEvery < 1)
      throw invalidArgument('RunRecorder', 'stepEvery', 'a positive integer', stepEvery);
    this.#stepEvery = stepEvery;
    this.#clock = options.clock ?? Date.now;
    this.state = new RunState(options.limit === undefined ? {} : { limit: options.limit });
    this.#ownsLog = typeof options.log === 'string';
    this.log =
      typeof options.log === 'string'
        ? new MetricsLog(options.log, { ...(options.run ? { run: options.run } : {}), clock: this.#clock })
        : options.log;
    const header = this.log?.header ?? {
      kind: 'run' as const,
      t: this.#clock(),
      version: 1,
      ...options.run,
      worldSize: options.run?.worldSize ?? 1,
    };
    this.state.apply(header);
  }

  /**
   * Keeps one record: folds it into the state, writes it to the log, tells the listeners.
   * Steps are sampled (one in `stepEvery` per rank); returns the record kept, or `undefined`
   * for a step left out.
   */
  record(input: MonitorRecordInput): MonitorRecord | undefined {
    if (input.kind === 'step' && input.step !== 1 && input.step % this.#stepEvery !== 0) return undefined;
    const record = this.log
      ? this.log.write(input)
      : ({ ...input, t: input.t ?? this.#clock() } as MonitorRecord);
    this.state.apply(record);
    for (const listener of this.#listeners) {
      try {
        listener(record);
      } catch {
        // A listener's failure (a closed page) is its own.
      }
    }
    return record;
  }

  /** Hears every record kept from now on; returns the function that stops it. */
  subscribe(listener: RecordListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Closes the log it opened (a log passed in is the caller's to close). */
  close(): void {
    if (this.#ownsLog) this.log?.close();
  }
}
