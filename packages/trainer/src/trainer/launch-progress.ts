// The cohort progress line of a run `flodl launch` hosts: the launcher's process owns the
// terminal (the ranks' output reaches it prefixed, line by line), so it draws the line the
// managed cluster run's launcher draws, from the coordinator formed from the ranks' settings.

import type { LaunchWatch, LaunchWatcher } from '@flodl/distributed';
import { createProgress, type ProgressSetting, stdoutIsUsers } from '../progress/progress.js';
import { cohortProgress } from './run-monitor.js';

/**
 * The `watch` of `runCli` (`@flodl/cooperative`'s `flodl` passes it): under `flodl launch` a
 * Trainer run's cohort line, drawn by the launcher as the managed cluster run's launcher draws
 * it (every rank's batches toward the epoch, the epoch lines with the per-rank share and speed,
 * eval results). By default it draws only where stdout is a terminal and the user's
 * (`FLODL_PROGRESS=0` turns it off), so piped or logged output keeps the ranks' lines alone; a
 * script that turned its display off (`.progress(false)`) gets none. `setting` is
 * `createProgress`'s (a `stream` of its own draws there, terminal or not).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for bad `createProgress` options
 * @example
 * ```ts fragment
 * import { runCli } from '@flodl/distributed';
 * process.exitCode = await runCli(process.argv.slice(2), { watch: launchProgress() });
 * ```
 */
export function launchProgress(setting: ProgressSetting = true): LaunchWatch {
  // Checked now: a bad setting fails before any rank starts.
  if (setting !== false) createProgress(setting === true ? { stream: { write: () => true } } : setting);
  return (): LaunchWatcher => {
    let finish: ((outcome: 'Completed' | 'Failed') => void) | undefined;
    return {
      attach(host, settings) {
        if (settings.progress === false || setting === false) return;
        const ownStream = setting !== true && setting.stream !== undefined;
        if (!ownStream && !(process.stdout.isTTY && stdoutIsUsers())) return;
        const progress = createProgress(setting);
        progress.start({ epochs: settings.numEpochs });
        const cohort = cohortProgress(
          progress,
          Math.floor(settings.totalSamples / settings.batchSize),
          settings.batchSize,
        );
        host.server.on('message', cohort.message);
        const removeObserver = host.addObserver({ notice: cohort.notice });
        finish = (outcome) => {
          removeObserver();
          host.server.off('message', cohort.message);
          progress.finish(outcome === 'Completed' ? 'training done' : 'training failed');
        };
      },
      close(outcome) {
        finish?.(outcome);
        finish = undefined;
      },
    };
  };
}
