import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { invalidArgument } from '@flodl/tensor-native';
import { fileError } from './io-error.js';
import {
  METRICS_LOG_VERSION,
  type MonitorRecord,
  type MonitorRecordInput,
  type RunStartRecord,
} from './schema.js';

/** What the first line of a log says about the run (the version and time are filled in). */
export type RunInfo = Omit<RunStartRecord, 'kind' | 't' | 'version' | 'worldSize'> & { worldSize?: number };

/** Options of {@link metricsLog}. */
export interface MetricsLogOptions {
  /** What ran: the first line's fields. `worldSize` defaults to 1. */
  run?: RunInfo;
  /** Wall clock of the `t` fields, ms since the Unix epoch. Default `Date.now`. */
  clock?: () => number;
}

/**
 * A metrics log being written: JSON Lines, one {@link MonitorRecord} a line, the first a `run`
 * record with the schema version. Each record is one `write(2)` of a whole line, so a run that
 * dies leaves at most a cut last line (which {@link readMetricsLog} tolerates). Non-finite
 * numbers (a diverged loss) are written as `null`.
 */
export class MetricsLog {
  readonly #fd: number;
  readonly #clock: () => number;
  #closed = false;
  /** The first line, as written. */
  readonly header: RunStartRecord;

  /** @internal use {@link metricsLog}. */
  constructor(
    readonly path: string,
    options: MetricsLogOptions = {},
  ) {
    this.#clock = options.clock ?? Date.now;
    try {
      // Its folder is made as a checkpoint's is (`savePath`).
      mkdirSync(dirname(path), { recursive: true });
      this.#fd = openSync(path, 'w');
    } catch (error) {
      throw fileError('metricsLog', path, 'cannot create the metrics log', 'a writable file path', error);
    }
    this.header = {
      kind: 'run',
      t: this.#clock(),
      version: METRICS_LOG_VERSION,
      ...options.run,
      worldSize: options.run?.worldSize ?? 1,
    };
    this.#line(this.header);
  }

  /** True once {@link close} ran. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Appends one record (`t` defaults to now); returns it as written. A closed log ignores it. */
  write(input: MonitorRecordInput): MonitorRecord {
    const record = { ...input, t: input.t ?? this.#clock() } as MonitorRecord;
    if (!this.#closed) this.#line(record);
    return record;
  }

  /** Closes the file; later writes are dropped. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    closeSync(this.#fd);
  }

  #line(record: MonitorRecord): void {
    writeSync(this.#fd, `${JSON.stringify(record)}\n`);
  }
}

/**
 * Starts a metrics log at `path` (created or truncated, its folder made when missing) and
 * writes its `run` line.
 *
 * @throws `ERR_INVALID_ARGUMENT` when `path` is not a non-empty string; `ERR_IO` when the file
 *   cannot be created.
 * @example
 * ```ts
 * const log = metricsLog('runs/mnist.jsonl', { run: { name: 'mnist', epochs: 5 } });
 * log.write({ kind: 'eval', epoch: 0, metric: 0.87 });
 * log.close();
 * ```
 */
export function metricsLog(path: string, options: MetricsLogOptions = {}): MetricsLog {
  if (typeof path !== 'string' || path.length === 0)
    throw invalidArgument('metricsLog', 'path', 'a file path', path);
  return new MetricsLog(path, options);
}
