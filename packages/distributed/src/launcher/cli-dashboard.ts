// What `flodl launch` watches its run with: the dashboard (`--dashboard PORT`) and the watchers a
// command built on this one adds (the Trainer's cohort progress line, in @flodl/cooperative's).

import { CoordinatorHost } from '../host/coordinator-host.js';
import type { RunSettings } from '../host/run-settings.js';
import { type Dashboard, startDashboard } from '../monitor/dashboard.js';
import { observe } from '../monitor/observe.js';
import { RunRecorder } from '../monitor/run-recorder.js';
import type { LaunchOptions } from './options.js';

/** What `flodl launch` runs: the script, its world size and its mode, as the command line says. */
export interface LaunchedRun {
  script: string;
  mode?: string;
  worldSize: number;
}

/**
 * Watches a run `flodl launch` hosts: `attach` once the coordinator formed from the ranks'
 * settings, `close` once the run ended (never throws).
 */
export interface LaunchWatcher {
  attach(host: CoordinatorHost, settings: RunSettings): void;
  close(outcome: 'Completed' | 'Failed'): void;
}

/** Makes the {@link LaunchWatcher} of one `flodl launch` run (see `runCli`'s `watch`). */
export type LaunchWatch = (run: LaunchedRun) => LaunchWatcher;

/** The `onServer` of a watched launch, and how to stop watching once it ended. */
export interface WatchedLaunch {
  onServer: NonNullable<LaunchOptions['onServer']>;
  close(outcome: 'Completed' | 'Failed'): Promise<void>;
}

/**
 * The coordinator `launch` forms by default (from the settings the ranks announce), watched:
 * with a dashboard on `dashboard` (127.0.0.1; a {@link RunRecorder} observing the coordinator,
 * served from this process, started before any rank is), and by every watcher in `watchers`.
 * The run's name is the script.
 */
export function watchLaunch(
  options: { dashboard?: number; watchers?: readonly LaunchWatcher[] },
  run: LaunchedRun,
  onError: (error: unknown) => void,
): WatchedLaunch {
  const watchers = options.watchers ?? [];
  const port = options.dashboard;
  const recorder =
    port === undefined
      ? undefined
      : new RunRecorder({
          run: { name: run.script, worldSize: run.worldSize, ...(run.mode ? { mode: run.mode } : {}) },
        });
  let dashboard: Dashboard | undefined;
  let stop: (() => void) | undefined;
  return {
    async onServer(server, exits) {
      if (recorder && port !== undefined)
        dashboard = await startDashboard({ recorder, port, title: run.script });
      CoordinatorHost.attachFromRanks(server, {
        run: exits,
        onAttached: (host, settings) => {
          if (recorder) stop = observe(host, recorder).stop;
          for (const watcher of watchers) watcher.attach(host, settings);
        },
        onError,
      });
    },
    async close(outcome) {
      for (const watcher of watchers) watcher.close(outcome);
      stop?.();
      await dashboard?.close();
      recorder?.close();
    },
  };
}
