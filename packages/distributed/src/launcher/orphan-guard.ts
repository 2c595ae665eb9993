// Orphan protection: a rank process must not outlive its launcher, even when the launcher is
// SIGKILLed and has no chance to stop it. The launcher preloads a small module into every
// rank (`node --import data:…`) that starts a worker thread; the worker polls whether the
// launcher is still there and, once it is gone, sends the rank SIGTERM, then SIGKILL after the
// launcher's grace period. A worker, so that a rank blocked in a long native call still goes.

/** Environment variable with the launcher's pid; the guard watches this process. */
export const LAUNCHER_PID_ENV = 'FLODL_LAUNCHER_PID';
/** Environment variable with the grace between the guard's SIGTERM and SIGKILL, in ms. */
export const KILL_GRACE_ENV = 'FLODL_KILL_GRACE_MS';
/** How often the guard looks for its launcher, in ms. */
export const ORPHAN_POLL_MS = 200;

// The worker (CommonJS, eval'd). The launcher is gone when this process was its child and is
// not any more (it was re-parented), or when no process has its pid.
const WORKER_SOURCE = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const { launcherPid, wasChild, pollMs, graceMs, rank } = workerData;
function launcherGone() {
  if (wasChild && process.ppid !== launcherPid) return true;
  try {
    process.kill(launcherPid, 0);
    return false;
  } catch (error) {
    return error.code === 'ESRCH';
  }
}
const timer = setInterval(() => {
  if (!launcherGone()) return;
  clearInterval(timer);
  try {
    writeSync(2, 'flodl: the launcher (pid ' + launcherPid + ') is gone; rank ' + rank + ' (pid ' + process.pid + ') stops\\n');
  } catch {}
  process.kill(process.pid, 'SIGTERM');
  setTimeout(() => process.kill(process.pid, 'SIGKILL'), graceMs);
}, pollMs);
`;

// The preload (ESM). It does nothing outside a launched rank, in worker threads, or twice.
const PRELOAD_SOURCE = `
import { isMainThread, Worker } from 'node:worker_threads';
const launcherPid = Number(process.env.${LAUNCHER_PID_ENV});
const marker = Symbol.for('flodl.orphanGuard');
if (isMainThread && Number.isSafeInteger(launcherPid) && launcherPid > 0 && !globalThis[marker]) {
  globalThis[marker] = true;
  const grace = Number(process.env.${KILL_GRACE_ENV});
  const worker = new Worker(${JSON.stringify(WORKER_SOURCE)}, {
    eval: true,
    workerData: {
      launcherPid,
      wasChild: process.ppid === launcherPid,
      pollMs: ${ORPHAN_POLL_MS},
      graceMs: Number.isFinite(grace) && grace >= 0 ? grace : 3000,
      rank: process.env.FLODL_RANK ?? '?',
    },
    stdout: true,
    stderr: true,
  });
  worker.on('error', () => undefined);
  worker.unref();
}
`;

/**
 * The Node flags that preload the orphan guard into a rank process. The launcher puts them
 * first on every rank's command line; the guard is active when `FLODL_LAUNCHER_PID` is set.
 */
export function orphanGuardNodeArgs(): string[] {
  return ['--import', `data:text/javascript,${encodeURIComponent(PRELOAD_SOURCE)}`];
}
