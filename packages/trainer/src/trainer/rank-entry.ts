// A cluster rank: the same `run()` call, in a rank process, becomes the rank runtime. It joins
// the coordinator (announcing the run settings and its model's signature), trains the plans it
// is handed until the coordinator's Shutdown, and writes its final state for the launcher.

import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type AveragedEvent,
  type CoordinatorMessage,
  DistributedSession,
  encodeRunSettings,
  installDeathRecord,
  isChunkedMode,
  isCollectiveMode,
  type LaunchMode,
  RECORD_DIR_ENV,
  type RunSettings,
  writeDeathRecord,
} from '@flodl/distributed';
import { writeSafetensors } from '@flodl/nn';
import { FlodlError } from '@flodl/tensor-native';
import { readCheckpoint } from '../checkpoint/read.js';
import { modelSignature } from '../runtime/model-signature.js';
import { RankRuntime, type RuntimeStep } from '../runtime/rank-runtime.js';
import type { AnyModule, TrainedState } from '../runtime/types.js';
import { buildRank, callbacksOf, warnCallback } from './build-rank.js';
import type { TrainedRun } from './handle.js';
import { refuseClusterBundleOptions } from './options.js';
import type { RankRole } from './role.js';
import { ignoreInterruptsInRank } from './signals.js';
import type { RunSpec } from './spec.js';

/**
 * Diagnostics: with this set to a folder, each rank appends one line per averaging round to
 * `rounds-rank<N>.jsonl` there (the round, its steps, a digest of the parameters after it), so
 * a run can be checked for replicas that agree after every round.
 */
export const TRACE_DIR_ENV = 'FLODL_TRACE_DIR';

/** The file a rank writes its final state to, in the run's record folder. */
export function trainedStatePath(directory: string, rank: number): string {
  return join(directory, `trained-rank${rank}.safetensors`);
}

/**
 * Batches left in a rank's chunk at which the coordinator hands out its next one, in the CPU
 * backend's chunked modes: the chunk's round trip through the launcher (a few ms on a machine
 * whose cores the ranks keep busy) then overlaps the chunk's last steps instead of idling the
 * rank between two chunks. The `lookaheadBatches` option overrides it.
 */
const CHUNK_LOOKAHEAD_BATCHES = 3;

/** The `lookaheadBatches` a run in `mode` announces by default (none outside the CPU backend's chunked modes). */
function chunkLookahead(mode: LaunchMode): number | undefined {
  return isChunkedMode(mode) && !isCollectiveMode(mode) ? CHUNK_LOOKAHEAD_BATCHES : undefined;
}

/** @internal The settings this rank announces (what the coordinator plans with). */
export function runSettingsFor<M extends AnyModule>(spec: RunSpec<M>, model: M): RunSettings {
  const options = spec.options;
  const policy = options.epochCallbackPolicy;
  const optional = {
    elche: options.elche,
    lrScaleRatio: options.lrScaleRatio,
    epochCallbackPolicy:
      policy === undefined ? undefined : policy === 'fastest' ? 'Fastest' : { rank: policy.rank },
    checkpointEvery: options.checkpointFn || options.savePath ? options.checkpointEvery : undefined,
    evalEveryEpochs: options.evalFn && options.evalEvery > 0 ? options.evalEvery : undefined,
    epochCallback: options.epochFn ? true : undefined,
    heartbeatTimeoutMs: options.heartbeatTimeoutMs,
    maxFailure: options.maxFailure,
    lookaheadBatches: options.lookaheadBatches ?? chunkLookahead(options.mode),
    // The display turned off: a launcher that draws the cohort line (flodl launch) draws none.
    progress: options.progress === false ? false : undefined,
  };
  return {
    mode: options.mode,
    totalSamples: options.dataset.length,
    batchSize: options.batchSize,
    numEpochs: options.numEpochs,
    seed: options.seed,
    ...(Object.fromEntries(
      Object.entries(optional).filter(([, value]) => value !== undefined),
    ) as Partial<RunSettings>),
    model: modelSignature(model),
  };
}

