import { FlodlError } from '@flodl/tensor-native';
import { captureWarnings } from '@flodl/testing';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { RankClient, type RankClientOptions } from '../src/rank/index.js';
import {
  ControlServer,
  type CoordinatorMessage,
  createRunSecret,
  type RankMessage,
} from '../src/wire/index.js';
import { bundle } from './fixtures/rank-bundle.js';

// The coordinator logs the connections these tests drop or refuse (expected here).
captureWarnings([
  /^\[flodl\] dropped connection from .*: wire: connection error: (read|write) (ECONNRESET|EPIPE)/,
  /^\[flodl\] dropped connection from .*: ControlServer\.disconnect: rank \d+: test/,
  /^\[flodl\] dropped connection from .*: wire: bad tag: the frame is not signed with this run's key/,
]);

// The rank client in this process, its control worker on a bundled build of src/rank (Node
// 20 cannot load .ts in a worker), the coordinator a ControlServer on 127.0.0.1.
let workerUrl: URL;
beforeAll(async () => {
  workerUrl = await bundle('src/rank/index.ts', 'rank-worker-client');
});

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

interface Setup {
  server: ControlServer;
  rank: RankClient;
  received: RankMessage[];
  heartbeats: number[];
}

async function setup(
  options: Partial<RankClientOptions> = {},
  serverOptions: { heartbeatIntervalMs?: number } = {},
): Promise<Setup> {
  const secret = createRunSecret();
  const server = await ControlServer.listen({ secret, worldSize: 2, ...serverOptions });
  cleanups.push(() => server.close());
  const received: RankMessage[] = [];
  const heartbeats: number[] = [];
  server.on('message', (_rank, message) => {
    if (message.type === 'Heartbeat') heartbeats.push(message.stepCount);
    else received.push(message);
  });
  const rank = await RankClient.connect({
    coordinator: `127.0.0.1:${server.port}`,
    rank: 1,
    worldSize: 2,
    secret,
    heartbeatMs: 100,
    timeoutMs: 10_000,
    workerUrl,
    ...options,
  });
  cleanups.push(() => rank.close());
  return { server, rank, received, heartbeats };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(10);
  }
}

/** Polls (yielding to the event loop) until `count` messages have arrived. */
async function collect(rank: RankClient, count: number): Promise<CoordinatorMessage[]> {
  const messages: CoordinatorMessage[] = [];
  await until(() => {
    messages.push(...rank.poll());
    return messages.length >= count;
  });
  return messages;
}

function codeOf(call: () => unknown): string | undefined {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(FlodlError);
    return (error as FlodlError).code;
  }
  return undefined;
}

