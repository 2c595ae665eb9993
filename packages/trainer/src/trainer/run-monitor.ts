// Watching a managed run from the process that owns its view (the single-device process, or
// the launcher of a cluster): the progress display, the metrics log and the dashboard.

import { basename } from 'node:path';
import {
  type CoordinatorHost,
  type CoordinatorNotice,
  type Dashboard,
  type EpochMetrics,
  observe,
  RunRecorder,
  startDashboard,
} from '@flodl/distributed';
import type { RankMessage } from '@flodl/distributed/wire';
import { rankViews } from '../progress/cluster.js';
import { createProgress, type Progress } from '../progress/progress.js';
import type { RuntimeStep } from '../runtime/rank-runtime.js';
import { warnCallback } from './build-rank.js';
import type { ResolvedTrainerOptions } from './options.js';

/** What the run tells its monitor; every part is a no-op for what the options left off. */
export interface RunMonitor {
  readonly progress: Progress;
  /** The recorder behind the log and the dashboard (absent when neither is on). */
  readonly recorder: RunRecorder | undefined;
  /** A single-device step. */
  step(step: RuntimeStep, lr: number | undefined): void;
  /** A single-device epoch's aggregated metrics. */
  epoch(metrics: EpochMetrics): void;
  /** A single-device eval result (`epoch` 1-based), or its callback's failure. */
  eval(epoch: number, metric: number, error?: string): void;
  /** A single-device checkpoint (`version` 1-based), or its callback's failure. */
  checkpoint(version: number, error?: string): void;
  /** A cluster's coordinator host formed: record it, and draw the cohort from it. */
  attach(host: CoordinatorHost): void;
  /** One line for the user: through the progress display when it is on, else on stderr. */
  notice(line: string): void;
  /** The run ended: the last line, the log closed, the dashboard stopped. */
  close(outcome: 'Completed' | 'Failed'): Promise<void>;
}

/** The options a monitor reads. */
export type MonitorOptions = Pick<
  ResolvedTrainerOptions,
  'progress' | 'metricsLog' | 'dashboard' | 'numEpochs' | 'dataset' | 'batchSize'
>;

/** What the run is, for the log's first line and the ETA. */
export interface MonitoredRun {
  /** The run's label in the log and the dashboard's title. Default: the entry script's file name. */
  name?: string;
  mode?: string;
  worldSize: number;
}

/**
 * Opens the monitor `options` ask for: the progress display (on by default, only where stdout
 * is the user's), a {@link RunRecorder} writing `metricsLog` and feeding the `dashboard`.
 */
