// bench:ddp's per-thread account: what two snapshots of the threads' counters say, and (on
// Linux) that a snapshot finds this process and a rank among its children, and none other.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { describeThreadUse, snapshotThreads, type ThreadSnapshot, threadUse } from '../bench/ddp-threads.js';

const hasSchedstat = existsSync(`/proc/${process.pid}/task/${process.pid}/schedstat`);

type Counters = [label: string, main: boolean, onCoreMs: number, waitingMs: number];

function snapshot(atMs: number, threads: Record<string, Counters>): ThreadSnapshot {
  return {
    atMs,
    threads: new Map(
      Object.entries(threads).map(([key, [label, main, onCoreMs, waitingMs]]) => [
        key,
        { label, main, onCoreNs: onCoreMs * 1e6, waitingNs: waitingMs * 1e6 },
      ]),
    ),
  };
}

describe('bench:ddp thread use', () => {
  it('splits each process into its main thread and the rest, as fractions of the window', () => {
    const from = snapshot(1000, {
      '20/21': ['rank 1', false, 5, 0],
      '20/20': ['rank 1', true, 100, 10],
      '10/10': ['launcher', true, 50, 0],
      '10/11': ['launcher', false, 1, 0],
      '30/30': ['rank 0', true, 200, 0],
      '30/31': ['rank 0', false, 0, 0],
      '30/32': ['rank 0', false, 7, 0], // gone by the second snapshot: not counted
    });
    const to = snapshot(3000, {
      '20/21': ['rank 1', false, 45, 0],
      '20/20': ['rank 1', true, 1900, 210],
      '10/10': ['launcher', true, 150, 40],
      '10/11': ['launcher', false, 21, 0],
      '30/30': ['rank 0', true, 2000, 100],
      '30/31': ['rank 0', false, 60, 0],
      '30/33': ['rank 0', false, 500, 0], // started in between: not counted
    });
    const uses = threadUse(from, to);
    expect(uses.map((use) => use.process)).toEqual(['launcher', 'rank 0', 'rank 1']);
    const [launcher, rank0, rank1] = uses;
    expect(launcher!.mainOnCore).toBeCloseTo(0.05);
    expect(launcher!.mainWaiting).toBeCloseTo(0.02);
    expect(launcher!.othersOnCore).toBeCloseTo(0.01);
    expect(rank0!.mainOnCore).toBeCloseTo(0.9);
    expect(rank0!.mainWaiting).toBeCloseTo(0.05);
    expect(rank0!.othersOnCore).toBeCloseTo(0.03);
    expect(rank1!.mainOnCore).toBeCloseTo(0.9);
    expect(rank1!.mainWaiting).toBeCloseTo(0.1);
    expect(rank1!.othersOnCore).toBeCloseTo(0.02);
    expect(describeThreadUse(uses)).toBe(
      'launcher: main 5% on a core, 2% waiting for one, other threads 1%; ' +
        'rank 0: main 90% on a core, 5% waiting for one, other threads 3%; ' +
        'rank 1: main 90% on a core, 10% waiting for one, other threads 2%',
    );
    expect(threadUse(to, to)).toEqual([]);
  });

  it.skipIf(!hasSchedstat)('finds this process and a rank among its children (Linux)', async () => {
    // A rank by its environment, beside a child that is no rank (not counted).
    const busy = 'const end = Date.now() + 1500; while (Date.now() < end); setTimeout(() => {}, 5000);';
    const rank = spawn(process.execPath, ['-e', busy], { env: { ...process.env, FLODL_RANK: '3' } });
    const { FLODL_RANK: _, ...other } = process.env;
    const plain = spawn(process.execPath, ['-e', busy], { env: other });
    try {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const from = snapshotThreads('launcher');
      const end = Date.now() + 200;
      while (Date.now() < end); // this process's main thread on a core
      await new Promise((resolve) => setTimeout(resolve, 100));
      const to = snapshotThreads('launcher');
      expect(from).toBeDefined();
      const uses = threadUse(from!, to!);
      expect(uses.map((use) => use.process)).toEqual(['launcher', 'rank 3']);
      const [self, child] = uses;
      // This thread spun for 200 ms of the 300 ms window and the rank through it (it spins for
      // its first 1.5 s): on a core or waiting for one, however busy the machine.
      expect(self!.mainOnCore + self!.mainWaiting).toBeGreaterThan(0.3);
      expect(self!.mainOnCore).toBeLessThan(1.05);
      expect(child!.mainOnCore + child!.mainWaiting).toBeGreaterThan(0.3);
      expect(child!.mainOnCore + child!.mainWaiting).toBeLessThan(1.05);
    } finally {
      rank.kill('SIGKILL');
      plain.kill('SIGKILL');
    }
  });
});
