import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlodlError } from '@flodl/tensor-native';
import { failureLimit } from '../coordinator/membership.js';
import { CoordinatorHost } from '../host/coordinator-host.js';
import { RunSettingsGate } from '../host/run-settings.js';
import { ControlServer, createRunSecret, resolveRunSecret, SECRET_ENV } from '../wire/index.js';
import { livenessTimeouts } from '../wire/liveness.js';
import { type DeathRecord, readDeathRecord } from './death-record.js';
import { type LaunchOptions, type ResolvedLaunchOptions, resolveLaunchOptions } from './options.js';
import { rankEnvironment } from './rank-environment.js';
import { RankFailedError } from './rank-failed.js';
import { Reaper } from './reaper.js';
import { type RankExit, RankExitFeed, type RankProcessInfo } from './run.js';
import { scriptCommand } from './script-command.js';
import { spawnRank } from './spawn-rank.js';

export type { RankExit } from './run.js';

/** What `launch` resolves with when no rank failed (or, elastic, when the run survived its failures). */
export interface LaunchResult {
  worldSize: number;
  /** The local ranks, ascending. */
  ranks: RankExit[];
  /** Elastic runs: the ranks lost on the way, their death records earliest first. Otherwise empty. */
  lost: DeathRecord[];
  /** The folder of the lost ranks' death records, kept when `lost` is not empty. */
  recordDir?: string;
  /** True when `signal` aborted the run (the ranks were stopped, none failed). */
  interrupted: boolean;
  durationMs: number;
}

interface RankProcess {
  rank: number;
  localRank: number;
  child: ChildProcess;
  exit: RankExit | undefined;
  /** Set once the launcher signalled it: its non-zero exit is then a stop, not a failure. */
  signalled: boolean;
  /** Set when the run ended this rank alone (`stopRank`, a death the coordinator declared): it is lost. */
  lost: string | undefined;
  /** SIGKILL after the grace of a `stopRank`. */
  killTimer: NodeJS.Timeout | undefined;
}

/**
 * Starts `nproc` rank processes on this host and supervises them, like `torchrun`: node 0
 * also hosts the coordinator's `ControlServer` (never touching CUDA). Each rank learns its
 * role from `FLODL_RANK`, `FLODL_LOCAL_RANK`, `FLODL_WORLD_SIZE`, `FLODL_COORDINATOR`,
 * `FLODL_SECRET`, `FLODL_MODE`, `FLODL_DEVICE` (+ `FLODL_DEVICE_INDEX` on cuda) and
 * `FLODL_RECORD_DIR`. When a rank exits non-zero the others get SIGTERM, then SIGKILL
 * after `killGraceMs`, and `launch` rejects with one `RankFailedError` naming the earliest
 * failure as the root cause. With `elastic: true` the others keep running instead: every
 * process end is reported to `onServer`'s `run` (the coordinator host declares the rank dead
 * and the survivors continue), and `launch` resolves with the failed ranks in `lost` unless
 * no rank finished or `maxFailure` was reached.
 *
 * Liveness (`livenessMs`, default 30 000): a rank silent that long is declared dead and
 * ended (SIGTERM, SIGKILL after `killGraceMs`) and reported as lost, so a hung rank never
 * holds the run; `onServer`'s `run` lists the rank pids and can stop one rank (`stopRank`).
 *
 * Every rank starts with an orphan guard preloaded (`FLODL_LAUNCHER_PID`): if the launcher
 * dies without stopping it, even by SIGKILL, the rank gets SIGTERM within a fraction of a
 * second and SIGKILL after `killGraceMs`. A small reaper process, outside the ranks, does the
 * same for a rank that cannot run its guard (stopped, frozen). With `prefixOutput` each output line of a rank
 * reads `[rank N] ...`.
 *
 * Multi-host: run one launcher per host with the same `nnodes`, `coordinator` and
 * `FLODL_SECRET` (node 0 creates one when unset; export it to the others).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for bad options (before anything starts)
 * @throws FlodlError ERR_IO when the coordinator port cannot be bound or a rank cannot start
 * @throws RankFailedError ERR_RANK_FAILED when any rank failed (elastic: when every local rank
 *   failed, or the failures reached `maxFailure`)
 * @throws FlodlError ERR_TIMEOUT when the run outlived `timeoutMs`
 * @example
 * ```ts
 * const result = await launch({ nproc: 2, script: 'train.ts', device: 'cuda' });
 * ```
 * PyTorch: `torchrun --nproc-per-node 2 train.py`.
 */