export async function openRunMonitor(options: MonitorOptions, run: MonitoredRun): Promise<RunMonitor> {
  const progress = createProgress(options.progress ?? true);
  const script = process.argv[1];
  const name = run.name ?? (script ? basename(script) : undefined);
  const epochs = options.numEpochs;
  const needsRecorder = options.metricsLog !== undefined || options.dashboard !== undefined;
  const recorder = needsRecorder
    ? new RunRecorder({
        run: {
          ...(name ? { name } : {}),
          ...(run.mode ? { mode: run.mode } : {}),
          worldSize: run.worldSize,
          epochs,
          samplesPerEpoch: options.dataset.length,
        },
        ...(options.metricsLog ? { log: options.metricsLog } : {}),
      })
    : undefined;
  let dashboard: Dashboard | undefined;
  if (recorder && options.dashboard) {
    try {
      dashboard = await startDashboard({
        recorder,
        port: options.dashboard.port,
        ...(options.dashboard.host ? { host: options.dashboard.host } : {}),
        ...(name ? { title: name } : {}),
        announce: (line) => (progress.enabled ? progress.log(line) : process.stdout.write(`${line}\n`)),
      });
    } catch (error) {
      recorder.close();
      throw error;
    }
  }
  progress.start({ epochs });
  const batches = Math.floor(options.dataset.length / options.batchSize);
  let stopObserving: (() => void) | undefined;

  return {
    progress,
    recorder,
    step(step, lr) {
      recorder?.record({
        kind: 'step',
        rank: 0,
        step: step.localStep,
        loss: Number.isFinite(step.loss) ? step.loss : null,
        stepMs: step.ms,
        ...(lr === undefined ? {} : { lr }),
      });
      progress.step({
        epoch: step.epoch,
        batch: step.batch,
        batches: step.batches,
        samplesPerSec: step.ms > 0 ? (step.batchSize / step.ms) * 1000 : 0,
        loss: step.loss,
      });
    },
    epoch(metrics) {
      recorder?.record({ kind: 'epoch', metrics });
      showEpoch(progress, metrics);
    },
    eval(epoch, metric, error) {
      recorder?.record({ kind: 'eval', epoch, metric, ...(error === undefined ? {} : { error }) });
      // The display counts epochs from 0; eval results name the epochs done (1-based).
      if (error === undefined) progress.eval({ epoch: epoch - 1, metric });
    },
    checkpoint(version, error) {
      recorder?.record({ kind: 'checkpoint', version, ...(error === undefined ? {} : { error }) });
    },
    notice(line) {
      if (progress.enabled) progress.log(line);
      else process.stderr.write(`${line}\n`);
    },
    attach(host) {
      const observation = recorder ? observe(host, recorder) : undefined;
      const cohort = cohortProgress(progress, batches, options.batchSize);
      host.server.on('message', cohort.message);
      const removeObserver = host.addObserver({ notice: cohort.notice });
      stopObserving = () => {
        observation?.stop();
        removeObserver();
        host.server.off('message', cohort.message);
      };
    },
    async close(outcome) {
      stopObserving?.();
      progress.finish(outcome === 'Completed' ? 'training done' : 'training failed');
      if (recorder && !recorder.state.snapshot.finished && run.worldSize === 1)
        recorder.record({ kind: 'finished', reason: outcome, failedRanks: [] });
      try {
        await dashboard?.close();
      } catch (error) {
        warnCallback('dashboard', error);
      }
      recorder?.close();
    },
  };
}

/** An epoch's line from its aggregated metrics. */
function showEpoch(progress: Progress, metrics: EpochMetrics): void {
  const samples = metrics.perRankSamples.reduce((sum, count) => sum + count, 0);
  progress.epochEnd({
    epoch: metrics.epoch,
    loss: metrics.avgLoss,
    durationMs: metrics.epochMs,
    ...(metrics.epochMs > 0 ? { samplesPerSec: (samples / metrics.epochMs) * 1000 } : {}),
    ...(Object.keys(metrics.scalars).length > 0 ? { metrics: { ...metrics.scalars } } : {}),
  });
}

/**
 * The cohort's progress line from the launcher's view: every rank's `Batch` report counts
 * toward the epoch's batches, the epoch's aggregated metrics close it (a line with the
 * per-rank share and speed under it), eval results as they arrive. Rank 0 of an externally
 * launched run feeds it the coordinator's notices alone (epochs, shares, evals).
 */
export function cohortProgress(
  progress: Progress,
  batches: number,
  batchSize: number,
): { message: (rank: number, message: RankMessage) => void; notice: (notice: CoordinatorNotice) => void } {
  let epoch = 0;
  let done = 0;
  let started: number | undefined;
  return {
    message(_rank, message) {
      if (!progress.enabled || message.type !== 'Batch') return;
      const now = performance.now();
      started ??= now;
      done += 1;
      const elapsed = now - started;
      progress.step({
        epoch,
        batch: Math.min(done, batches),
        batches,
        samplesPerSec: elapsed > 0 ? ((done - 1) * batchSize * 1000) / elapsed : 0,
        loss: message.batchLoss,
      });
    },
    notice(notice) {
      if (notice.type === 'EpochMetrics') {
        showEpoch(progress, notice.metrics);
        progress.cluster(rankViews(notice.metrics));
        epoch = notice.metrics.epoch + 1;
        done = 0;
        started = undefined;
      } else if (notice.type === 'EvalResult' && notice.error === undefined) {
        progress.eval({ epoch: notice.epoch - 1, metric: notice.metric });
      }
    },
  };
}
