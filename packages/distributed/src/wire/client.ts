import { connect as connectSocket, type Socket } from 'node:net';
import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import { BULK_MAC_CAPABILITY } from './bulk-mac.js';
import { decodeMessage, kindsOf } from './codec.js';
import { WireConnection } from './connection.js';
import { DATA_KINDS, DataChannel, type DataChannelOptions } from './data-channel.js';
import { closedError, timeoutError } from './errors.js';
import { clientHandshake, createHello, DEFAULT_HANDSHAKE_TIMEOUT_MS, HELLO_KINDS } from './handshake.js';
import {
  type ChannelName,
  type CoordinatorMessage,
  MessageKind,
  type RankMessage,
  type Welcome,
} from './messages.js';
import { SocketReads } from './socket-reads.js';
import { DEFAULT_WRITE_TIMEOUT_MS } from './writer.js';

/** Kinds a rank accepts on its control channel after the handshake. */
const COORDINATOR_KINDS = kindsOf('coordinator');

/** Options of `ControlClient.connect`. */
export interface ControlClientOptions {
  /** The coordinator's address. Default `127.0.0.1`. */
  host?: string;
  /** The coordinator's port. */
  port: number;
  /** The run secret (`resolveRunSecret()` in a rank process). */
  secret: Uint8Array;
  /** This process's global rank. */
  rank: number;
  /** The run's world size. */
  worldSize: number;
  /** Capabilities announced in `Hello`. Default none. */
  capabilities?: string[];
  /** Total bound on reaching the coordinator, retries included, ms. Default 30 000. */
  connectTimeoutMs?: number;
  /** First delay between connection attempts, doubling up to 1 s, ms. Default 100. */
  retryDelayMs?: number;
  /** Bound on the handshake once connected, ms. Default 10 000. */
  handshakeTimeoutMs?: number;
  /** Cadence of `Heartbeat`s, ms; 0 turns them off. Default 1000. */
  heartbeatIntervalMs?: number;
  /** The connection is dropped with ERR_TIMEOUT after this long without a frame from the coordinator, ms; 0 never. Default 30 000. */
  coordinatorTimeoutMs?: number;
  /** Bound on each write stall, ms. Default 30 000. */
  writeTimeoutMs?: number;
  /** Unread messages held before the connection is dropped as stuck. Default 65 536. */
  maxQueuedMessages?: number;
}

type Resolved = Required<Omit<ControlClientOptions, 'capabilities'>> & { capabilities: string[] };

interface Waiter {
  resolve: (message: CoordinatorMessage) => void;
  reject: (error: unknown) => void;
}

/**
 * The rank's end of the control channel: connects with retries, runs the handshake,
 * sends `RankMessage`s, queues `CoordinatorMessage`s for the rank to drain at its own
 * points (`poll`, `receive`), sends `Heartbeat`s on a timer and watches the coordinator's
 * beacon. Every wait is bounded.
 *
 * Runs on any thread: host it in a worker so heartbeats flow while the main thread is
 * inside a long native call.
 *
 * @example
 * ```ts
 * const client = await ControlClient.connect({ port, secret: resolveRunSecret(), rank, worldSize });
 * const start = await client.receive({ timeoutMs: 60_000 });
 * await client.send({ type: 'Batch', batchMs: 41.5, dataMs: 2.1, stepCount: 1, batchLoss: 0.71 });
 * await client.close();
 * ```
 */
export class ControlClient {
  /** Steps run so far, reported by every `Heartbeat`. */
  stepCount = 0;
  private readonly inbox: CoordinatorMessage[] = [];
  private readonly waiters: Waiter[] = [];
  private readonly timers: NodeJS.Timeout[] = [];
  private closeError: FlodlError | undefined;

  private constructor(
    private readonly connection: WireConnection,
    private readonly options: Resolved,
    /** The coordinator's answer to the handshake (its capabilities). */
    readonly welcome: Welcome,
  ) {
    connection.onClose((error) => this.closed(error));
    if (options.heartbeatIntervalMs > 0) {
      this.timers.push(setInterval(() => this.beat(), options.heartbeatIntervalMs).unref());
    }
    if (options.coordinatorTimeoutMs > 0) {
      const every = Math.max(10, Math.min(1000, options.coordinatorTimeoutMs / 4));
      this.timers.push(setInterval(() => this.watchCoordinator(), every).unref());
    }
  }

  /**
   * Connects to the coordinator (retrying refused connections until `connectTimeoutMs`)
   * and completes the handshake of the control channel.
   *
   * @throws FlodlError ERR_TIMEOUT when the coordinator cannot be reached or does not answer in time
   * @throws WireError ERR_WIRE `handshake` when the coordinator refuses (the reason is in the message)
   * @throws FlodlError ERR_INVALID_ARGUMENT for bad options
   */
  static async connect(options: ControlClientOptions): Promise<ControlClient> {
    const resolved = resolveOptions(options);
    return openConnection(
      resolved,
      'control',
      COORDINATOR_KINDS,
      'from the coordinator',
      (connection, welcome) => {
        const client = new ControlClient(connection, resolved, welcome);
        connection.onFrame = (frame) =>
          client.deliver(decodeMessage(frame.kind, frame.payload) as CoordinatorMessage);
        return client;
      },
    );
  }

