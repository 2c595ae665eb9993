// c10d collectives: really separate Node processes (test/distributed-worker.mjs, one per rank)
// rendezvous over loopback through a TCPStore; the in-process cases use a one-rank group.

import { type ChildProcess, fork } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { caught } from '@flodl/testing';
import { afterEach, describe, expect, it } from 'vitest';
import {
  buildInfo,
  createProcessGroup,
  cuda,
  distributed,
  manualSeed,
  type ProcessGroup,
  randn,
  Tensor,
  tidy,
  zeros,
} from '../src/index.js';
import { native } from '../src/internal/binding.js';

const WORKER = fileURLToPath(new URL('./distributed-worker.mjs', import.meta.url));

interface RankReport {
  bytes: Uint8Array;
  values: unknown;
  dtype: string;
  shape: number[];
}
interface Attempt {
  error: { code: string; message: string } | null;
  elapsedMs: number;
}
interface RankOutcome {
  rank: number;
  result?: any;
  error?: { code: string; message: string };
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(address)));
    });
  });
}

const children = new Set<ChildProcess>();
afterEach(() => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  children.clear();
});

interface Launch {
  scenario: 'collectives' | 'peerFailure' | 'join';
  worldSize: number;
  /** The rendezvous port (default: a free one). */
  port?: number;
  backend?: 'gloo' | 'nccl';
  timeoutMs?: number;
  /** Called with each IPC message that is not the final result (lets a test steer the ranks). */
  onMessage?: (rank: number, message: any, ranks: ChildProcess[]) => void;
  onExit?: (rank: number, ranks: ChildProcess[]) => void;
}

