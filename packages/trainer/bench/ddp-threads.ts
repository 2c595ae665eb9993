// Where a `pnpm bench:ddp` run's CPU went, thread by thread (Linux): this process and the ranks
// among its descendants (a process whose environment names its FLODL_RANK), each split into its
// main thread (the one that trains) and its other threads (the control thread, V8's compiler and
// GC helpers, libuv), over a window between two snapshots. A thread's schedstat gives the time it
// ran on a core and the time it was runnable but waited for one: on a machine whose cores all
// train, the cluster's own threads (the launcher, the control threads) take their time from the
// ranks, which shows as the ranks' main threads waiting. Where /proc has no schedstat (not
// Linux), there is no snapshot and the report goes without it.
import { readdirSync, readFileSync } from 'node:fs';

/** One process's threads over a window, as fractions of the window's length. */
export interface ThreadUse {
  /** `launcher` or `alone` (this process, as the caller names it), or `rank N`. */
  process: string;
  /** The main thread's time on a core. */
  mainOnCore: number;
  /** The main thread's time runnable but waiting for a core. */
  mainWaiting: number;
  /** The other threads' time on a core, summed. */
  othersOnCore: number;
}

/** The threads' counters at one moment. */
export interface ThreadSnapshot {
  atMs: number;
  /** `pid/tid` → the process's label, whether it is the main thread, and its counters (ns). */
  threads: Map<string, { label: string; main: boolean; onCoreNs: number; waitingNs: number }>;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'latin1');
  } catch {
    return undefined; // the process or thread is gone, or the system has no such file
  }
}

/** The processes under `root` (its children, theirs, …), from each process's parent in /proc. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = read(`/proc/${name}/stat`);
    if (stat === undefined) continue;
    // "pid (comm) state ppid …": the command may hold spaces and parentheses.
    const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const siblings = children.get(parent) ?? [];
    siblings.push(Number(name));
    children.set(parent, siblings);
  }
  const found: number[] = [];
  const queue = [...(children.get(root) ?? [])];
  for (let pid = queue.shift(); pid !== undefined; pid = queue.shift()) {
    found.push(pid);
    queue.push(...(children.get(pid) ?? []));
  }
  return found;
}

/** `rank N` for a rank process (its FLODL_RANK), undefined for any other. */
function rankLabel(pid: number): string | undefined {
  const environment = read(`/proc/${pid}/environ`);
  const entry = environment?.split('\0').find((variable) => variable.startsWith('FLODL_RANK='));
  return entry === undefined ? undefined : `rank ${entry.slice('FLODL_RANK='.length)}`;
}

/**
 * The counters of this process's threads (labelled `self`) and of its rank descendants' now;
 * undefined where the system does not keep them.
 */
export function snapshotThreads(self: string): ThreadSnapshot | undefined {
  if (read(`/proc/${process.pid}/task/${process.pid}/schedstat`) === undefined) return undefined;
  const threads: ThreadSnapshot['threads'] = new Map();
  const processes: [number, string | undefined][] = [
    [process.pid, self],
    ...descendants(process.pid).map((pid): [number, string | undefined] => [pid, rankLabel(pid)]),
  ];
  for (const [pid, label] of processes) {
    if (label === undefined) continue;
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      // "<ns on a core> <ns waiting on the run queue> <timeslices>"
      const fields = read(`/proc/${pid}/task/${tid}/schedstat`)?.split(' ');
      if (fields === undefined) continue;
      threads.set(`${pid}/${tid}`, {
        label,
        main: tid === String(pid),
        onCoreNs: Number(fields[0]),
        waitingNs: Number(fields[1]),
      });
    }
  }
  return { atMs: performance.now(), threads };
}

/**
 * Each process's threads between two snapshots, `self` first, then the ranks in order; the
 * threads found in both count (a thread that started or ended between them does not).
 */
export function threadUse(from: ThreadSnapshot, to: ThreadSnapshot): ThreadUse[] {
  const windowNs = (to.atMs - from.atMs) * 1e6;
  if (windowNs <= 0) return [];
  const byProcess = new Map<string, ThreadUse>();
  for (const [key, end] of to.threads) {
    const start = from.threads.get(key);
    if (start === undefined) continue;
    const use = byProcess.get(end.label) ?? {
      process: end.label,
      mainOnCore: 0,
      mainWaiting: 0,
      othersOnCore: 0,
    };
    const onCore = (end.onCoreNs - start.onCoreNs) / windowNs;
    if (end.main) {
      use.mainOnCore += onCore;
      use.mainWaiting += (end.waitingNs - start.waitingNs) / windowNs;
    } else use.othersOnCore += onCore;
    byProcess.set(end.label, use);
  }
  const rankOf = (use: ThreadUse) =>
    use.process.startsWith('rank ') ? Number(use.process.slice(5)) : Number.NEGATIVE_INFINITY;
  return [...byProcess.values()].sort((a, b) => rankOf(a) - rankOf(b));
}

/** `rank 0: main 90% on a core, 9% waiting for one, other threads 5%; …` */
export function describeThreadUse(uses: readonly ThreadUse[]): string {
  const pct = (fraction: number) => `${(fraction * 100).toFixed(0)}%`;
  return uses
    .map(
      (use) =>
        `${use.process}: main ${pct(use.mainOnCore)} on a core, ${pct(use.mainWaiting)} waiting for one, ` +
        `other threads ${pct(use.othersOnCore)}`,
    )
    .join('; ');
}