  /** This process's rank. */
  get rank(): number {
    return this.options.rank;
  }

  /** True once the connection has ended. */
  get isClosed(): boolean {
    return this.closeError !== undefined;
  }

  /** Unread messages. */
  get pending(): number {
    return this.inbox.length;
  }

  /**
   * Sends `message` to the coordinator. Resolves when the socket can take more.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for an invalid message (nothing is sent)
   * @throws FlodlError ERR_IO when the connection is closed
   * @throws FlodlError ERR_TIMEOUT when the coordinator stops reading (the connection is dropped)
   */
  send(message: RankMessage): Promise<void> {
    return this.connection.send(message);
  }

  /**
   * Sends `messages` to the coordinator in order, written to the socket together (one system
   * call for all). Resolves when the socket can take more; the first failure rejects.
   *
   * @throws FlodlError as `send`, for the first message that fails
   */
  async sendAll(messages: readonly RankMessage[]): Promise<void> {
    await Promise.all(this.connection.sendAll(messages));
  }

  /** The next unread message, or `undefined` when there is none. Never waits. */
  poll(): CoordinatorMessage | undefined {
    return this.inbox.shift();
  }

  /**
   * The next message, waiting at most `timeoutMs` (default 30 000).
   *
   * @throws FlodlError ERR_TIMEOUT when none arrives in time
   * @throws FlodlError ERR_IO, ERR_WIRE or ERR_TIMEOUT when the connection ended (with its reason)
   */
  receive(options: { timeoutMs?: number } = {}): Promise<CoordinatorMessage> {
    const message = this.inbox.shift();
    if (message) return Promise.resolve(message);
    if (this.closeError) return Promise.reject(this.closeError);
    const timeoutMs = options.timeoutMs ?? 30_000;
    return new Promise<CoordinatorMessage>((resolve, reject) => {
      const waiter: Waiter = {
        resolve: (value) => {
          clearTimeout(timer);
          resolve(value);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(timeoutError('waiting for a coordinator message', timeoutMs, 'the coordinator sent nothing'));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /**
   * Opens this rank's data channel to the same coordinator (a second connection with its
   * own handshake and keys).
   *
   * @throws as `connect`
   */
  openDataChannel(options: DataChannelOptions = {}): Promise<DataChannel> {
    return openConnection(
      { ...this.options, capabilities: [...this.options.capabilities, BULK_MAC_CAPABILITY] },
      'data',
      DATA_KINDS,
      'on a data channel',
      (connection, welcome) => {
        // The coordinator echoes the bulk tag when it speaks it; otherwise HMAC stays on every frame.
        if (welcome.capabilities.includes(BULK_MAC_CAPABILITY))
          connection.useBulkMac(MessageKind.TensorChunk);
        return new DataChannel(connection, this.options.rank, options);
      },
    );
  }

  /**
   * Closes the control channel in order (what was sent is flushed), destroying it if the
   * coordinator does not close its side within `timeoutMs` (default 5000).
   */
  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    this.stopTimers();
    if (this.connection.closed) return;
    const done = new Promise<void>((resolve) => this.connection.onClose(() => resolve()));
    this.connection.end();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      done,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, options.timeoutMs ?? 5000))),
    ]);
    clearTimeout(timer);
    if (!this.connection.closed) this.connection.socket.destroy();
  }

  /**
   * Registers `handler` for the end of the connection: `error` is undefined for an orderly
   * close, else why (ERR_WIRE, ERR_TIMEOUT, ERR_IO).
   */
  onClose(handler: (error: FlodlError | undefined) => void): void {
    this.connection.onClose(handler);
  }

  private deliver(message: CoordinatorMessage): void {
    // The beacon is liveness only; `lastHeardAt` already recorded it.
    if (message.type === 'CoordHeartbeat') return;
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter.resolve(message);
      return;
    }
    if (this.inbox.length >= this.options.maxQueuedMessages) {
      throw new FlodlError('ERR_IO', `${this.inbox.length} coordinator messages were never read`, {
        op: 'ControlClient',
        expected: 'the rank to drain its control messages (poll or receive)',
      });
    }
    this.inbox.push(message);
  }

  private closed(error: FlodlError | undefined): void {
    this.stopTimers();
    this.closeError = error ?? closedError('the control channel');
    for (const waiter of this.waiters.splice(0)) waiter.reject(this.closeError);
  }

  private stopTimers(): void {
    for (const timer of this.timers.splice(0)) clearInterval(timer);
  }

  private beat(): void {
    // A backlog means the coordinator is still reading; another heartbeat adds nothing.
    if (this.connection.closed || this.connection.socket.writableLength > 0) return;
    this.connection.send({ type: 'Heartbeat', stepCount: this.stepCount }).catch(() => {});
  }

  private watchCoordinator(): void {
    const silentMs = Date.now() - this.connection.lastHeardAt;
    if (silentMs > this.options.coordinatorTimeoutMs) {
      this.connection.fail(
        timeoutError(
          'the control channel',
          this.options.coordinatorTimeoutMs,
          'no frame from the coordinator, not even its heartbeat',
        ),
      );
    }
  }
}