export async function launch(options: LaunchOptions): Promise<LaunchResult> {
  const resolved = resolveLaunchOptions(options);
  const command = scriptCommand(resolved.script, resolved.nodeArgs);
  const secret = runSecret(resolved);
  const started = Date.now();
  let server: ControlServer | undefined;
  const run = new RankExitFeed(
    resolved.worldSize,
    resolved.elastic,
    resolved.maxFailure,
    resolved.livenessMs,
  );
  if (resolved.nodeRank === 0) {
    const gate = new RunSettingsGate();
    const liveness = livenessTimeouts(resolved.livenessMs);
    server = await ControlServer.listen({
      secret,
      worldSize: resolved.worldSize,
      host: resolved.coordinatorHost,
      port: resolved.coordinatorPort,
      admit: (hello) => gate.admit(hello),
      heartbeatIntervalMs: liveness.heartbeatIntervalMs,
      idleTimeoutMs: liveness.heartbeatTimeoutMs,
      ...resolved.server,
    });
    // A rank the server dropped for silence is hung (heartbeats come from a worker thread):
    // end it rather than wait on it. A coordinator host does the same for the deaths it declares.
    server.on('rankDisconnected', (rank, error) => {
      if (error?.code === 'ERR_TIMEOUT')
        run.stopRank(rank, { reason: `silent for ${liveness.heartbeatTimeoutMs} ms` });
    });
    try {
      // Without a hook of the caller's, ranks that announce their run settings (the
      // Trainer's) get a coordinator formed from them.
      if (options.onServer) await options.onServer(server, run);
      else {
        CoordinatorHost.attachFromRanks(server, {
          run,
          onError: (error) => process.stderr.write(`flodl launch: coordinator: ${describeError(error)}\n`),
        });
      }
    } catch (error) {
      await server.close({ timeoutMs: 1000 });
      throw error;
    }
  }
  const ownRecordDir = resolved.recordDir === undefined;
  const recordDir = resolved.recordDir ?? mkdtempSync(join(tmpdir(), 'flodl-run-'));
  const port = server?.port ?? resolved.coordinatorPort;
  let keepRecords = false;
  try {
    const outcome = await supervise(resolved, command, secret, port, recordDir, options.signal, run);
    if (outcome.failures.length > 0 && !survivedFailures(resolved, outcome)) {
      // The death records are the post-mortem the error points to: they stay.
      keepRecords = true;
      throw new RankFailedError(
        outcome.failures,
        outcome.ranks.filter((rank) => rank.outcome === 'stopped').map((rank) => rank.rank),
        resolved.worldSize,
        recordDir,
      );
    }
    if (outcome.timedOut) {
      throw new FlodlError(
        'ERR_TIMEOUT',
        `the run outlived timeoutMs ${resolved.timeoutMs}; every rank was stopped`,
        {
          op: 'launch',
          expected: 'ranks that finish in time (raise timeoutMs / --timeout-ms)',
          got: `still running after ${resolved.timeoutMs} ms`,
        },
      );
    }
    const lost = [...outcome.failures].sort(
      (left, right) => left.time - right.time || left.rank - right.rank,
    );
    // The lost ranks' records are the post-mortem of a run that went on without them: keep them.
    keepRecords = lost.length > 0;
    return {
      worldSize: resolved.worldSize,
      ranks: outcome.ranks,
      lost,
      ...(lost.length > 0 ? { recordDir } : {}),
      interrupted: outcome.interrupted,
      durationMs: Date.now() - started,
    };
  } finally {
    // A run that ends without records anyone is told of (a success, a timeout, an error of the
    // launcher's own) leaves no directory behind.
    if (ownRecordDir && !keepRecords) rmSync(recordDir, { recursive: true, force: true });
    await server?.close({ timeoutMs: 1000 });
  }
}