/**
 * Hears what one cluster rank does, in that rank's process, as it happens: every booked step,
 * every averaging round (before it takes the rank's state, after its result was applied) and
 * every coordinator message. For diagnostics of a run (a per-rank log, a check of the
 * averaging law); each part is optional, and none may change the model.
 */
export interface ClusterRankObserver {
  /** A step was booked (after the optimizer step, before the rank follows the coordinator). */
  step?(step: RuntimeStep): void;
  /** An averaging round is about to take this rank's state (`mass`: its weight in the round). */
  beforeAverage?(round: { version: number; steps: number; mass: number }): void;
  /**
   * An averaging round's result was applied to this rank's model (`consensus`: host modes, its
   * bytes valid during the call only: copy what you keep).
   */
  averaged?(event: AveragedEvent): void;
  /** A coordinator message arrived (before the runtime follows it). */
  control?(message: CoordinatorMessage): void;
}

/** A joined cluster rank: its runtime (bound to the coordinator) and how to end it cleanly. */
export interface ClusterRank<M extends AnyModule = AnyModule> {
  readonly runtime: RankRuntime<M>;
  /**
   * Ends the rank cleanly: its final state (CPU copies) is written for the launcher, the
   * session says Exiting and closes, the runtime is freed. Idempotent.
   */
  finish(): Promise<TrainedState>;
}

/**
 * Builds this rank's model (seeded like every rank), joins the coordinator announcing the
 * run settings and the model's signature, and returns the rank runtime bound to it. Both
 * tiers start here: the managed rank loop and the cooperative Worker. `observer` hears the
 * rank's steps, rounds and coordinator messages as they happen.
 *
 * @throws FlodlError when the coordinator refuses the rank (settings or model differ) or
 *   cannot be reached
 */