function resolveOptions(options: ControlClientOptions): Resolved {
  const op = 'ControlClient.connect';
  if (typeof options !== 'object' || options === null)
    throw invalidArgument(op, 'options', 'an object', options);
  if (!(options.secret instanceof Uint8Array) || options.secret.length < 16) {
    throw invalidArgument(op, 'secret', 'the run secret (resolveRunSecret())', options.secret);
  }
  if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65_535) {
    throw invalidArgument(op, 'port', 'an integer in [1, 65535]', options.port);
  }
  if (!Number.isInteger(options.worldSize) || options.worldSize < 1) {
    throw invalidArgument(op, 'worldSize', 'a positive integer', options.worldSize);
  }
  if (!Number.isInteger(options.rank) || options.rank < 0 || options.rank >= options.worldSize) {
    throw invalidArgument(op, 'rank', `an integer in [0, ${options.worldSize})`, options.rank);
  }
  return {
    host: options.host ?? '127.0.0.1',
    port: options.port,
    secret: options.secret,
    rank: options.rank,
    worldSize: options.worldSize,
    capabilities: options.capabilities ?? [],
    connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
    retryDelayMs: options.retryDelayMs ?? 100,
    handshakeTimeoutMs: options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
    heartbeatIntervalMs: options.heartbeatIntervalMs ?? 1000,
    coordinatorTimeoutMs: options.coordinatorTimeoutMs ?? 30_000,
    writeTimeoutMs: options.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS,
    maxQueuedMessages: options.maxQueuedMessages ?? 65_536,
  };
}

/**
 * Connects (with retries) and runs the handshake of one channel; `attach` builds the
 * channel's consumer synchronously with the `Welcome`, before any later frame is read.
 */
async function openConnection<T>(
  options: Resolved,
  channel: ChannelName,
  acceptedKinds: ReadonlySet<number>,
  acceptedFrom: string,
  attach: (connection: WireConnection, welcome: Welcome) => T,
): Promise<T> {
  const reads = new SocketReads();
  const socket = await dial(options, reads);
  const connection = new WireConnection(socket, {
    reads,
    key: options.secret,
    acceptedKinds: HELLO_KINDS,
    acceptedFrom: 'before the handshake',
    writeTimeoutMs: options.writeTimeoutMs,
  });
  const hello = createHello({
    rank: options.rank,
    worldSize: options.worldSize,
    channel,
    capabilities: options.capabilities,
  });
  let attached: T | undefined;
  await clientHandshake(
    connection,
    options.secret,
    hello,
    { acceptedKinds, acceptedFrom, attach: (welcome) => (attached = attach(connection, welcome)) },
    options.handshakeTimeoutMs,
  );
  return attached as T;
}

/** Error codes worth another attempt: the coordinator may not be listening yet. */
const RETRYABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'EPIPE',
  // One attempt that got no answer in time (dialOnce).
  'ERR_TIMEOUT',
]);

async function dial(options: Resolved, reads: SocketReads): Promise<Socket> {
  const deadline = Date.now() + options.connectTimeoutMs;
  const target = `${options.host}:${options.port}`;
  let delay = options.retryDelayMs;
  let lastError: Error | undefined;
  for (let attempt = 1; ; attempt += 1) {
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      throw timeoutError(
        `connecting to the coordinator at ${target}`,
        options.connectTimeoutMs,
        `${attempt - 1} attempt(s), last: ${lastError?.message ?? 'none'}; is the coordinator running and the port right?`,
      );
    }
    try {
      return await dialOnce(options.host, options.port, remaining, reads);
    } catch (error) {
      lastError = error as Error;
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== undefined && !RETRYABLE.has(code)) {
        throw new FlodlError(
          'ERR_IO',
          `cannot connect to the coordinator at ${target}: ${lastError.message}`,
          {
            op: 'ControlClient.connect',
            cause: error,
          },
        );
      }
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, Math.min(delay, deadline - Date.now()))));
    delay = Math.min(delay * 2, 1000);
  }
}

function dialOnce(host: string, port: number, timeoutMs: number, reads: SocketReads): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const socket = connectSocket({ host, port, noDelay: true, onread: reads.onread });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(timeoutError(`dialing ${host}:${port}`, timeoutMs, 'no answer to the connection attempt'));
    }, timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    });
  });
}
