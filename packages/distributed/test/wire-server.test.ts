import { once } from 'node:events';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BOOTSTRAP_CAPABILITY,
  type ConnectionErrorEvent,
  ControlClient,
  type ControlClientOptions,
  ControlServer,
  type ControlServerOptions,
  type CoordinatorMessage,
  createHello,
  createRunSecret,
  decodeMessage,
  encodeFrameHeader,
  FrameReader,
  MAX_HANDSHAKE_PAYLOAD_BYTES,
  MAX_PAYLOAD_BYTES,
  MessageKind,
  PROTOCOL_VERSION,
  type RankMessage,
  toKeyObject,
  type WireError,
} from '../src/wire/index.js';
import {
  caught,
  closedSocket,
  eventually,
  freePort,
  messageFrame,
  rawConnect,
  rawRank,
} from './fixtures/wire-helpers.js';
import { COORDINATOR_SAMPLES, RANK_SAMPLES } from './fixtures/wire-samples.js';

const secret = createRunSecret();
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startServer(options: Partial<ControlServerOptions> = {}) {
  const server = await ControlServer.listen({ secret, worldSize: 4, ...options });
  const errors: ConnectionErrorEvent[] = [];
  const messages: [number, RankMessage][] = [];
  server.on('connectionError', (event) => errors.push(event));
  server.on('message', (rank, message) => messages.push([rank, message]));
  cleanups.push(() => server.close({ timeoutMs: 1000 }));
  return { server, errors, messages };
}

async function startClient(port: number, options: Partial<ControlClientOptions> = {}) {
  const client = await ControlClient.connect({ port, secret, rank: 0, worldSize: 4, ...options });
  cleanups.push(() => client.close({ timeoutMs: 1000 }));
  return client;
}

/** Sends a raw Hello on `socket` and reads the first answer frame. */
async function rawHello(
  socket: Socket,
  hello = createHello({ rank: 1, worldSize: 4, channel: 'control' }),
  key = secret,
) {
  socket.write(messageFrame(key, hello));
  const reader = new FrameReader({ key: secret });
  const answer = new Promise<ReturnType<typeof decodeMessage>>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk, (frame) => resolve(decodeMessage(frame.kind, frame.payload)));
      } catch (error) {
        reject(error);
      }
    });
    socket.on('close', () => reject(new Error('closed without an answer')));
    socket.on('error', () => {});
  });
  return answer;
}