function processInfo(entry: RankProcess): RankProcessInfo {
  return {
    rank: entry.rank,
    localRank: entry.localRank,
    pid: entry.child.pid ?? -1,
    running: entry.exit === undefined && entry.child.pid !== undefined,
  };
}

function describeError(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function runSecret(options: ResolvedLaunchOptions): Uint8Array {
  if (options.nnodes === 1) return createRunSecret();
  // Several hosts must share one secret: take it from the environment, or mint it on node 0.
  if (process.env[SECRET_ENV] || process.env.FLODL_SECRET_FILE) return resolveRunSecret();
  if (options.nodeRank === 0) {
    const secret = createRunSecret();
    process.stderr.write(
      `flodl launch: no ${SECRET_ENV} set; generated one for this run. Start the other hosts with\n  ${SECRET_ENV}=${Buffer.from(secret).toString('hex')}\n`,
    );
    return secret;
  }
  return resolveRunSecret();
}

/** Elastic runs survive their failures while some rank finished and `maxFailure` was not reached. */
function survivedFailures(options: ResolvedLaunchOptions, outcome: SupervisionOutcome): boolean {
  if (!options.elastic || !outcome.ranks.some((rank) => rank.outcome === 'ok')) return false;
  return (
    options.maxFailure === undefined ||
    outcome.failures.length < failureLimit(options.maxFailure, options.worldSize)
  );
}

interface SupervisionOutcome {
  ranks: RankExit[];
  failures: DeathRecord[];
  interrupted: boolean;
  timedOut: boolean;
}

function supervise(
  options: ResolvedLaunchOptions,
  command: string[],
  secret: Uint8Array,
  port: number,
  recordDir: string,
  signal: AbortSignal | undefined,
  run: RankExitFeed,
): Promise<SupervisionOutcome> {
  return new Promise((resolvePromise, rejectPromise) => {
    const processes: RankProcess[] = [];
    const failures: DeathRecord[] = [];
    const reaper = Reaper.start(options.killGraceMs);
    run.supervise({
      ranks: () => processes.map(processInfo),
      stopRank: (rank, reason) => {
        const entry = processes.find((candidate) => candidate.rank === rank);
        if (!entry || entry.exit !== undefined || entry.child.pid === undefined) return false;
        if (entry.lost !== undefined || entry.signalled) return true;
        entry.lost = reason;
        entry.child.kill('SIGTERM');
        // A stopped (SIGSTOP) process takes its SIGTERM once continued.
        entry.child.kill('SIGCONT');
        entry.killTimer = setTimeout(() => entry.child.kill('SIGKILL'), options.killGraceMs);
        return true;
      },
    });
    let stopping = false;
    let interrupted = false;
    let timedOut = false;
    let killTimer: NodeJS.Timeout | undefined;
    let runTimer: NodeJS.Timeout | undefined;
    /** A rank that could not start: the run fails with it once every other rank is gone. */
    let startError: FlodlError | undefined;

    const stop = (): void => {
      if (stopping) return;
      stopping = true;
      for (const entry of processes) {
        if (entry.exit === undefined) {
          entry.signalled = true;
          entry.child.kill('SIGTERM');
          // A stopped (SIGSTOP) process takes its SIGTERM once continued.
          entry.child.kill('SIGCONT');
        }
      }
      // A rank stuck in a native call may ignore SIGTERM: bound the wait.
      killTimer = setTimeout(() => {
        for (const entry of processes) if (entry.exit === undefined) entry.child.kill('SIGKILL');
      }, options.killGraceMs);
    };
    const onAbort = (): void => {
      interrupted = true;
      stop();
    };
    const finishIfDone = (): void => {
      if (processes.some((entry) => entry.exit === undefined)) return;
      reaper.close();
      clearTimeout(killTimer);
      clearTimeout(runTimer);
      signal?.removeEventListener('abort', onAbort);
      // Rejected only now: a rank still stopping could write its record into a folder already removed.
      if (startError) {
        rejectPromise(startError);
        return;
      }
      resolvePromise({
        ranks: processes.map((entry) => entry.exit as RankExit),
        failures,
        interrupted: interrupted && failures.length === 0,
        timedOut,
      });
    };
    const onExit = (entry: RankProcess, exitCode: number | null, exitSignal: NodeJS.Signals | null): void => {
      if (entry.exit !== undefined) return;
      clearTimeout(entry.killTimer);
      reaper.forget(entry.child.pid);
      const time = Date.now();
      const written = readDeathRecord(recordDir, entry.rank);
      const clean = exitCode === 0;
      // A rank that wrote a record failed on its own, even while being stopped; one the run
      // ended alone is lost.
      const failed = !clean && (written !== undefined || !entry.signalled || entry.lost !== undefined);
      entry.exit = {
        rank: entry.rank,
        localRank: entry.localRank,
        pid: entry.child.pid ?? -1,
        exitCode,
        signal: exitSignal,
        outcome: clean ? 'ok' : failed ? 'failed' : 'stopped',
      };
      const failure: DeathRecord | undefined = !failed
        ? undefined
        : written !== undefined
          ? { ...written, exitCode, signal: exitSignal }
          : {
              rank: entry.rank,
              localRank: entry.localRank,
              pid: entry.child.pid ?? -1,
              exitCode,
              signal: exitSignal,
              message:
                entry.lost !== undefined
                  ? `${entry.lost}; ended by the launcher (${exitSignal ?? `exit code ${exitCode}`})`
                  : exitSignal !== null
                    ? `killed by signal ${exitSignal}`
                    : `exited with code ${exitCode} without a death record (call installDeathRecord() in the rank script)`,
              stack: undefined,
              time,
              source: 'launcher',
            };
      if (failure) failures.push(failure);
      // The coordinator host hears of the end first: survivors must not wait on this rank.
      run.emit({ ...entry.exit, ...(failure ? { failure } : {}) });
      if (failure && !options.elastic) stop();
      finishIfDone();
    };

    if (signal?.aborted) {
      reaper.close();
      resolvePromise({ ranks: [], failures: [], interrupted: true, timedOut: false });
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    if (options.timeoutMs !== undefined) {
      runTimer = setTimeout(() => {
        timedOut = true;
        stop();
      }, options.timeoutMs);
    }
    for (let localRank = 0; localRank < options.nproc; localRank += 1) {
      const rank = options.nodeRank * options.nproc + localRank;
      const environment = {
        ...process.env,
        ...options.env,
        ...rankEnvironment(options, { rank, localRank }, secret, port, recordDir),
      };
      const { child, onExit: whenExited } = spawnRank({
        rank,
        args: [...command, ...options.args],
        environment,
        output: options.prefixOutput ? 'prefix' : options.stdio,
      });
      const entry: RankProcess = {
        rank,
        localRank,
        child,
        exit: undefined,
        signalled: false,
        lost: undefined,
        killTimer: undefined,
      };
      processes.push(entry);
      reaper.watch(child.pid);
      whenExited((code, exitSignal) => onExit(entry, code, exitSignal));
      child.once('error', (error) => {
        // spawn failed (no exit follows): stop the others and report it as this rank's failure
        if (entry.exit !== undefined) return;
        stop();
        if (child.pid === undefined) {
          startError ??= new FlodlError('ERR_IO', `cannot start rank ${rank}: ${error.message}`, {
            op: 'launch',
            cause: error,
          });
          entry.exit = { rank, localRank, pid: -1, exitCode: null, signal: null, outcome: 'failed' };
          finishIfDone();
        }
      });
    }
  });
}