describe('RankClient', () => {
  it('completes the handshake and heartbeats from its worker with the step count', async () => {
    const { server, rank, heartbeats } = await setup();
    expect(rank.welcome.type).toBe('Welcome');
    expect(rank.rank).toBe(1);
    expect(server.connectedRanks()).toEqual([1]);
    rank.stepCount = 5;
    await until(() => heartbeats.includes(5));
  });

  it('round-trips messages both ways, in order, with typed reports', async () => {
    const { server, rank, received, heartbeats } = await setup();
    const sent: CoordinatorMessage[] = [];
    for (let i = 0; i < 50; i += 1) sent.push({ type: 'SetGlobalStep', globalStep: i });
    sent.push({ type: 'StartEpoch', plan: { epoch: 1, partitionOffset: 10, partitionSize: 20 } });
    for (const message of sent) await server.send(1, message);
    expect(await collect(rank, sent.length)).toEqual(sent);
    expect(rank.poll()).toEqual([]);

    rank.reportBatch({ batchMs: 4, dataMs: 1, stepCount: 3, batchLoss: 0.5 });
    rank.syncAck({ stepCount: 4, divergence: 0.1 });
    rank.intent('EvalNow');
    rank.metrics({
      epoch: 1,
      avgLoss: 0.5,
      batchesProcessed: 4,
      epochMs: 10,
      samplesProcessed: 40,
      shareCompleteMs: 9,
      computeOnlyMs: 8,
      dataStarveMs: 1,
      scalars: { acc: { sum: 3, count: 4 } },
    });
    rank.send({ type: 'LrUpdate', lr: 0.01 });
    await until(() => received.length === 5);
    expect(received.map((m) => m.type)).toEqual(['Batch', 'SyncAck', 'Intent', 'Metrics', 'LrUpdate']);
    expect(received[0]).toEqual({ type: 'Batch', batchMs: 4, dataMs: 1, stepCount: 3, batchLoss: 0.5 });
    expect(rank.stepCount).toBe(4);
    await until(() => heartbeats.includes(4));
    expect(codeOf(() => rank.send({ type: 'Nope' } as unknown as RankMessage))).toBe('ERR_INVALID_ARGUMENT');
  });

  it('waitFor blocks on Atomics.wait, drains other control messages and times out', async () => {
    const { server, rank } = await setup();
    await server.send(1, { type: 'SetGlobalStep', globalStep: 1 });
    await server.send(1, { type: 'SyncNow' });
    await server.send(1, { type: 'SetGlobalStep', globalStep: 2 });
    await server.send(1, { type: 'Shutdown' });
    // The frames are on the wire: the worker receives them while this thread is blocked.
    const seen: CoordinatorMessage[] = [];
    const sync = rank.waitFor((m) => m.type === 'SyncNow', {
      timeoutMs: 5000,
      onControl: (m) => seen.push(m),
    });
    expect(sync).toEqual({ type: 'SyncNow' });
    expect(seen).toEqual([{ type: 'SetGlobalStep', globalStep: 1 }]);
    // Without onControl, non-matching messages stay in the inbox for poll.
    const shutdown = rank.waitFor((m) => m.type === 'Shutdown', { timeoutMs: 5000 });
    expect(shutdown).toEqual({ type: 'Shutdown' });
    expect(rank.poll()).toEqual([{ type: 'SetGlobalStep', globalStep: 2 }]);
    expect(rank.pending).toBe(0);

    const started = Date.now();
    expect(codeOf(() => rank.waitFor((m) => m.type === 'Throttle', { timeoutMs: 200 }))).toBe('ERR_TIMEOUT');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('arrival wakes when a message lands while the event loop turns, and is false on its timeout', async () => {
    const { server, rank } = await setup();
    const started = Date.now();
    expect(await rank.arrival(100)).toBe(false);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    // The wait does not block this thread: a timer here sends the very message it waits for.
    let sentByTimer = false;
    setTimeout(() => {
      sentByTimer = true;
      void server.send(1, { type: 'SetGlobalStep', globalStep: 7 });
    }, 50);
    expect(await rank.arrival(10_000)).toBe(true);
    expect(sentByTimer).toBe(true);
    expect(rank.poll()).toEqual([{ type: 'SetGlobalStep', globalStep: 7 }]);
    // A message already in: true at once, and it stays for poll.
    await server.send(1, { type: 'Shutdown' });
    await until(() => rank.pending === 1);
    expect(await rank.arrival(0)).toBe(true);
    expect(rank.poll()).toEqual([{ type: 'Shutdown' }]);
    expect(await rank.arrival(0)).toBe(false);
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 31]) {
      await expect(rank.arrival(bad)).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
    }
    // A lost connection ends the wait; poll then throws it.
    server.disconnect(1, 'test');
    expect(await rank.arrival(10_000)).toBe(true);
    expect(codeOf(() => rank.poll())).toBe('ERR_RANK_FAILED');
  });

  it('holds step reports within reportHoldMs and sends them, in order, before whatever goes next', async () => {
    const { rank, received } = await setup({ reportHoldMs: 1000 });
    const batch = (stepCount: number) => ({ batchMs: 1, dataMs: 0, stepCount, batchLoss: 1 });
    const sent = () =>
      received.map((message) => (message.type === 'Batch' ? message.stepCount : message.type));
    rank.reportBatch(batch(1)); // nothing handed over yet: it goes at once
    await until(() => received.length === 1);
    rank.reportBatch(batch(2));
    rank.reportBatch(batch(3));
    expect(rank.stepCount).toBe(3); // heartbeats report it already
    await sleep(150);
    expect(sent()).toEqual([1]);
    // Any other message takes what waits ahead of it.
    rank.syncAck({ stepCount: 4 });
    await until(() => received.length === 4);
    expect(sent()).toEqual([1, 2, 3, 'SyncAck']);
    // So does a wait on the coordinator (it may need the reports to answer).
    rank.reportBatch(batch(5));
    expect(await rank.arrival(50)).toBe(false);
    await until(() => received.length === 5);
    // With nothing else coming, the hold's own timer sends it once reportHoldMs is up.
    rank.reportBatch(batch(6));
    await sleep(150);
    expect(received.length).toBe(5);
    await until(() => received.length === 6, 5000);
    // A poll once the hold is up sends it without waiting for the timer (a loop that polls
    // without turning the event loop never runs the timer): the clock is moved past the hold.
    rank.reportBatch(batch(7));
    const now = performance.now();
    const clock = vi.spyOn(performance, 'now').mockImplementation(() => now + 2000);
    try {
      rank.poll();
    } finally {
      clock.mockRestore();
    }
    await until(() => received.length === 7, 500); // well before the hold's own 1000 ms
    // And close sends it before the worker's Exiting.
    rank.reportBatch(batch(8));
    await rank.close();
    expect(sent()).toEqual([1, 2, 3, 'SyncAck', 5, 6, 7, 8, 'Exiting']);
  });

  it('sends every report at once with reportHoldMs 0, and refuses a hold outside [0, 1000] ms', async () => {
    const { rank, received } = await setup({ reportHoldMs: 0 });
    for (let step = 1; step <= 3; step += 1)
      rank.reportBatch({ batchMs: 1, dataMs: 0, stepCount: step, batchLoss: 1 });
    await until(() => received.length === 3);
    const options = {
      coordinator: '127.0.0.1:1',
      rank: 0,
      worldSize: 1,
      secret: createRunSecret(),
      workerUrl,
    };
    for (const bad of [-1, Number.NaN, 1001]) {
      await expect(RankClient.connect({ ...options, reportHoldMs: bad })).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
      });
    }
    process.env.FLODL_REPORT_HOLD_MS = 'soon';
    try {
      await expect(RankClient.connect(options)).rejects.toMatchObject({
        code: 'ERR_INVALID_ARGUMENT',
        message: expect.stringContaining('FLODL_REPORT_HOLD_MS'),
      });
    } finally {
      delete process.env.FLODL_REPORT_HOLD_MS;
    }
  });

  it('holds at most maxPending messages for the main thread, losing none', async () => {
    const { server, rank } = await setup({ maxPending: 4 });
    const sent: CoordinatorMessage[] = [];
    for (let i = 0; i < 10; i += 1) sent.push({ type: 'SetGlobalStep', globalStep: i });
    for (const message of sent) await server.send(1, message);
    await until(() => rank.pending === 4);
    await sleep(200);
    expect(rank.pending).toBe(4); // the rest wait in the worker
    const first = rank.poll();
    expect(first).toEqual(sent.slice(0, 4));
    const rest = await collect(rank, 6);
    expect([...first, ...rest]).toEqual(sent);
    expect(rank.pending).toBe(0);
  });

  it('close sends Exiting, stops the worker, and is idempotent', async () => {
    const { server, rank, received } = await setup();
    const disconnected = new Promise<FlodlError | undefined>((resolve) =>
      server.once('rankDisconnected', (_rank, error) => resolve(error)),
    );
    rank.reportBatch({ batchMs: 1, dataMs: 0, stepCount: 1, batchLoss: 1 });
    const closing = rank.close();
    expect(rank.close()).toBe(closing);
    await closing;
    await rank[Symbol.asyncDispose]();
    expect(await disconnected).toBeUndefined();
    expect(received.map((m) => m.type)).toEqual(['Batch', 'Exiting']);
    expect(rank.isClosed).toBe(true);
    expect(codeOf(() => rank.send({ type: 'Exiting' }))).toBe('ERR_RANK_FAILED');
    expect(codeOf(() => rank.poll())).toBe('ERR_RANK_FAILED');
  });

  it('surfaces a dropped connection as ERR_RANK_FAILED after the messages before it', async () => {
    const { server, rank } = await setup();
    await server.send(1, { type: 'Shutdown' });
    server.disconnect(1, 'test');
    await until(() => {
      try {
        rank.waitFor(() => false, { timeoutMs: 1 });
      } catch (error) {
        return (error as FlodlError).code !== 'ERR_TIMEOUT';
      }
      return false;
    });
    // waitFor(() => false) kept the Shutdown in the inbox: it comes first, then the loss.
    expect(rank.poll()).toEqual([{ type: 'Shutdown' }]);
    expect(codeOf(() => rank.poll())).toBe('ERR_RANK_FAILED');
    expect(codeOf(() => rank.waitFor(() => true, { timeoutMs: 1000 }))).toBe('ERR_RANK_FAILED');
    expect(codeOf(() => rank.send({ type: 'Exiting' }))).toBe('ERR_RANK_FAILED');
    await rank.close(); // still fine
  });

  it('surfaces a silent coordinator as ERR_TIMEOUT', async () => {
    const { rank } = await setup({ timeoutMs: 300 }, { heartbeatIntervalMs: 0 });
    const started = Date.now();
    expect(codeOf(() => rank.waitFor(() => false, { timeoutMs: 5000 }))).toBe('ERR_TIMEOUT');
    const elapsed = Date.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(250);
    expect(elapsed).toBeLessThan(3000); // the loss, not the wait's own bound
    expect(codeOf(() => rank.poll())).toBe('ERR_TIMEOUT');
  });

  it('refuses a bad address and fails to connect with the wrong secret', async () => {
    await expect(
      RankClient.connect({ coordinator: 'nope', rank: 0, worldSize: 1, secret: createRunSecret() }),
    ).rejects.toMatchObject({
      code: 'ERR_INVALID_ARGUMENT',
    });
    const server = await ControlServer.listen({ secret: createRunSecret(), worldSize: 1 });
    cleanups.push(() => server.close());
    const error = await RankClient.connect({
      coordinator: `127.0.0.1:${server.port}`,
      rank: 0,
      worldSize: 1,
      secret: createRunSecret(),
      connectTimeoutMs: 3000,
      workerUrl,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(FlodlError);
  });
});
