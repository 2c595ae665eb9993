// `flodl launch --dashboard PORT`: the launcher's own coordinator, observed and served.

import { CoordinatorHost } from '../host/coordinator-host.js';
import { type Dashboard, startDashboard } from '../monitor/dashboard.js';
import { observe } from '../monitor/observe.js';
import { RunRecorder } from '../monitor/run-recorder.js';
import type { LaunchOptions } from './options.js';

/** The `onServer` of a watched launch, and how to stop watching once it ended. */
export interface WatchedLaunch {
  onServer: NonNullable<LaunchOptions['onServer']>;
  close(): Promise<void>;
}

/**
 * The coordinator `launch` forms by default (from the settings the ranks announce), with a
 * {@link RunRecorder} observing it and a dashboard on `port` (127.0.0.1) serving it from this
 * process. The dashboard starts before any rank does; the run's name is the script.
 */
export function watchLaunch(
  port: number,
  run: { script: string; mode?: string; worldSize: number },
  onError: (error: unknown) => void,
): WatchedLaunch {
  const recorder = new RunRecorder({
    run: { name: run.script, worldSize: run.worldSize, ...(run.mode ? { mode: run.mode } : {}) },
  });
  let dashboard: Dashboard | undefined;
  let stop: (() => void) | undefined;
  return {
    async onServer(server, exits) {
      dashboard = await startDashboard({ recorder, port, title: run.script });
      CoordinatorHost.attachFromRanks(server, {
        run: exits,
        onAttached: (host) => {
          stop = observe(host, recorder).stop;
        },
        onError,
      });
    },
    async close() {
      stop?.();
      await dashboard?.close();
      recorder.close();
    },
  };
}
