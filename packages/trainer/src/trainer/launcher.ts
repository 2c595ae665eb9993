// The launching process of a multi-device run: it hosts the coordinator (formed from the
// settings the ranks announce) and starts one rank process per device running the same entry
// script; `join()` resolves with the run's final consensus parameters.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoordinatorHost,
  type CoordinatorNotice,
  freePortOn,
  isCollectiveMode,
  launch,
  PROCESS_GROUP_PORT_ENV,
} from '@flodl/distributed';
import { readSafetensors } from '@flodl/nn';
import { FlodlError, fromBytes, type Tensor } from '@flodl/tensor-native';
import type { AnyModule, TrainedState } from '../runtime/types.js';
import { warnCallback } from './build-rank.js';
import type { TrainedRun, TrainerHandle } from './handle.js';
import { trainedStatePath } from './rank-entry.js';
import { TRAINER_DEVICES_ENV } from './role.js';
import { openRunMonitor } from './run-monitor.js';
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
        ...(isCollectiveMode(options.mode)
          ? { [PROCESS_GROUP_PORT_ENV]: String(await freePortOn('127.0.0.1')) }
          : {}),
      },
      recordDir,
      prefixOutput: true,
      signal,
      ...(options.elastic || options.maxFailure ? { elastic: true } : {}),
      ...(options.maxFailure ? { maxFailure: options.maxFailure } : {}),
      ...(options.livenessMs === undefined ? {} : { livenessMs: options.livenessMs }),
      onServer: (server, run) => {
        CoordinatorHost.attachFromRanks(server, {
          run,
          onAttached: (attached) => {
            host = attached;
            monitor.attach(attached);
            // A graceful stop: every rank ends after its step in flight and reports its state.
            onStopper(() => {
              attached.server
                .broadcast({ type: 'ShutdownWithSave', reason: 'GracefulShutdown' })
                .catch(() => undefined);
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
  } finally {
    host?.detach();
    await monitor.close(outcome);
    rmSync(recordDir, { recursive: true, force: true });
  }
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
