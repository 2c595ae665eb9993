import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { FlodlError } from '@flodl/tensor-native';
import { captureWarnings } from '@flodl/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlServer, createRunSecret, type RankMessage, secretEnvironment } from '../src/wire/index.js';
import { bundle } from './fixtures/rank-bundle.js';

// A killed rank resets its connection; the coordinator logs the drop (expected here).
captureWarnings([
  /^\[flodl\] dropped connection from .*: wire: connection error: (read|write) (ECONNRESET|EPIPE)/,
]);

// The rank's main thread blocks for 45 s; its heartbeats, from the control worker, must keep
// a coordinator with a 5 s timeout convinced it is alive. The coordinator is this process
// (its event loop stays free); each rank is a forked process.
const BLOCK_MS = 45_000;
const COORDINATOR_TIMEOUT_MS = 5_000;

let child: URL;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  child = await bundle('test/fixtures/rank-child.ts', 'rank-child-liveness');
});
afterAll(() => {
  for (const process of children) process.kill('SIGKILL');
});

function startRank(
  port: number,
  secret: Uint8Array,
  rank: number,
  worldSize: number,
  mode: string,
): ChildProcess {
  const process_ = fork(
    fileURLToPath(child),
    [`127.0.0.1:${port}`, String(rank), String(worldSize), mode, String(BLOCK_MS)],
    {
      env: { ...process.env, ...secretEnvironment(secret) },
      execArgv: [],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
  children.add(process_);
  return process_;
}

function exitOf(process_: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => process_.once('exit', (code) => resolve(code)));
}

describe('RankClient liveness', () => {
  it.concurrent(
    'a rank blocked 45 s on its main thread keeps heartbeating and is never declared dead',
    async () => {
      const secret = createRunSecret();
      const server = await ControlServer.listen({
        secret,
        worldSize: 1,
        idleTimeoutMs: COORDINATOR_TIMEOUT_MS,
        heartbeatIntervalMs: 1000,
      });
      try {
        const heartbeats: number[] = [];
        const received: RankMessage[] = [];
        const disconnects: (FlodlError | undefined)[] = [];
        server.on('message', (_rank, message) => {
          if (message.type === 'Heartbeat') heartbeats.push(Date.now());
          else received.push(message);
        });
        server.on('rankDisconnected', (_rank, error) => disconnects.push(error));
        const rank = startRank(server.port, secret, 0, 1, 'block');
        const exit = exitOf(rank);
        const events: any[] = [];
        rank.on('message', (message) => events.push(message));
        await server.waitForRanks(1, { timeoutMs: 20_000 });
        await until(() => events.some((e) => e.kind === 'blocking'), 20_000);
        const blockedAt = events.find((e) => e.kind === 'blocking').at as number;
        // Messages sent while the rank is blocked wait in its worker, in order.
        await new Promise((resolve) => setTimeout(resolve, 2_000));
        await server.send(0, { type: 'SetGlobalStep', globalStep: 7 });
        await server.send(0, { type: 'SyncNow' });
        await until(() => events.some((e) => e.kind === 'done'), BLOCK_MS + 15_000);
        const done = events.find((e) => e.kind === 'done');
        expect(await exit).toBe(0);

        expect(done.unblockedAt - blockedAt).toBeGreaterThanOrEqual(BLOCK_MS - 100);
        const during = heartbeats.filter((t) => t >= blockedAt && t <= done.unblockedAt);
        expect(during.length).toBeGreaterThan(BLOCK_MS / 1000); // every 500 ms: ~90
        const points = [blockedAt, ...during, done.unblockedAt];
        const gaps = points.slice(1).map((t, i) => t - (points[i] as number));
        expect(Math.max(...gaps)).toBeLessThan(COORDINATOR_TIMEOUT_MS / 2);
        expect(done.arrived).toEqual([{ type: 'SetGlobalStep', globalStep: 7 }, { type: 'SyncNow' }]);
        expect(received.map((m) => m.type)).toEqual(['Batch', 'Batch', 'Exiting']);
        expect(disconnects).toEqual([undefined]); // one orderly close, never a timeout
      } finally {
        await server.close();
      }
    },
    BLOCK_MS + 25_000,
  );

  it.concurrent('a rank waiting on arrival with nothing else pending stays alive through the waits', async () => {
    // A pending Atomics.waitAsync does not keep a process's event loop alive: without a timer
    // of its own behind each wait, this rank (no socket on its main thread, as in the
    // collective modes) would exit with 13, an unsettled top-level await.
    const secret = createRunSecret();
    const server = await ControlServer.listen({ secret, worldSize: 1 });
    try {
      const rank = startRank(server.port, secret, 0, 1, 'arrival');
      const exit = exitOf(rank);
      const events: unknown[] = [];
      rank.on('message', (message) => events.push(message));
      expect(await exit).toBe(0);
      expect(events).toEqual([{ kind: 'done', waits: 40, arrived: 0 }]);
    } finally {
      await server.close();
    }
  });

  it.concurrent('a killed rank is detected within the heartbeat timeout', async () => {
    const secret = createRunSecret();
    const server = await ControlServer.listen({
      secret,
      worldSize: 2,
      idleTimeoutMs: COORDINATOR_TIMEOUT_MS,
    });
    try {
      const rank = startRank(server.port, secret, 1, 2, 'idle');
      const exit = exitOf(rank);
      await server.waitForRanks([1], { timeoutMs: 20_000 });
      const lost = new Promise<{ error: FlodlError | undefined; at: number }>((resolve) =>
        server.once('rankDisconnected', (_rank, error) => resolve({ error, at: Date.now() })),
      );
      const killedAt = Date.now();
      rank.kill('SIGKILL');
      await exit;
      const { error, at } = await lost;
      expect(at - killedAt).toBeLessThan(COORDINATOR_TIMEOUT_MS);
      expect(error).toBeDefined(); // not an orderly close: no Exiting, the socket dropped
      expect(server.connectedRanks()).toEqual([]);
    } finally {
      await server.close();
    }
  }, 30_000);
});

async function until(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
