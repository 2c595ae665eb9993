// The launching process of a multi-device run: it hosts the coordinator (formed from the
// settings the ranks announce) and starts one rank process per device running the same entry
// script; `join()` resolves with the run's final consensus parameters.

import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoordinatorHost,
  type CoordinatorNotice,
  type CoordinatorResume,
  freePortOn,
  isCollectiveMode,
  launch,
  PROCESS_GROUP_PORT_ENV,
  RankFailedError,
} from '@flodl/distributed';
import { readSafetensors } from '@flodl/nn';
import { FlodlError, fromBytes, type Tensor } from '@flodl/tensor-native';
import { writeCoordinatorState } from '../checkpoint/coordinator-state.js';
import { readCheckpoint } from '../checkpoint/read.js';
import { TRAINER_RUN_ENV } from '../runtime/cluster-bundle.js';
import type { AnyModule, TrainedState } from '../runtime/types.js';
import { warnCallback } from './build-rank.js';
import type { TrainedRun, TrainerHandle } from './handle.js';
import { trainedStatePath } from './rank-entry.js';
import { TRAINER_DEVICES_ENV } from './role.js';
import { openRunMonitor } from './run-monitor.js';
import { RunSignals } from './signals.js';
import type { RunSpec } from './spec.js';

/** @internal Launches one rank process per device and drives the run from this process. */
export async function runLauncher<M extends AnyModule>(
  spec: RunSpec<M>,
  handle: TrainerHandle,
  signal: AbortSignal,
  onStopper: (stop: () => void) => void = () => undefined,
): Promise<TrainedRun> {
  const options = spec.options;
  const script = process.argv[1];
  if (!script) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'a multi-device run needs an entry script', {
      op: 'Trainer.run',
      expected: 'node train.js (the ranks run the same script)',
      got: 'no process.argv[1] (a REPL or node -e)',
    });
  }
  const monitor = await openRunMonitor(options, {
    mode: options.mode,
    worldSize: options.devices.length,
  });
  let outcome: 'Completed' | 'Failed' = 'Failed';
  const recordDir = mkdtempSync(join(tmpdir(), 'flodl-trainer-'));
  let host: CoordinatorHost | undefined;
  const onNotice = (notice: CoordinatorNotice): void => {
    if (notice.type === 'EpochMetrics') {
      try {
        options.metricsFn?.(notice.metrics);
      } catch (error) {
        warnCallback('metricsFn', error);
      }
      handle.pushMetrics(notice.metrics);
    } else if (notice.type === 'EvalResult' && notice.error === undefined) {
      handle.pushEval(notice.epoch, notice.metric);
      try {
        options.evalResultFn?.(notice.epoch, notice.metric);
      } catch (error) {
        warnCallback('evalResultFn', error);
      }
    }
  };
  // A resumed run: the coordinator starts where the bundle's run was (the ranks restore
  // their own state from the same bundle).
  const resumed = options.resumeFrom === undefined ? undefined : resumeStateOf(options.resumeFrom);
  const resume = resumed?.resume;
  if (resumed) monitor.notice(resumed.line);
  // A second signal ends the ranks at once (SIGTERM, then SIGKILL) before this process exits.
  const abortRanks = new AbortController();
  // Ctrl-C reaches the ranks too (they ignore it): this process stops them together, and they save.
  const signals = RunSignals.watch(
    {
      stop: () => handle.stop(),
      where: () =>
        host === undefined
          ? 'the ranks (the coordinator has not formed yet)'
          : `the ranks after their next averaging round (step ${host.coordinator.globalStep})`,
      savePath: options.savePath,
      notice: (line) => monitor.notice(line),
      beforeExit: () => abortRanks.abort(),
    },
    options.handleSignals,
  );
  let stopping = false;
  let keepRecords = false;
  try {
    const allCuda = options.devices.every((device) => device.startsWith('cuda'));
    const result = await launch({
      nproc: options.devices.length,
      script,
      args: process.argv.slice(2),
      nodeArgs: nodeArgsWithoutLoader(process.execArgv),
      mode: options.mode,
      device: allCuda ? 'cuda' : 'cpu',
      env: {
        [TRAINER_DEVICES_ENV]: options.devices.join(','),
        [TRAINER_RUN_ENV]: randomBytes(8).toString('hex'),
        ...(isCollectiveMode(options.mode)
          ? { [PROCESS_GROUP_PORT_ENV]: String(await freePortOn('127.0.0.1')) }
          : {}),
      },
      recordDir,
      prefixOutput: true,
      signal: AbortSignal.any([signal, abortRanks.signal]),
      ...(options.elastic || options.maxFailure ? { elastic: true } : {}),
      ...(options.maxFailure ? { maxFailure: options.maxFailure } : {}),
      ...(options.livenessMs === undefined ? {} : { livenessMs: options.livenessMs }),
      onServer: (server, run) => {
        CoordinatorHost.attachFromRanks(server, {
          run,
          ...(resume === undefined ? {} : { resume }),
          onAttached: (attached) => {
            host = attached;
            monitor.attach(attached);
            if (options.savePath !== undefined) {
              // The meta a rank writes records the coordinator's state at the save: it is
              // written here before every command that makes the ranks save is relayed.
              attached.addObserver({
                command: ({ command }) => {
                  const saving =
                    command.type === 'Checkpoint' ||
                    command.type === 'ShutdownWithSave' ||
                    (stopping && command.type === 'SetGlobalStep');
                  if (saving) writeCoordinatorState(recordDir, attached, { stopping });
                },
              });
            }
            // A graceful stop: the ranks stop together after the next averaging round, save
            // (with a savePath) and report their state.
            onStopper(() => {
              stopping = true;
              if (options.savePath !== undefined) writeCoordinatorState(recordDir, attached, { stopping });
              attached.requestStop();
            });
          },
          onNotice,
          onError: (error) => warnCallback('coordinator', error),
        });
      },
    });
    host?.detach();
    const survivors = result.ranks.filter((rank) => rank.outcome === 'ok').map((rank) => rank.rank);
    const state = finalState(host, recordDir, survivors, isCollectiveMode(options.mode));
    outcome = 'Completed';
    return { ...state, lost: result.lost };
  } catch (error) {
    // The error names this folder's death records as the run's post-mortem: they stay.
    if (error instanceof RankFailedError && error.recordDir === recordDir) keepRecords = true;
    throw error;
  } finally {
    host?.detach();
    await monitor.close(outcome);
    if (!keepRecords) rmSync(recordDir, { recursive: true, force: true });
    signals.release();
    if (outcome === 'Completed') signals.exitIfStopped();
  }
}