describe('handshake', () => {
  it('welcomes a rank and reports who it is', async () => {
    const { server } = await startServer({ capabilities: ['bf16-wire'] });
    const connected = once(server, 'rankConnected');
    const client = await startClient(server.port, { rank: 2, capabilities: ['pinned-staging'] });
    const [rank, hello] = await connected;
    expect(rank).toBe(2);
    expect(hello).toMatchObject({
      rank: 2,
      worldSize: 4,
      channel: 'control',
      pid: process.pid,
      capabilities: ['pinned-staging'],
    });
    expect(client.welcome).toMatchObject({ rank: 2, worldSize: 4, capabilities: ['bf16-wire'] });
    expect(server.connectedRanks()).toEqual([2]);
    expect(server.helloOf(2)?.pid).toBe(process.pid);
    await server.waitForRanks([2], { timeoutMs: 100 });
  });

  it('rejects a world-size mismatch with the reason', async () => {
    const { server, errors } = await startServer();
    const error = await caught(() =>
      ControlClient.connect({ port: server.port, secret, rank: 0, worldSize: 3 }),
    );
    expect(error.code).toBe('ERR_WIRE');
    expect((error as WireError).reason).toBe('handshake');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: the coordinator refused the handshake: world size 3 does not match the run's 4
        got: rank 0 of 3, control channel"
    `);
    await eventually(() => errors.length === 1);
    expect(errors[0]!.error.message).toMatch(
      /^wire: refused a Hello: world size 3 does not match the run's 4\n {2}got: rank 0 of 3, control channel, protocol 1, from .+ pid \d+$/,
    );
    expect(server.stats.handshakesRefused).toBe(1);
  });

  it('rejects a second connection of a connected rank, and ranks outside the world', async () => {
    const { server } = await startServer();
    await startClient(server.port, { rank: 1 });
    const duplicate = await caught(() =>
      ControlClient.connect({ port: server.port, secret, rank: 1, worldSize: 4 }),
    );
    expect(duplicate.message).toMatchInlineSnapshot(`
      "wire: the coordinator refused the handshake: rank 1 already has a control channel
        got: rank 1 of 4, control channel"
    `);
    const socket = await rawConnect(server.port);
    const answer = await rawHello(socket, createHello({ rank: 9, worldSize: 4, channel: 'control' }));
    expect(answer).toMatchInlineSnapshot(`
      {
        "protocolVersion": 1,
        "reason": "rank 9 is outside [0, 4)",
        "type": "Reject",
      }
    `);
    socket.destroy();
    expect(server.connectedRanks()).toEqual([1]);
  });

  it('applies the admission rule', async () => {
    const { server } = await startServer({
      admit: (hello) => (hello.rank === 3 ? 'rank 3 is drained for maintenance' : undefined),
    });
    const error = await caught(() =>
      ControlClient.connect({ port: server.port, secret, rank: 3, worldSize: 4 }),
    );
    expect(error.message).toContain('rank 3 is drained for maintenance');
  });

  it('drops a Hello signed with another secret, without an answer', async () => {
    const { server, errors } = await startServer();
    const error = await caught(() =>
      ControlClient.connect({
        port: server.port,
        secret: createRunSecret(),
        rank: 0,
        worldSize: 4,
        handshakeTimeoutMs: 2000,
      }),
    );
    expect(['ERR_IO', 'ERR_WIRE']).toContain(error.code);
    await eventually(() => errors.length === 1);
    expect((errors[0]!.error as WireError).reason).toBe('tag');
    expect(server.connectedRanks()).toEqual([]);
  });

  it('answers a peer of another protocol version with a Reject naming ours', async () => {
    const { server, errors } = await startServer();
    const socket = await rawConnect(server.port);
    socket.write(
      messageFrame(secret, createHello({ rank: 1, worldSize: 4, channel: 'control' }), { version: 2 }),
    );
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    await closedSocket(socket);
    const reader = new FrameReader({ key: secret });
    const answers: unknown[] = [];
    reader.push(Buffer.concat(chunks), (frame) => answers.push(decodeMessage(frame.kind, frame.payload)));
    expect(answers).toMatchObject([{ type: 'Reject', protocolVersion: 1 }]);
    expect((errors[0]!.error as WireError).reason).toBe('version');
  });

  it('times out a connection that never says Hello', async () => {
    const { server, errors } = await startServer({ handshakeTimeoutMs: 100 });
    const socket = await rawConnect(server.port);
    socket.on('error', () => {});
    await closedSocket(socket);
    expect(errors[0]!.error.code).toBe('ERR_TIMEOUT');
    expect(errors[0]!.error.message).toMatch(
      /^wire: the handshake timed out after 100 ms \(no Hello from 127\.0\.0\.1:\d+\)$/,
    );
  });
});

describe('before the handshake', () => {
  it('refuses frames over 16 KiB before the handshake: many oversize Hellos, memory bounded', async () => {
    const { server, errors } = await startServer();
    const before = process.memoryUsage().arrayBuffers;
    // Each claims a full 16 MiB Hello and sends 64 KiB of it.
    const header = encodeFrameHeader(
      toKeyObject(secret),
      { version: PROTOCOL_VERSION, kind: MessageKind.Hello, sequence: 0 },
      [],
      MAX_PAYLOAD_BYTES,
    );
    const sockets = await Promise.all(Array.from({ length: 64 }, () => rawConnect(server.port)));
    for (const socket of sockets) {
      socket.on('error', () => {});
      socket.write(header);
      socket.write(new Uint8Array(64 * 1024));
    }
    await Promise.all(sockets.map((socket) => closedSocket(socket)));
    await eventually(() => errors.length === 64);
    expect(new Set(errors.map((event) => (event.error as WireError).reason))).toEqual(new Set(['length']));
    expect(errors[0]!.error.message).toMatch(/payload exceeds the cap/);
    expect(JSON.stringify(errors[0]!.error)).toContain(`at most ${MAX_HANDSHAKE_PAYLOAD_BYTES} bytes`);
    // Nothing near 64 × 16 MiB was ever held.
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(64 * 1024 * 1024);
    // A rank still gets in, and may then send frames up to the full cap.
    const client = await startClient(server.port, { rank: 0 });
    expect(server.connectedRanks()).toEqual([0]);
    await client.send({ type: 'Heartbeat', stepCount: 1 });
  });

  it('a setup connection (BOOTSTRAP_CAPABILITY) closes without reading as a death', async () => {
    const { server } = await startServer();
    const disconnects: [number, unknown][] = [];
    server.on('rankDisconnected', (rank, error) => disconnects.push([rank, error]));
    const bootstrap = await ControlClient.connect({
      port: server.port,
      secret,
      rank: 2,
      worldSize: 4,
      capabilities: [BOOTSTRAP_CAPABILITY],
    });
    await bootstrap.close();
    const plain = await ControlClient.connect({ port: server.port, secret, rank: 3, worldSize: 4 });
    await plain.close();
    await eventually(() => disconnects.length === 2);
    expect(disconnects[0]).toEqual([2, undefined]);
    expect(disconnects[1]![0]).toBe(3);
    expect((disconnects[1]![1] as Error).message).toMatch(/disconnected without saying Exiting/);
  });
});

describe('control exchange', () => {
  it('carries every coordinator message to a rank and every rank message back, in order', async () => {
    const { server, messages } = await startServer({ heartbeatIntervalMs: 0 });
    const client = await startClient(server.port, { rank: 3, heartbeatIntervalMs: 0 });
    for (const message of COORDINATOR_SAMPLES) await server.send(3, message);
    const received: CoordinatorMessage[] = [];
    const expected = COORDINATOR_SAMPLES.filter((message) => message.type !== 'CoordHeartbeat');
    while (received.length < expected.length) received.push(await client.receive({ timeoutMs: 2000 }));
    expect(received).toEqual(expected);
    expect(client.poll()).toBeUndefined();
    for (const message of RANK_SAMPLES) await client.send(message);
    await eventually(() => messages.length === RANK_SAMPLES.length);
    expect(messages).toEqual(RANK_SAMPLES.map((message) => [3, message]));
  });

  it('sendAll writes a batch of frames in one write, in order; an invalid one rejects, the rest go', async () => {
    const { server, messages } = await startServer({ heartbeatIntervalMs: 0 });
    const client = await startClient(server.port, { rank: 2, heartbeatIntervalMs: 0 });
    // Count the socket's writes: a corked batch leaves as one _writev.
    const socket = (client as unknown as { connection: { socket: Socket } }).connection.socket as Socket & {
      _write: (...args: unknown[]) => void;
      _writev: (...args: unknown[]) => void;
    };
    const writes = { single: 0, vectored: 0 };
    const write = socket._write.bind(socket);
    const writev = socket._writev.bind(socket);
    socket._write = (...args) => {
      writes.single += 1;
      write(...args);
    };
    socket._writev = (...args) => {
      writes.vectored += 1;
      writev(...args);
    };
    const batch = RANK_SAMPLES.slice(0, 4);
    await client.sendAll(batch);
    expect(writes).toEqual({ single: 0, vectored: 1 });
    await eventually(() => messages.length === batch.length);
    expect(messages).toEqual(batch.map((message) => [2, message]));

    const invalid = { type: 'Heartbeat', stepCount: -1 } as unknown as RankMessage;
    const rejected = await caught(() => client.sendAll([batch[0]!, invalid, batch[1]!]));
    expect(rejected.code).toBe('ERR_INVALID_ARGUMENT');
    await eventually(() => messages.length === batch.length + 2);
    expect(messages.slice(batch.length)).toEqual([
      [2, batch[0]],
      [2, batch[1]],
    ]);
    await client.sendAll([]);
  });

  it('broadcasts to every connected rank', async () => {
    const { server } = await startServer({ heartbeatIntervalMs: 0 });
    const clients = await Promise.all([0, 1, 2, 3].map((rank) => startClient(server.port, { rank })));
    await server.waitForRanks(4, { timeoutMs: 2000 });
    expect(await server.broadcast({ type: 'SetGlobalStep', globalStep: 77 })).toEqual([0, 1, 2, 3]);
    for (const client of clients)
      expect(await client.receive({ timeoutMs: 2000 })).toEqual({ type: 'SetGlobalStep', globalStep: 77 });
  });

  it('refuses to send to an unknown rank or an invalid message', async () => {
    const { server } = await startServer();
    await startClient(server.port, { rank: 0 });
    const unknown = await caught(() => server.send(2, { type: 'SyncNow' }));
    expect(unknown.code).toBe('ERR_RANK_FAILED');
    expect(unknown.message).toMatchInlineSnapshot(`
      "ControlServer.send: cannot send SyncNow: rank 2 is not connected
        expected: one of the connected ranks [0]
        got: 2"
    `);
    const invalid = await caught(() => server.broadcast({ type: 'SetGlobalStep', globalStep: -1 }));
    expect(invalid.code).toBe('ERR_INVALID_ARGUMENT');
  });

  it('sends heartbeats both ways on timers, and the beacon is not queued', async () => {
    const { server, messages } = await startServer({ heartbeatIntervalMs: 20 });
    const client = await startClient(server.port, { rank: 0, heartbeatIntervalMs: 20 });
    client.stepCount = 42;
    await eventually(
      () => messages.some(([, message]) => message.type === 'Heartbeat' && message.stepCount === 42),
      2000,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(client.pending).toBe(0);
    expect(Date.now() - server.lastHeardAt(0)!).toBeLessThan(500);
  });

  it('bounds every wait: receive, a silent rank, a silent coordinator', async () => {
    const { server } = await startServer({ heartbeatIntervalMs: 0, idleTimeoutMs: 150 });
    const client = await startClient(server.port, { rank: 0, heartbeatIntervalMs: 0 });
    const waited = await caught(() => client.receive({ timeoutMs: 50 }));
    expect(waited.message).toMatchInlineSnapshot(
      `"wire: waiting for a coordinator message timed out after 50 ms (the coordinator sent nothing)"`,
    );
    const [rank, dropped] = await once(server, 'rankDisconnected');
    expect(rank).toBe(0);
    expect(dropped.code).toBe('ERR_TIMEOUT');
    expect(dropped.message).toMatchInlineSnapshot(
      `"wire: rank 0's control channel timed out after 150 ms (no frame, not even a heartbeat)"`,
    );
    await eventually(() => client.isClosed, 2000, 'the rank to see the drop');

    const quiet = await startServer({ heartbeatIntervalMs: 0 });
    const lonely = await startClient(quiet.server.port, {
      rank: 0,
      heartbeatIntervalMs: 0,
      coordinatorTimeoutMs: 100,
    });
    const closed = new Promise((resolve) => lonely.onClose(resolve));
    const error = (await closed) as Error;
    expect(error.message).toMatchInlineSnapshot(
      `"wire: the control channel timed out after 100 ms (no frame from the coordinator, not even its heartbeat)"`,
    );
  });

  it('retries until the coordinator listens, and gives up after the connect timeout', async () => {
    const port = await freePort();
    const connecting = ControlClient.connect({ port, secret, rank: 0, worldSize: 4, retryDelayMs: 20 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { server } = await startServer({ port });
    const client = await connecting;
    cleanups.push(() => client.close());
    expect(server.connectedRanks()).toEqual([0]);

    const nowhere = await freePort();
    const started = Date.now();
    const error = await caught(() =>
      ControlClient.connect({
        port: nowhere,
        secret,
        rank: 0,
        worldSize: 4,
        connectTimeoutMs: 300,
        retryDelayMs: 20,
      }),
    );
    expect(error.code).toBe('ERR_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(2000);
    expect(error.message).toMatch(
      /^wire: connecting to the coordinator at 127\.0\.0\.1:\d+ timed out after 300 ms \(\d+ attempt\(s\), last: connect ECONNREFUSED/,
    );
  });

  it('drops only the connection that sent a bad frame', async () => {
    const { server, errors, messages } = await startServer({ heartbeatIntervalMs: 0 });
    const good = await startClient(server.port, { rank: 0, heartbeatIntervalMs: 0 });
    const victim = await rawRank(server.port, secret, 1, 4);
    const garbage = await rawConnect(server.port);
    garbage.on('error', () => {});
    garbage.write('GET /state.json HTTP/1.1\r\nHost: x\r\n\r\n');
    await closedSocket(garbage);
    // A rank whose signed frame fails validation is dropped too, alone.
    const disconnected = once(server, 'rankDisconnected');
    victim.socket.write(victim.frame(MessageKind.Batch, Uint8Array.of(0x91, 0x01)));
    const [rank, error] = await disconnected;
    expect(rank).toBe(1);
    expect((error as WireError).reason).toBe('body');
    expect(errors.map((event) => [event.rank, (event.error as WireError).reason])).toEqual([
      [undefined, 'magic'],
      [1, 'body'],
    ]);
    await good.send({ type: 'Heartbeat', stepCount: 5 });
    await server.send(0, { type: 'SyncNow' });
    expect(await good.receive({ timeoutMs: 2000 })).toEqual({ type: 'SyncNow' });
    await eventually(() => messages.length === 1);
    expect(server.connectedRanks()).toEqual([0]);
  });

  it('closes in order from either side', async () => {
    const { server } = await startServer();
    const client = await startClient(server.port, { rank: 0 });
    const disconnected = once(server, 'rankDisconnected');
    await client.send({ type: 'Exiting' });
    await client.close();
    expect((await disconnected)[1]).toBeUndefined();
    // Closing without Exiting reads as a rank that died.
    const abrupt = await startClient(server.port, { rank: 0 });
    const lost = once(server, 'rankDisconnected');
    await abrupt.close();
    expect(((await lost)[1] as { code?: string } | undefined)?.code).toBe('ERR_RANK_FAILED');
    const again = await startClient(server.port, { rank: 0 });
    const closed = new Promise((resolve) => again.onClose(resolve));
    await server.close();
    expect(await closed).toBeUndefined();
    expect((await caught(() => again.send({ type: 'Exiting' }))).code).toBe('ERR_IO');
  });
});
