// Runs one fault scenario of the suite: the fault script as a user would start it (`node
// --import tsx`), watched from outside: every process of its tree is sampled from /proc while
// it runs, so the suite can tell that none is left behind, whatever the launcher reported.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DeathRecord, EpochMetrics } from '@flodl/distributed';
import type { FaultConfig } from './fault-script.js';

const script = join(dirname(fileURLToPath(import.meta.url)), 'fault-script.ts');

/** What the launcher wrote when `join` resolved. */
export interface LauncherResult {
  metrics: EpochMetrics[];
  lost: DeathRecord[];
  worldSize: number;
  endedAt: number;
}

/** One scenario's outcome, as seen from outside the run. */
export interface ScenarioOutcome {
  /** The launcher's exit code and signal. */
  status: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  result: LauncherResult | undefined;
  /** When the fault fired (ms since the epoch), and on which rank; undefined when it never did. */
  fault: { rank: number; what: string; time: number } | undefined;
  /** When the last process of the run was gone. */
  allGoneAt: number;
  /** Processes of the run still alive at the end (pid and command line). */
  leftBehind: string[];
  /** Every process seen in the run's tree. */
  seen: number;
  /** The scenario's folder (the bundles live under `<dir>/run`); removed by `cleanup`. */
  dir: string;
  cleanup(): void;
}

/** A process as /proc describes it: parent pid and start time (a pid may be reused). */
function stat(pid: number): { ppid: number; start: string } | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces: split after its closing one.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    if (fields[0] === 'Z') return undefined; // a zombie has ended; its parent reaps it
    return { ppid: Number(fields[1]), start: fields[19] ?? '' };
  } catch {
    return undefined;
  }
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').slice(0, 160);
  } catch {
    return '?';
  }
}

/** Adds to `tree` every live descendant of the processes already in it. */
function sampleTree(tree: Map<number, string>): void {
  const parents = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    const pid = Number(entry);
    if (!Number.isInteger(pid)) continue;
    const info = stat(pid);
    if (!info) continue;
    const list = parents.get(info.ppid) ?? [];
    list.push(pid);
    parents.set(info.ppid, list);
  }
  const queue = [...tree.keys()];
  while (queue.length > 0) {
    const pid = queue.pop() as number;
    for (const child of parents.get(pid) ?? []) {
      if (tree.has(child)) continue;
      const info = stat(child);
      if (!info) continue;
      tree.set(child, info.start);
      queue.push(child);
    }
  }
}

function alive(pid: number, start: string): boolean {
  return stat(pid)?.start === start;
}

/** Runs the fault script with `config` (its `dir` and `out` filled in) and watches it end. */
export async function runScenario(
  config: Omit<FaultConfig, 'dir' | 'out'>,
  options: { boundMs?: number; withSavePath?: boolean } = {},
): Promise<ScenarioOutcome> {
  const dir = mkdtempSync(join(tmpdir(), 'flodl-faults-'));
  const full: FaultConfig = {
    ...config,
    dir,
    out: join(dir, 'result.json'),
    ...(options.withSavePath === false ? {} : { savePath: join(dir, 'run') }),
  };
  const child = spawn(process.execPath, ['--import', 'tsx', script, JSON.stringify(full)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    // The run's temporary folders (the launcher's death records, kept after a failure, or
    // left by a killed launcher) land in the scenario's folder, removed with it.
    env: { ...process.env, FLODL_PROGRESS: '0', TMPDIR: dir },
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  child.stdout.resume();
  const tree = new Map<number, string>();
  const root = child.pid === undefined ? undefined : stat(child.pid);
  if (child.pid !== undefined && root) tree.set(child.pid, root.start);
  // The pid files name the ranks even when the launcher died before the tree was sampled.
  const fromPidFiles = (): void => {
    for (const file of readdirSync(dir).filter((name) => name.startsWith('pid-'))) {
      const pid = Number(readFileSync(join(dir, file), 'utf8'));
      const info = stat(pid);
      if (info && !tree.has(pid)) tree.set(pid, info.start);
    }
  };
  const sampler = setInterval(() => {
    fromPidFiles();
    sampleTree(tree);
  }, 100);
  const bound = options.boundMs ?? 90_000;
  const killAll = (): void => {
    for (const [pid, start] of tree) {
      try {
        if (alive(pid, start)) process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  const killer = setTimeout(killAll, bound);
  const [status, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on('exit', (code, exitSignal) => resolve([code, exitSignal])),
  );
  fromPidFiles();
  sampleTree(tree);
  // The run's processes may outlive a killed launcher by the orphan guard's grace: wait for
  // them (bounded: the grace is 3 s) and note when the last one went.
  const deadline = Date.now() + 10_000;
  while ([...tree].some(([pid, start]) => alive(pid, start)) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    sampleTree(tree);
  }
  const allGoneAt = Date.now();
  clearInterval(sampler);
  clearTimeout(killer);
  const leftBehind = [...tree].filter(([pid, start]) => alive(pid, start)).map(([pid]) => commandLine(pid));
  killAll();
  const read = <T>(file: string): T | undefined => {
    const path = join(dir, file);
    return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as T) : undefined;
  };
  return {
    status,
    signal,
    stderr,
    result: read<LauncherResult>('result.json'),
    fault: read('fault.json'),
    allGoneAt,
    leftBehind,
    seen: tree.size,
    dir,
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}