export async function joinClusterRank<M extends AnyModule>(
  spec: RunSpec<M>,
  role: RankRole,
  observer: ClusterRankObserver = {},
): Promise<ClusterRank<M>> {
  const options = spec.options;
  refuseClusterBundleOptions(options);
  if (options.resumeFrom !== undefined && role.launchedBy === 'external')
    throw new FlodlError(
      'ERR_INVALID_ARGUMENT',
      'resumeFrom is not served on an externally launched run yet',
      {
        op: 'Trainer.resumeFrom',
        expected: 'a run launched by flodl (Trainer.run from one script, or the flodl CLI)',
        got: 'ranks launched by torchrun-style variables',
      },
    );
  // Checked before joining: a bundle that cannot be read fails this rank alone, at once.
  const bundle = options.resumeFrom === undefined ? undefined : readCheckpoint(options.resumeFrom);
  const { model, optimizer } = buildRank(spec, role.device);
  const settings = runSettingsFor(spec, model);
  const early: CoordinatorMessage[] = [];
  const trace = process.env[TRACE_DIR_ENV];
  let runtime: RankRuntime<M> | undefined;
  // The terminal's Ctrl-C reaches this rank too: its launcher stops the cohort in order instead.
  const restoreInterrupts = ignoreInterruptsInRank(
    role.launchedBy === 'flodl' && options.handleSignals !== false,
  );
  const session = await DistributedSession.join(model, {
    onAveraged: (event) => {
      if (trace) {
        appendFileSync(
          join(trace, `rounds-rank${role.rank}.jsonl`),
          `${JSON.stringify({ version: event.version, steps: event.steps, digest: modelSignature(model).values })}\n`,
        );
      }
      observer.averaged?.(event);
    },
    ...(observer.beforeAverage ? { onBeforeAverage: observer.beforeAverage } : {}),
    mode: options.mode,
    capabilities: encodeRunSettings(settings),
    // Unset: twice the run's liveness setting (FLODL_LIVENESS_MS), 60 s by default.
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    onControl: (message) => {
      observer.control?.(message);
      if (runtime) runtime.receive(message);
      else early.push(message);
    },
  });
  const scheduler = options.scheduler?.(optimizer, role.worldSize);
  const created = new RankRuntime<M>({
    model,
    optimizer,
    dataset: options.dataset,
    batchSize: options.batchSize,
    seed: options.seed,
    device: role.device,
    rank: role.rank,
    worldSize: role.worldSize,
    session,
    lrScale: 1 + (role.worldSize - 1) * (options.lrScaleRatio ?? 0),
    ...(options.maxGradNorm === undefined ? {} : { maxGradNorm: options.maxGradNorm }),
    ...(scheduler ? { scheduler } : {}),
    ...(options.prefetch === undefined ? {} : { prefetch: options.prefetch }),
    ...(options.resident === undefined ? {} : { resident: options.resident }),
    ...(options.cudaGraph ? { cudaGraph: true } : {}),
    callbacks: callbacksOf(spec),
    ...(options.savePath === undefined ? {} : { savePath: options.savePath }),
    ...(options.keepLast === undefined ? {} : { keepLast: options.keepLast }),
    ...(observer.step ? { onStep: observer.step } : {}),
    // The rank hands its held reports over in time for the lookahead it announced.
    ...(settings.lookaheadBatches === undefined ? {} : { lookaheadBatches: settings.lookaheadBatches }),
  });
  runtime = created;
  // Every rank loads the same weights, its own optimizer state (the writer's when the bundle
  // has none for it) and the saved counters; the coordinator resumes the plans.
  if (bundle) created.restore(bundle);
  for (const message of early) created.receive(message);
  let finished: Promise<TrainedState> | undefined;
  return {
    runtime: created,
    finish: () => {
      finished ??= (async () => {
        try {
          // A completed run's last state: the elected rank (rank 0 until one is elected)
          // writes the bundle, every rank its optimizer state. A run the coordinator ends
          // early is saved on its ShutdownWithSave.
          if (
            options.savePath !== undefined &&
            session.saveRequested === undefined &&
            created.dataCursor().epoch >= options.numEpochs
          ) {
            try {
              await created.saveClusterBundle('final', created.rank === (created.electedRank ?? 0));
            } catch (error) {
              warnCallback('checkpoint', error);
            }
          }
          const state = created.finalState();
          const directory = process.env[RECORD_DIR_ENV];
          if (directory) writeTrainedState(trainedStatePath(directory, role.rank), state);
          await session.finish();
          return state;
        } finally {
          // The caller holds copies (TrainedState): the rank's own model and optimizer go too.
          created.dispose();
          optimizer.dispose();
          model.dispose();
          restoreInterrupts();
        }
      })();
      return finished;
    },
  };
}

/**
 * @internal Runs this process's rank to the end (the managed tier). A failure writes the
 * rank's death record and is rethrown (flodl-launched ranks then exit non-zero, unblocking
 * their peers).
 */
export async function runClusterRank<M extends AnyModule>(
  spec: RunSpec<M>,
  role: RankRole,
): Promise<TrainedRun> {
  installDeathRecord();
  let rank: ClusterRank<M> | undefined;
  try {
    rank = await joinClusterRank(spec, role);
    const { runtime } = rank;
    for (;;) {
      const plan = await runtime.waitForEpochPlan();
      if (!plan) break;
      await runtime.fireEpochCallback(plan.epoch);
      if (await runtime.runEpochPlan(plan, spec.trainStep)) break;
    }
    return { ...(await rank.finish()), lost: [] };
  } catch (error) {
    writeDeathRecord(error);
    rank?.runtime.dispose();
    throw error;
  }
}

/** Writes `state` as safetensors (`p:i` parameters, `b:j` buffers). */
export function writeTrainedState(path: string, state: TrainedState): void {
  const tensors: Record<string, (typeof state.params)[number]> = {};
  state.params.forEach((tensor, index) => {
    tensors[`p:${index}`] = tensor;
  });
  state.buffers.forEach((tensor, index) => {
    tensors[`b:${index}`] = tensor;
  });
  writeSafetensors(path, tensors, { format: 'flodl-trained-state' });
}