/** Resolves once something accepts connections on the port (rank 0's TCPStore). */
async function listening(port: number, deadline = Date.now() + 15_000): Promise<void> {
  while (true) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing listens on port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Forks one process per rank, hands each its task, and resolves when all have exited. Rank 0
 * starts first: the others dial its store only once it listens, so that c10d's one-second
 * connect retry never eats into the small timeouts these tests use.
 */
async function launch(options: Launch): Promise<RankOutcome[]> {
  const port = options.port ?? (await freePort());
  const ranks: ChildProcess[] = [];
  const start = (rank: number) =>
    new Promise<RankOutcome>((resolve) => {
      const child = fork(WORKER, [], {
        execArgv: [],
        serialization: 'advanced',
        stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      });
      children.add(child);
      ranks[rank] = child;
      const outcome: RankOutcome = { rank, exitCode: null, signal: null, stderr: '' };
      child.stderr?.on('data', (chunk) => {
        outcome.stderr += String(chunk);
      });
      child.on('message', (message: any) => {
        if (message.kind === 'result')
          Object.assign(outcome, { result: message.result, error: message.error });
        else options.onMessage?.(rank, message, ranks);
      });
      child.on('exit', (code, signal) => {
        outcome.exitCode = code;
        outcome.signal = signal;
        options.onExit?.(rank, ranks);
        resolve(outcome);
      });
      child.send({
        scenario: options.scenario,
        rank,
        worldSize: options.worldSize,
        port,
        backend: options.backend ?? 'gloo',
        timeoutMs: options.timeoutMs ?? 20_000,
      });
    });
  const outcomes = [start(0)];
  await listening(port);
  for (let rank = 1; rank < options.worldSize; rank++) outcomes.push(start(rank));
  return Promise.all(outcomes);
}

function expectAllSucceeded(outcomes: RankOutcome[]): any[] {
  for (const outcome of outcomes) {
    expect(
      outcome.error,
      `rank ${outcome.rank}: ${outcome.error?.message}\n${outcome.stderr}`,
    ).toBeUndefined();
    expect(outcome.exitCode, `rank ${outcome.rank} stderr:\n${outcome.stderr}`).toBe(0);
  }
  return outcomes.map((outcome) => outcome.result);
}

/** The same bytes on every rank. */
function expectIdentical(results: any[], pick: (result: any) => RankReport): RankReport {
  const first = pick(results[0]);
  for (const result of results.slice(1))
    expect(Buffer.from(pick(result).bytes)).toEqual(Buffer.from(first.bytes));
  return first;
}

function expectClose(actual: Float32Array | Float64Array, expected: ArrayLike<number>, atol: number): void {
  expect(actual.length).toBe(expected.length);
  for (let k = 0; k < actual.length; k++)
    expect(Math.abs(actual[k]! - expected[k]!)).toBeLessThanOrEqual(atol);
}

/** What the ranks' randn inputs were, regenerated here with the same seeds. */
function seeded(seed: number, shape: number[], dtype: 'float32' | 'float64'): Float32Array | Float64Array {
  manualSeed(seed);
  return tidy(() => randn(shape, { dtype, device: 'cpu' }).toTypedArray() as Float32Array | Float64Array);
}

function checkCollectives(results: any[], worldSize: number): void {
  const ranks = Array.from({ length: worldSize }, (_, rank) => rank);
  const total = (each: (rank: number) => number) => ranks.reduce((sum, rank) => sum + each(rank), 0);
  const scale = total((rank) => rank + 1);

  const sum = expectIdentical(results, (result) => result.sumFloat32);
  expect(sum.values).toEqual([
    [scale, 2 * scale, 3 * scale],
    [4 * scale, 5 * scale, 6 * scale],
  ]);

  const noise = expectIdentical(results, (result) => result.noiseSum);
  const inputs = ranks.map((rank) => seeded(100 + rank, [1031], 'float32'));
  expectClose(
    new Float32Array(noise.bytes.slice().buffer),
    inputs[0]!.map((_, k) => total((rank) => inputs[rank]![k]!)),
    1e-5,
  );

  const average = expectIdentical(results, (result) => result.avgFloat64);
  const averaged = ranks.map((rank) => seeded(200 + rank, [3, 7], 'float64'));
  expectClose(
    new Float64Array(average.bytes.slice().buffer),
    averaged[0]!.map((_, k) => total((rank) => averaged[rank]![k]!) / worldSize),
    1e-12,
  );

  expect(expectIdentical(results, (result) => result.maxFloat32).values).toEqual([
    worldSize - 1,
    3,
    worldSize > 1 ? 1 : 0,
    10,
  ]);
  expect(expectIdentical(results, (result) => result.minFloat32).values).toEqual([
    0,
    3 - (worldSize - 1),
    0,
    10 - (worldSize - 1),
  ]);
  const factorial = ranks.reduce((product, rank) => product * (rank + 1), 1);
  expect(expectIdentical(results, (result) => result.productFloat64).values).toEqual([
    factorial,
    2 ** worldSize,
    (-1) ** worldSize,
  ]);

  const mixed = [0, 1, 2, 3].map((k) => expectIdentical(results, (result) => result.mixed[k]));
  const shift = total((rank) => rank);
  expect(mixed[0]!.shape).toEqual([3, 2]);
  expect(mixed[0]!.values).toEqual([
    [worldSize + shift, 4 * worldSize + shift],
    [2 * worldSize + shift, 5 * worldSize + shift],
    [3 * worldSize + shift, 6 * worldSize + shift],
  ]);
  expect(mixed[1]!.values).toEqual([0.5 * shift, worldSize, 2 * worldSize]);
  expect(mixed[2]!.dtype).toBe('int64');
  expect(mixed[2]!.values).toEqual([shift, 1000 * shift, -shift, 7 * worldSize]);
  expect(mixed[3]!.shape).toEqual([]);
  expect(mixed[3]!.values).toBe(shift + 0.25 * worldSize);

  const root = worldSize - 1;
  const broadcast = [0, 1].map((k) => expectIdentical(results, (result) => result.broadcast[k]));
  expect(broadcast[0]!.values).toEqual([root, root, root]);
  expect(broadcast[1]!.values).toEqual([root * 11, 5]);

  for (const result of results) {
    expect(result.allGather.map((entry: RankReport) => entry.values)).toEqual(
      ranks.map((rank) => [rank, rank * 10]),
    );
    expect(result.liveAfterDestroy).toBe(false);
  }
}

describe('gloo across processes', () => {
  it.skipIf(!distributed.isAvailable('gloo'))(
    'all-reduces, broadcasts and gathers across 2 processes, bit-identical on every rank',
    async () => {
      const results = expectAllSucceeded(await launch({ scenario: 'collectives', worldSize: 2 }));
      checkCollectives(results, 2);
    },
  );

  it.skipIf(!distributed.isAvailable('gloo'))('does the same across 3 processes', async () => {
    const results = expectAllSucceeded(await launch({ scenario: 'collectives', worldSize: 3 }));
    checkCollectives(results, 3);
  });

  it.skipIf(!distributed.isAvailable('gloo'))(
    'fails the survivors at once with ERR_RANK_FAILED when a peer exits before the collective',
    async () => {
      const outcomes = await losePeer('exit', 3000);
      expect(outcomes[2]!.exitCode).toBe(0);
      for (const survivor of outcomes.slice(0, 2)) {
        const first = expectPoisonedThenGone(survivor);
        expect(first.error?.code).toBe('ERR_RANK_FAILED');
        expect(first.error?.message).toContain(`allReduce on rank ${survivor.rank} of 3 (gloo) failed`);
        expect(first.error?.message).toContain('a rank probably died');
        expect(first.elapsedMs).toBeLessThan(3000);
      }
    },
  );

  it.skipIf(!distributed.isAvailable('gloo'))(
    'fails the survivors with ERR_TIMEOUT when a live peer never joins the collective',
    async () => {
      const timeoutMs = 1500;
      const outcomes = await losePeer('stall', timeoutMs);
      expect(outcomes[2]!.result).toEqual({ stalled: true });
      for (const survivor of outcomes.slice(0, 2)) {
        const first = expectPoisonedThenGone(survivor);
        expect(first.error?.code).toBe('ERR_TIMEOUT');
        expect(first.error?.message).toContain(
          `on rank ${survivor.rank} of 3 (gloo) did not complete within 1500 ms`,
        );
        expect(first.elapsedMs).toBeGreaterThanOrEqual(timeoutMs - 100);
        expect(first.elapsedMs).toBeLessThan(timeoutMs + 2000);
      }
    },
  );
});

/** Three ranks join; rank 2 then exits or stalls, and ranks 0 and 1 all-reduce without it. */
function losePeer(victim: 'exit' | 'stall', timeoutMs: number): Promise<RankOutcome[]> {
  let ready = 0;
  let survivorsDone = 0;
  return launch({
    scenario: 'peerFailure',
    worldSize: 3,
    timeoutMs,
    onMessage: (_rank, message, ranks) => {
      if (message.kind !== 'ready' || ++ready < 3) return;
      ranks[2]!.send({ kind: victim });
      if (victim === 'stall') for (const survivor of ranks.slice(0, 2)) survivor.send({ kind: 'go' });
    },
    onExit: (rank, ranks) => {
      if (rank === 2 && victim === 'exit')
        for (const survivor of ranks.slice(0, 2)) survivor.send({ kind: 'go' });
      if (rank < 2 && ++survivorsDone === 2 && victim === 'stall') ranks[2]!.send({ kind: 'exit' });
    },
  });
}

/** A survivor's first collective failed; the next one fails at once; after abort() the group is gone. */
function expectPoisonedThenGone(survivor: RankOutcome): Attempt {
  expect(survivor.error, survivor.stderr).toBeUndefined();
  expect(survivor.exitCode, survivor.stderr).toBe(0);
  const { first, second, third } = survivor.result as Record<string, Attempt>;
  expect(second!.error?.code).toBe('ERR_RANK_FAILED');
  expect(second!.error?.message).toContain('the process group failed earlier and is unusable');
  expect(second!.elapsedMs).toBeLessThan(100);
  expect(third!.error?.code).toBe('ERR_DISPOSED');
  return first!;
}

describe('one-rank gloo group in this process', () => {
  const gloo = distributed.isAvailable('gloo');
  let group: ProcessGroup | undefined;
  afterEach(() => group?.destroy());

  async function open(): Promise<ProcessGroup> {
    group = createProcessGroup({
      backend: 'gloo',
      rank: 0,
      worldSize: 1,
      port: await freePort(),
      timeoutMs: 5000,
    });
    return group;
  }

  it('reports what the build has', () => {
    expect(distributed.isAvailable('gloo')).toBe(buildInfo().gloo);
    if (!buildInfo().nccl || cuda.deviceCount() === 0) expect(distributed.isAvailable('nccl')).toBe(false);
  });

  it.skipIf(!gloo)('runs every collective on one rank and frees everything it made', async () => {
    const before = native.distLiveCount();
    const pg = await open();
    expect([pg.backend, pg.rank, pg.worldSize, pg.device]).toEqual(['gloo', 0, 1, 'cpu']);
    tidy(() => {
      const t = Tensor.from([1.5, -2, 3], undefined, { dtype: 'float32' });
      pg.allReduce(t, { op: 'avg' });
      pg.allReduce([t, zeros([0])], { op: 'max' });
      pg.allReduce([]);
      pg.broadcast(t, 0);
      expect(t.toArray()).toEqual([1.5, -2, 3]);
      const [copy] = pg.allGather(t);
      expect(copy!.toArray()).toEqual([1.5, -2, 3]);
      expect(native.sameStorage(copy!._h, t._h)).toBe(false);
    });
    pg.barrier();
    pg.destroy();
    pg.destroy();
    expect(native.distLiveCount()).toEqual(before);
  });

  it.skipIf(!gloo)('updates tensors that require grad without autograd complaints', async () => {
    const pg = await open();
    const weight = Tensor.from([1, 2], undefined, { dtype: 'float32' }).requiresGrad_();
    const transposed = Tensor.from([1, 2, 3, 4], [2, 2], { dtype: 'float32' }).transpose(0, 1).contiguous();
    pg.allReduce([weight, transposed]);
    expect(weight.toArray()).toEqual([1, 2]);
    weight.dispose();
    transposed.dispose();
  });

  it.skipIf(!gloo)('keeps groups per JS environment: a worker thread makes (and leaks) its own', async () => {
    const pg = await open();
    const before = native.distLiveCount();
    const source = `
      const { parentPort, workerData } = require('node:worker_threads');
      import(workerData.entry).then((flodl) => {
        const group = flodl.createProcessGroup({ backend: 'gloo', rank: 0, worldSize: 1, port: workerData.port });
        const t = flodl.Tensor.from([1, 2, 3]);
        group.allReduce(t, { op: 'max' });
        parentPort.postMessage({ values: t.toArray() }); // the group dies with the thread's environment
      }).catch((error) => parentPort.postMessage({ error: String((error && error.stack) || error) }));
    `;
    const entry = new URL('../dist/index.js', import.meta.url).href;
    const worker = new Worker(source, { eval: true, workerData: { entry, port: await freePort() } });
    const message = await new Promise<any>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    expect(message).toEqual({ values: [1, 2, 3] });
    expect(native.distLiveCount()).toEqual(before);
    await worker.terminate();
    const t = Tensor.from([4]);
    pg.allReduce(t);
    expect(t.toArray()).toEqual([4]);
    t.dispose();
  });

  it.skipIf(!gloo)('rejects bad collective arguments before they reach the peers', async () => {
    const pg = await open();
    const t = Tensor.from([1, 2, 3]);
    const error = caught(() => pg.broadcast(t, 1));
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(error.message).toMatchInlineSnapshot(`
      "ProcessGroup.broadcast: invalid root
        expected: a rank in [0, 0]
        got: 1"
    `);
    expect(caught(() => pg.allReduce(t, { op: 'mean' as never })).code).toBe('ERR_INVALID_ARGUMENT');
    expect(caught(() => pg.allReduce(t, { opp: 'sum' } as never)).message).toContain("unknown option 'opp'");
    expect(caught(() => pg.allReduce([t, 3 as never])).code).toBe('ERR_INVALID_ARGUMENT');
    const integers = caught(() => pg.allReduce(t, { op: 'avg' }));
    expect(integers.code).toBe('ERR_DTYPE');
    expect(integers.got).toBe('Tensor(shape=[3], dtype=int64, device=cpu)');
    expect(caught(() => pg.allGather([t] as never)).code).toBe('ERR_INVALID_ARGUMENT');
    const flags = zeros([2], { dtype: 'bool' });
    expect(caught(() => pg.allReduce(flags)).message).toMatchInlineSnapshot(`
      "ProcessGroup.allReduce: gloo cannot reduce bool tensors
        expected: float16, float32, float64, int32, int64 or uint8 tensors (bfloat16 from libtorch 2; cast bool to uint8)
        got: Tensor(shape=[2], dtype=bool, device=cpu)"
    `);
    flags.dispose();
    pg.allReduce(t); // refused arguments leave the group usable
    t.dispose();
    expect(caught(() => pg.allReduce(t)).code).toBe('ERR_DISPOSED');
    pg.destroy();
    const destroyed = caught(() => pg.barrier());
    expect(destroyed.code).toBe('ERR_DISPOSED');
    expect(destroyed.message).toContain('the process group was destroyed');
  });

  it('rejects bad or misspelled group options', () => {
    const base = { backend: 'gloo', rank: 0, worldSize: 2, port: 29500 } as const;
    const cases: [object, string][] = [
      [{ ...base, backend: 'mpi' }, 'backend'],
      [{ ...base, rank: 2 }, 'rank'],
      [{ ...base, rank: -1 }, 'rank'],
      [{ ...base, rank: 0.5 }, 'rank'],
      [{ ...base, worldSize: 0 }, 'worldSize'],
      [{ ...base, port: 0 }, 'port'],
      [{ ...base, port: 70_000 }, 'port'],
      [{ ...base, host: '' }, 'host'],
      [{ ...base, timeoutMs: 0 }, 'timeoutMs'],
      [{ ...base, timeoutMs: Number.POSITIVE_INFINITY }, 'timeoutMs'],
    ];
    // A gloo group with a CUDA device is refused as such only where this build has gloo.
    if (distributed.isAvailable('gloo')) cases.push([{ ...base, device: 'cuda:0' }, 'device']);
    for (const [options, name] of cases) {
      const error = caught(() => createProcessGroup(options as never));
      expect(error.code).toBe('ERR_INVALID_ARGUMENT');
      expect(error.message).toContain(`invalid ${name}`);
    }
    expect(
      caught(() => createProcessGroup({ ...base, worldsize: 2 } as never)).message,
    ).toMatchInlineSnapshot(`
      "createProcessGroup: unknown option 'worldsize'; did you mean \`worldSize\`?
        expected: one of backend, rank, worldSize, host, port, timeoutMs, device
        got: worldsize"
    `);
    expect(caught(() => createProcessGroup(undefined as never)).code).toBe('ERR_INVALID_ARGUMENT');
  });

  it('refuses nccl clearly where the build or the machine lacks it', () => {
    if (distributed.isAvailable('nccl')) return;
    const error = caught(() => createProcessGroup({ backend: 'nccl', rank: 0, worldSize: 1, port: 29500 }));
    // Compiled in (no GPU visible) or left out of this build.
    expect(error.code).toBe(native.distInfo().nccl ? 'ERR_DEVICE' : 'ERR_INVALID_ARGUMENT');
    expect(error.message).toMatch(/nccl/);
  });

  it.skipIf(!gloo)('says ERR_IO when the rendezvous port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, resolve));
    const address = taken.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      // In a rank process: c10d logs the failed bind on that process's stderr, checked here.
      const [outcome] = await launch({ scenario: 'join', worldSize: 1, port });
      const error = outcome!.result.error;
      expect(error.code).toBe('ERR_IO');
      expect(error.message).toContain('the port is in use; pick a free port');
      expect(outcome!.stderr).toMatch(/failed to listen on any local network address/);
    } finally {
      taken.close();
    }
  });

  it.skipIf(!gloo)('times out a rendezvous that not every rank joins', async () => {
    const port = await freePort();
    const started = Date.now();
    const error = caught(() =>
      createProcessGroup({ backend: 'gloo', rank: 0, worldSize: 2, port, timeoutMs: 1000 }),
    );
    expect(error.code).toBe('ERR_TIMEOUT');
    expect(error.message).toContain('not every rank joined in time');
    expect(Date.now() - started).toBeLessThan(5000);
    expect(native.distLiveCount()).toEqual({ stores: 0, groups: 0 });
  });

  it.skipIf(!gloo)('times out a rank whose rendezvous server (rank 0) never comes', async () => {
    const port = await freePort();
    const error = caught(() =>
      createProcessGroup({ backend: 'gloo', rank: 1, worldSize: 2, port, timeoutMs: 300 }),
    );
    expect(error.code).toBe('ERR_TIMEOUT');
    expect(error.message).toContain('not every rank joined in time');
    expect(error.message).toContain('no server (rank 0) accepted connections within 300 ms');
    expect(native.distLiveCount()).toEqual({ stores: 0, groups: 0 });
  });
});

// One line when skipped: NCCL needs a CUDA build with NCCL and two visible GPUs.
describe.skipIf(!distributed.isAvailable('nccl') || cuda.deviceCount() < 2)(
  'nccl across processes (needs a CUDA build with NCCL and 2 GPUs)',
  () => {
    it('all-reduces, broadcasts and gathers CUDA tensors across 2 processes', async () => {
      const results = expectAllSucceeded(
        await launch({ scenario: 'collectives', worldSize: 2, backend: 'nccl' }),
      );
      checkCollectives(results, 2);
    });

    it('refuses CPU tensors with ERR_DEVICE', async () => {
      const pg = createProcessGroup({ backend: 'nccl', rank: 0, worldSize: 1, port: await freePort() });
      try {
        const error = caught(() => pg.allReduce(Tensor.from([1, 2], undefined, { device: 'cpu' })));
        expect(error.code).toBe('ERR_DEVICE');
        expect(error.got).toBe('tensors on cpu');
      } finally {
        pg.destroy();
      }
    });
  },
);
