// A rank started by an external launcher (torchrun-style variables, SLURM): every process is
// a rank. Rank 0 also starts the coordinator on MASTER_ADDR:MASTER_PORT, in a process of its
// own (the same entry script, in the coordinator role), so no blocking call of the rank (a
// collective, a rendezvous) can stall it; the process group of the collective modes
// rendezvouses on the next port.
import { type ChildProcess, spawn } from 'node:child_process';
import {
  CoordinatorHost,
  type CoordinatorNotice,
  PROCESS_GROUP_PORT_ENV,
  RunSettingsGate,
} from '@flodl/distributed';
import { ControlServer, secretFromHex } from '@flodl/distributed/wire';
import { FlodlError } from '@flodl/tensor-native';
import { createProgress } from '../progress/progress.js';
import type { AnyModule } from '../runtime/types.js';
import type { TrainedRun, TrainerHandle } from './handle.js';
import { runClusterRank } from './rank-entry.js';
import { COORDINATOR_ROLE_ENV, externalRunSecret, type RankRole } from './role.js';
import { cohortProgress } from './run-monitor.js';
import type { RunSpec } from './spec.js';

/** What the coordinator process tells rank 0 over IPC. */
type CoordinatorReport =
  | { type: 'listening' }
  | { type: 'notice'; notice: CoordinatorNotice }
  | { type: 'failed'; message: string };

/**
 * Prepares this externally launched rank: the flodl rank variables from the torchrun-style /
 * SLURM ones and, on rank 0, the coordinator process (its notices go to `onNotice`). `stop`
 * waits for the coordinator to see the run out.
 */
export async function prepareExternalRank(
  role: RankRole,
  mode: string,
  onNotice: (notice: CoordinatorNotice) => void = () => undefined,
): Promise<{ stop(): Promise<void> }> {
  const coordinator = role.coordinator as { host: string; port: number };
  const secret = externalRunSecret(role);
  Object.assign(process.env, {
    FLODL_RANK: String(role.rank),
    FLODL_LOCAL_RANK: String(role.localRank),
    FLODL_WORLD_SIZE: String(role.worldSize),
    FLODL_COORDINATOR: `${coordinator.host}:${coordinator.port}`,
    FLODL_SECRET: secret,
    FLODL_MODE: mode,
    [PROCESS_GROUP_PORT_ENV]: process.env[PROCESS_GROUP_PORT_ENV] ?? String(coordinator.port + 1),
  });
  const child = role.rank === 0 ? await startCoordinator(onNotice) : undefined;
  return { stop: async () => (child ? stopCoordinator(child) : undefined) };
}

/** @internal Runs this externally launched rank (and, on rank 0, starts the coordinator). */
export async function runExternalRank<M extends AnyModule>(
  spec: RunSpec<M>,
  role: RankRole,
  handle: TrainerHandle,
): Promise<TrainedRun> {
  const { options } = spec;
  // Rank 0 speaks for the cohort (no launcher process of ours draws it): epochs, shares, evals.
  const progress = createProgress(role.rank === 0 ? (options.progress ?? true) : false);
  const cohort = cohortProgress(
    progress,
    Math.floor(options.dataset.length / options.batchSize),
    options.batchSize,
  );
  const prepared = await prepareExternalRank(role, options.mode, (notice) => {
    if (notice.type === 'EpochMetrics') handle.pushMetrics(notice.metrics);
    else if (notice.type === 'EvalResult' && notice.error === undefined)
      handle.pushEval(notice.epoch, notice.metric);
    cohort.notice(notice);
  });
  progress.start({ epochs: options.numEpochs });
  let outcome = 'training failed';
  try {
    const run = await runClusterRank(spec, role);
    outcome = 'training done';
    return run;
  } finally {
    await prepared.stop();
    progress.finish(outcome);
  }
}

/** Starts the coordinator process and resolves once it listens. */
function startCoordinator(onNotice: (notice: CoordinatorNotice) => void): Promise<ChildProcess> {
  const script = process.argv[1] as string;
  const child = spawn(process.execPath, [...process.execArgv, script, ...process.argv.slice(2)], {
    env: { ...process.env, [COORDINATOR_ROLE_ENV]: '1' },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  return new Promise((resolve, reject) => {
    child.on('message', (report: CoordinatorReport) => {
      if (report.type === 'listening') resolve(child);
      else if (report.type === 'failed') {
        reject(
          new FlodlError('ERR_IO', `the coordinator could not start: ${report.message}`, {
            op: 'Trainer.run',
          }),
        );
      } else onNotice(report.notice);
    });
    child.once('exit', (code) =>
      reject(
        new FlodlError('ERR_IO', `the coordinator process exited (code ${code}) before listening`, {
          op: 'Trainer.run',
        }),
      ),
    );
  });
}

/** Waits (bounded) for the coordinator to see the run out, then stops it. */
async function stopCoordinator(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/**
 * @internal The coordinator process of an externally launched run: hosts the ControlServer and
 * the coordinator host, reports notices to rank 0, and exits once the run finished and every
 * rank hung up (or when rank 0 goes away).
 */
export async function runCoordinatorProcess(role: RankRole): Promise<never> {
  const coordinator = role.coordinator as { host: string; port: number };
  const report = (message: CoordinatorReport): void => {
    process.send?.(message);
  };
  process.on('disconnect', () => process.exit(0)); // rank 0 is gone: so is its run
  let host: CoordinatorHost | undefined;
  let server: ControlServer;
  try {
    const gate = new RunSettingsGate();
    server = await ControlServer.listen({
      secret: secretFromHex(externalRunSecret(role), 'FLODL_SECRET'),
      worldSize: role.worldSize,
      host: coordinator.host,
      port: coordinator.port,
      admit: (hello) => gate.admit(hello),
    });
  } catch (error) {
    report({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  }
  CoordinatorHost.attachFromRanks(server, {
    onAttached: (attached) => {
      host = attached;
    },
    onNotice: (notice) => report({ type: 'notice', notice }),
  });
  report({ type: 'listening' });
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (host?.finished && server.connectedRanks().length === 0) break;
  }
  host?.detach();
  await server.close({ timeoutMs: 1000 });
  process.exit(0);
}
