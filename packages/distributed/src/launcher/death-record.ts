import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Environment variable naming the per-run folder where dying ranks write their records. */
export const RECORD_DIR_ENV = 'FLODL_RECORD_DIR';

/**
 * Why one rank process died: written by the rank itself (`installDeathRecord()`) or, when
 * the rank wrote nothing (killed by a signal, `process.exit(1)`), synthesised by the
 * launcher from the exit code or signal.
 */
export interface DeathRecord {
  /** Global rank. */
  rank: number;
  /** Rank on its host. */
  localRank: number;
  pid: number;
  /** Exit code, or `null` when a signal ended the process. */
  exitCode: number | null;
  /** The signal that ended the process, or `null`. */
  signal: NodeJS.Signals | null;
  /** What went wrong, one line. */
  message: string;
  /** The error's stack, when the rank wrote the record. */
  stack: string | undefined;
  /** When the rank failed, ms since the epoch (the launcher's exit observation for synthesised records). */
  time: number;
  /** Who wrote it: the rank, or the launcher from the exit status. */
  source: 'rank' | 'launcher';
}

/** The file a rank's record goes to inside the record folder. */
export function deathRecordPath(directory: string, rank: number): string {
  return join(directory, `rank${rank}.death.json`);
}

/** Reads the record a rank wrote, or `undefined` when there is none (or it is unreadable). */
export function readDeathRecord(directory: string, rank: number): DeathRecord | undefined {
  try {
    const parsed = JSON.parse(readFileSync(deathRecordPath(directory, rank), 'utf8')) as Partial<DeathRecord>;
    if (typeof parsed.rank !== 'number' || typeof parsed.time !== 'number') return undefined;
    return {
      rank: parsed.rank,
      localRank: typeof parsed.localRank === 'number' ? parsed.localRank : -1,
      pid: typeof parsed.pid === 'number' ? parsed.pid : -1,
      exitCode: typeof parsed.exitCode === 'number' ? parsed.exitCode : null,
      signal: typeof parsed.signal === 'string' ? (parsed.signal as NodeJS.Signals) : null,
      message: typeof parsed.message === 'string' ? parsed.message : 'no message',
      stack: typeof parsed.stack === 'string' ? parsed.stack : undefined,
      time: parsed.time,
      source: 'rank',
    };
  } catch {
    return undefined;
  }
}

/** Options of `installDeathRecord`. */
export interface InstallDeathRecordOptions {
  /** Exit code after the record is written. Default 1. */
  exitCode?: number;
  /** Variables to read the role from. Default `process.env`. */
  environment?: NodeJS.ProcessEnv;
}

/**
 * Makes this rank process write a death record and exit non-zero on an uncaught exception
 * or an unhandled rejection, so the launcher can name the root cause of a failed run.
 * Call it first thing in a rank script. Outside a launched run (no `FLODL_RECORD_DIR`)
 * it still prints the error and exits non-zero. Idempotent.
 *
 * @returns A function that removes the hooks.
 * @example
 * ```ts
 * import { installDeathRecord } from '@flodl/distributed';
 * installDeathRecord();
 * ```
 */
export function installDeathRecord(options: InstallDeathRecordOptions = {}): () => void {
  const environment = options.environment ?? process.env;
  const exitCode = options.exitCode ?? 1;
  const onFatal = (error: unknown): void => {
    try {
      writeOwnRecord(environment, error, exitCode);
    } finally {
      // Print like Node would, then leave: the process state is unknown after this.
      process.stderr.write(`${formatError(error)}\n`);
      process.exit(exitCode);
    }
  };
  if (installed !== undefined) return installed;
  process.on('uncaughtException', onFatal);
  process.on('unhandledRejection', onFatal);
  const remove = (): void => {
    process.off('uncaughtException', onFatal);
    process.off('unhandledRejection', onFatal);
    installed = undefined;
  };
  installed = remove;
  return remove;
}

let installed: (() => void) | undefined;

/**
 * Writes this rank's death record for `error` into `FLODL_RECORD_DIR` (a no-op outside a
 * launched run), for a rank that catches its own failure and exits with `exitCode`.
 */
export function writeDeathRecord(
  error: unknown,
  exitCode = 1,
  environment: NodeJS.ProcessEnv = process.env,
): void {
  writeOwnRecord(environment, error, exitCode);
}

function writeOwnRecord(environment: NodeJS.ProcessEnv, error: unknown, exitCode: number): void {
  const directory = environment[RECORD_DIR_ENV];
  if (!directory) return;
  const rank = Number(environment.FLODL_RANK ?? -1);
  const record: DeathRecord = {
    rank,
    localRank: Number(environment.FLODL_LOCAL_RANK ?? -1),
    pid: process.pid,
    exitCode,
    signal: null,
    message: firstLine(error),
    stack: error instanceof Error ? error.stack : undefined,
    time: Date.now(),
    source: 'rank',
  };
  try {
    mkdirSync(directory, { recursive: true });
    writeFileSync(deathRecordPath(directory, rank), `${JSON.stringify(record, null, 2)}\n`);
  } catch {
    // The launcher synthesises a record from the exit code when this one is missing.
  }
}

function firstLine(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`.split('\n')[0] ?? error.name;
  return `non-error thrown: ${String(error)}`.split('\n')[0] ?? 'non-error thrown';
}

function formatError(error: unknown): string {
  return error instanceof Error ? (error.stack ?? `${error.name}: ${error.message}`) : String(error);
}