/**
 * The coordinator's starting point in the bundle `resumeFrom` names, and the line that says it
 * (`batch`: the batches of the epoch in progress the cohort trained before the save).
 */
function resumeStateOf(stem: string): { resume: CoordinatorResume; line: string } {
  const { meta, stem: resolved } = readCheckpoint(stem);
  const covered = meta.coverage.covered.reduce((sum, [from, to]) => sum + (to - from), 0);
  const batch = Math.floor(covered / meta.batchSize);
  return {
    resume: {
      epoch: meta.epoch,
      covered: meta.coverage.covered,
      globalStep: meta.globalStep,
      averagingCount: meta.averagingCount,
      ...(meta.elche === null ? {} : { elche: meta.elche }),
      guardHistory: meta.guardHistory,
    },
    line: `flodl: resumed from ${resolved} at epoch ${meta.coverage.epoch}, batch ${batch}`,
  };
}

/**
 * The run's consensus: host modes, the coordinator host's last consensus when it came after
 * every step (the final reduce), else the lowest surviving rank's final state.
 */
function finalState(
  host: CoordinatorHost | undefined,
  recordDir: string,
  survivors: number[],
  collective: boolean,
): TrainedState {
  const rank = survivors.find((candidate) => existsSync(trainedStatePath(recordDir, candidate)));
  if (rank === undefined) {
    throw new FlodlError('ERR_RANK_FAILED', 'no rank finished with a trained state', {
      op: 'Trainer.join',
      expected: 'at least one rank that trained to the end',
      got: `survivors [${survivors.join(', ')}]`,
    });
  }
  const { tensors } = readSafetensors(trainedStatePath(recordDir, rank));
  const params = ordered(tensors, 'p:');
  const buffers = ordered(tensors, 'b:');
  // One survivor trained on alone after the last round: its own state is the result.
  const consensus = collective || survivors.length < 2 ? undefined : host?.lastConsensus;
  if (consensus && consensus.filter((tensor) => tensor.name.startsWith('p:')).length === params.length) {
    const fromHost = consensus.filter((tensor) => tensor.name.startsWith('p:'));
    for (const tensor of params) tensor.dispose();
    return {
      params: fromHost.map((tensor) => fromBytes(tensor.bytes, tensor.shape, tensor.dtype)),
      buffers,
    };
  }
  return { params, buffers };
}

function ordered(tensors: Record<string, Tensor>, prefix: string): Tensor[] {
  return Object.keys(tensors)
    .filter((name) => name.startsWith(prefix))
    .sort((left, right) => Number(left.slice(prefix.length)) - Number(right.slice(prefix.length)))
    .map((name) => tensors[name] as Tensor);
}

/** The launcher adds tsx itself for `.ts` entry scripts: drop the caller's loader flags. */
function nodeArgsWithoutLoader(execArgv: readonly string[]): string[] {
  const kept: string[] = [];
  for (let index = 0; index < execArgv.length; index++) {
    const flag = execArgv[index] as string;
    if (['--import', '--loader', '--experimental-loader', '--require', '-r'].includes(flag)) {
      const value = execArgv[index + 1] ?? '';
      if (value.includes('tsx')) {
        index += 1;
        continue;
      }
    }
    if (/^--(import|loader|experimental-loader|require)=.*tsx/.test(flag)) continue;
    kept.push(flag);
  }
  return kept;
}
