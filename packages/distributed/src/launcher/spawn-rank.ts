import { type ChildProcess, spawn } from 'node:child_process';
import { orphanGuardNodeArgs } from './orphan-guard.js';
import { type LineSink, prefixLines, rankPrefix } from './output.js';

/** What happens to a rank's stdout and stderr. */
export type RankOutput = 'inherit' | 'ignore' | 'prefix';

/** Options of {@link spawnRank}. */
export interface SpawnRankOptions {
  rank: number;
  /** Node arguments after the guard: node flags, the script, its arguments. */
  args: readonly string[];
  environment: NodeJS.ProcessEnv;
  output: RankOutput;
  /** Where prefixed output goes. Default `process.stdout` / `process.stderr`. */
  sinks?: { stdout: LineSink; stderr: LineSink };
}

/** A started rank process. */
export interface SpawnedRank {
  child: ChildProcess;
  /**
   * Calls `listener` once the process exited and, with prefixed output, its last lines were
   * passed on (waiting at most {@link OUTPUT_DRAIN_MS} for them, since a grandchild holding
   * the pipe would keep it open).
   */
  onExit(listener: (exitCode: number | null, signal: NodeJS.Signals | null) => void): void;
}

/** The longest an exited rank's output may trail its exit before the exit is reported, ms. */
export const OUTPUT_DRAIN_MS = 500;

/**
 * Starts one rank process: `node <orphan guard> ...args`. With `output: 'prefix'` its stdout
 * and stderr are read line by line and written to the launcher's own with `[rank N] ` before
 * each line; stdin is inherited unless `output` is `'ignore'`.
 */
export function spawnRank(options: SpawnRankOptions): SpawnedRank {
  const stdio = options.output === 'prefix' ? (['inherit', 'pipe', 'pipe'] as const) : options.output;
  const child = spawn(process.execPath, [...orphanGuardNodeArgs(), ...options.args], {
    env: options.environment,
    stdio: [...(typeof stdio === 'string' ? [stdio, stdio, stdio] : stdio)],
  });
  const drained: Promise<void>[] = [];
  if (options.output === 'prefix' && child.stdout && child.stderr) {
    const prefix = rankPrefix(options.rank);
    drained.push(
      prefixLines(child.stdout, options.sinks?.stdout ?? process.stdout, prefix),
      prefixLines(child.stderr, options.sinks?.stderr ?? process.stderr, prefix),
    );
  }
  return {
    child,
    onExit(listener) {
      child.once('exit', (exitCode, signal) => {
        if (drained.length === 0) {
          listener(exitCode, signal);
          return;
        }
        let timer: NodeJS.Timeout | undefined;
        const bound = new Promise<void>((resolve) => {
          timer = setTimeout(resolve, OUTPUT_DRAIN_MS);
        });
        void Promise.race([Promise.all(drained), bound]).then(() => {
          clearTimeout(timer);
          listener(exitCode, signal);
        });
      });
    },
  };
}
