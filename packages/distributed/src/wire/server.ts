import { EventEmitter } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import { BULK_MAC_CAPABILITY } from './bulk-mac.js';
import { decodeMessage, kindsOf } from './codec.js';
import { WireConnection } from './connection.js';
import { DATA_KINDS, DataChannel, type DataChannelOptions } from './data-channel.js';
import { timeoutError, WireError } from './errors.js';
import { MAX_HANDSHAKE_PAYLOAD_BYTES, MAX_PAYLOAD_BYTES, PROTOCOL_VERSION } from './frame.js';
import {
  BOOTSTRAP_CAPABILITY,
  checkHello,
  createNonce,
  DEFAULT_HANDSHAKE_TIMEOUT_MS,
  deriveSessionKeys,
  HELLO_KINDS,
} from './handshake.js';
import {
  type ChannelName,
  type CoordinatorMessage,
  type Hello,
  MessageKind,
  type RankMessage,
} from './messages.js';
import { DEFAULT_WRITE_TIMEOUT_MS } from './writer.js';

/** Kinds a coordinator accepts on a control connection after the handshake. */
const RANK_KINDS = kindsOf('rank');

/** Options of `ControlServer.listen`. */
export interface ControlServerOptions {
  /** The run secret (`createRunSecret()`), shared with every rank. */
  secret: Uint8Array;
  /** Ranks of the run; `Hello`s must agree. */
  worldSize: number;
  /** Address to bind. Default `127.0.0.1`. */
  host?: string;
  /** Port to bind; 0 picks a free one (read `port` after listening). Default 0. */
  port?: number;
  /** Capabilities announced in `Welcome`. Default none. */
  capabilities?: string[];
  /** Bound on a connection's handshake, ms. Default 10 000. */
  handshakeTimeoutMs?: number;
  /** Cadence of the `CoordHeartbeat` beacon to every rank, ms; 0 turns it off. Default 1000. */
  heartbeatIntervalMs?: number;
  /** A control connection silent this long is dropped with ERR_TIMEOUT, ms; 0 never. Default 30 000. */
  idleTimeoutMs?: number;
  /** Bound on each write stall, ms. Default 30 000. */
  writeTimeoutMs?: number;
  /**
   * Connections still in their handshake beyond this are refused at once. Default 256.
   * Before its handshake a connection may send frames of at most
   * `MAX_HANDSHAKE_PAYLOAD_BYTES` (16 KiB; a larger one is refused with `ERR_WIRE` and the
   * connection reset), so pending handshakes hold at most `maxPendingHandshakes × 16 KiB`.
   */
  maxPendingHandshakes?: number;
  /** Extra admission rule: return a reason to refuse a `Hello`, or `undefined` to admit it. */
  admit?: (hello: Hello) => string | undefined;
  /** Options of the data channels the server accepts. */
  dataChannel?: DataChannelOptions;
}

/** A dropped connection, as reported by the `'connectionError'` event. */
export interface ConnectionErrorEvent {
  /** `ERR_WIRE` (a `WireError`) for a refused frame or handshake, `ERR_TIMEOUT` or `ERR_IO` otherwise. */
  error: FlodlError;
  /** `address:port` of the peer. */
  peer: string;
  /** The rank, when the handshake had completed. */
  rank: number | undefined;
  /** The channel, when the handshake had completed. */
  channel: ChannelName | undefined;
}

/** Events of `ControlServer`. */
export interface ControlServerEvents {
  /** A rank completed the handshake of its control channel. */
  rankConnected: [rank: number, hello: Hello];
  /** A message from a rank, in the order the rank sent them. */
  message: [rank: number, message: RankMessage];
  /**
   * A rank's control channel ended: `error` is undefined for an orderly close (an `Exiting`
   * before the close, or a setup connection announcing `BOOTSTRAP_CAPABILITY`); `hello` is
   * the connection's.
   */
  rankDisconnected: [rank: number, error: FlodlError | undefined, hello: Hello];
  /** A rank opened its data channel. */
  dataChannel: [rank: number, channel: DataChannel];
  /** A connection was dropped for a bad frame, a failed handshake, a timeout or an I/O error. */
  connectionError: [event: ConnectionErrorEvent];
}

/** Counters of what the server has seen. */
export interface ControlServerStats {
  connectionsAccepted: number;
  handshakesCompleted: number;
  handshakesRefused: number;
  /** Connections dropped for an ERR_WIRE error (bad frames and refused handshakes). */
  wireErrors: number;
  framesReceived: number;
}

interface RankEntry {
  connection: WireConnection;
  hello: Hello;
}

/**
 * The coordinator's socket layer: listens on one port, runs the handshake of every
 * connection, authenticates every frame, emits typed messages per rank and sends
 * messages to one rank or all. A malformed frame drops that connection only (with a
 * `'connectionError'` event); the server keeps serving everyone else.
 *
 * @example
 * ```ts
 * const server = await ControlServer.listen({ secret, worldSize: 2 });
 * server.on('message', (rank, message) => { if (message.type === 'Batch') elche.report(rank, message); });
 * await server.waitForRanks(2, { timeoutMs: 60_000 });
 * await server.broadcast({ type: 'StartEpoch', plan: { epoch: 0, partitionOffset: 0, partitionSize: 30_000 } });
 * ```
 */
export class ControlServer extends EventEmitter<ControlServerEvents> {
  /** Counters, for logs and tests. */
  readonly stats: ControlServerStats = {
    connectionsAccepted: 0,
    handshakesCompleted: 0,
    handshakesRefused: 0,
    wireErrors: 0,
    framesReceived: 0,
  };
  private readonly ranks = new Map<number, RankEntry>();
  private readonly dataChannels = new Map<number, DataChannel>();
  private readonly connections = new Set<WireConnection>();
  private pendingHandshakes = 0;
  private readonly timers: NodeJS.Timeout[] = [];
  private closing = false;
  private lastLogAt = 0;
  private suppressedLogs = 0;

  private constructor(
    private readonly server: Server,
    private readonly options: Required<Omit<ControlServerOptions, 'admit' | 'dataChannel'>> &
      Pick<ControlServerOptions, 'admit' | 'dataChannel'>,
  ) {
    super();
    server.on('connection', (socket) => this.accept(socket));
    if (options.heartbeatIntervalMs > 0) {
      this.timers.push(setInterval(() => this.beat(), options.heartbeatIntervalMs).unref());
    }
    if (options.idleTimeoutMs > 0) {
      const every = Math.max(10, Math.min(1000, options.idleTimeoutMs / 4));
      this.timers.push(setInterval(() => this.dropSilentRanks(), every).unref());
    }
  }

  /**
   * Binds the port and starts serving.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for a bad secret, world size or option
   * @throws FlodlError ERR_IO when the port cannot be bound
   */
  static async listen(options: ControlServerOptions): Promise<ControlServer> {
    if (!(options.secret instanceof Uint8Array) || options.secret.length < 16) {
      throw invalidArgument(
        'ControlServer.listen',
        'secret',
        'the run secret (createRunSecret())',
        options.secret,
      );
    }
    if (!Number.isInteger(options.worldSize) || options.worldSize < 1) {
      throw invalidArgument('ControlServer.listen', 'worldSize', 'a positive integer', options.worldSize);
    }
    const resolved = {
      secret: options.secret,
      worldSize: options.worldSize,
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 0,
      capabilities: options.capabilities ?? [],
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? DEFAULT_HANDSHAKE_TIMEOUT_MS,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 1000,
      idleTimeoutMs: options.idleTimeoutMs ?? 30_000,
      writeTimeoutMs: options.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS,
      maxPendingHandshakes: options.maxPendingHandshakes ?? 256,
      admit: options.admit,
      dataChannel: options.dataChannel,
    };
    const server = createServer({ noDelay: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error) =>
        reject(
          new FlodlError('ERR_IO', `cannot listen on ${resolved.host}:${resolved.port}: ${error.message}`, {
            op: 'ControlServer.listen',
            cause: error,
          }),
        ),
      );
      server.listen(resolved.port, resolved.host, () => resolve());
    });
    return new ControlServer(server, resolved);
  }

  /** The bound port. */
  get port(): number {
    const address = this.server.address();
    return typeof address === 'object' && address !== null ? address.port : 0;
  }

  /** The bound address. */
  get host(): string {
    return this.options.host;
  }

  /** Ranks whose control channel is connected, ascending. */
  connectedRanks(): number[] {
    return [...this.ranks.keys()].sort((left, right) => left - right);
  }

  /** The `Hello` a connected rank sent (host, pid, capabilities), if connected. */
  helloOf(rank: number): Hello | undefined {
    return this.ranks.get(rank)?.hello;
  }

  /** When a connected rank's last frame arrived (ms since the epoch), if connected. */
  lastHeardAt(rank: number): number | undefined {
    return this.ranks.get(rank)?.connection.lastHeardAt;
  }

  /** The data channel of `rank`, if it has opened one. */
  dataChannelOf(rank: number): DataChannel | undefined {
    return this.dataChannels.get(rank);
  }

  /**
   * Sends `message` to `rank`. Resolves when the socket can take more (backpressure).
   *
   * @throws FlodlError ERR_RANK_FAILED when the rank is not connected
   * @throws FlodlError ERR_INVALID_ARGUMENT for an invalid message
   * @throws FlodlError ERR_TIMEOUT when the rank stops reading (it is then dropped)
   */
  send(rank: number, message: CoordinatorMessage): Promise<void> {
    const entry = this.ranks.get(rank);
    if (entry === undefined) {
      return Promise.reject(
        new FlodlError('ERR_RANK_FAILED', `cannot send ${message?.type}: rank ${rank} is not connected`, {
          op: 'ControlServer.send',
          expected: `one of the connected ranks [${this.connectedRanks().join(', ')}]`,
          got: String(rank),
        }),
      );
    }
    return entry.connection.send(message);
  }

  /**
   * Sends `message` to every connected rank. A rank that fails is dropped and reported by
   * its `'rankDisconnected'` event; the others still get the message.
   *
   * @returns the ranks the message was delivered to the socket of
   * @throws FlodlError ERR_INVALID_ARGUMENT for an invalid message (sent to nobody)
   */
  async broadcast(message: CoordinatorMessage): Promise<number[]> {
    const ranks = this.connectedRanks();
    const results = await Promise.allSettled(ranks.map((rank) => this.send(rank, message)));
    const invalid = results.find(
      (result) =>
        result.status === 'rejected' &&
        FlodlError.isInstance(result.reason) &&
        result.reason.code === 'ERR_INVALID_ARGUMENT',
    );
    if (invalid?.status === 'rejected') throw invalid.reason;
    return ranks.filter((_, index) => results[index]?.status === 'fulfilled');
  }

  /**
   * Resolves once `ranks` (a count, or a list of rank ids) have connected their control
   * channels, bounded by `timeoutMs`.
   *
   * @throws FlodlError ERR_TIMEOUT naming the ranks still missing
   */
  waitForRanks(ranks: number | readonly number[], options: { timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? 60_000;
    const wanted = typeof ranks === 'number' ? Array.from({ length: ranks }, (_, rank) => rank) : [...ranks];
    const missing = (): number[] => wanted.filter((rank) => !this.ranks.has(rank));
    if (missing().length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const check = (): void => {
        if (missing().length > 0) return;
        clearTimeout(timer);
        this.off('rankConnected', check);
        resolve();
      };
      const timer = setTimeout(() => {
        this.off('rankConnected', check);
        reject(timeoutError('waiting for ranks', timeoutMs, `still missing rank(s) ${missing().join(', ')}`));
      }, timeoutMs);
      this.on('rankConnected', check);
    });
  }

  /** Drops `rank`'s connections (control and data) at once. */
  disconnect(rank: number, reason = 'disconnected by the coordinator'): void {
    const error = new FlodlError('ERR_RANK_FAILED', `rank ${rank}: ${reason}`, {
      op: 'ControlServer.disconnect',
    });
    this.ranks.get(rank)?.connection.fail(error);
    this.dataChannels.get(rank)?.close();
  }

  /**
   * Stops listening and closes every connection in order, destroying those that do not
   * close within `timeoutMs`.
   */
  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    for (const timer of this.timers) clearInterval(timer);
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    const connections = [...this.connections];
    const ended = Promise.all(
      connections.map((connection) => new Promise<void>((resolve) => connection.onClose(() => resolve()))),
    );
    for (const connection of connections) connection.end();
    const timeoutMs = options.timeoutMs ?? 5000;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
    for (const connection of connections) if (!connection.closed) connection.socket.destroy();
    await closed;
  }

  private accept(socket: Socket): void {
    this.stats.connectionsAccepted += 1;
    if (this.closing || this.pendingHandshakes >= this.options.maxPendingHandshakes) {
      socket.resetAndDestroy();
      return;
    }
    const connection = new WireConnection(socket, {
      key: this.options.secret,
      acceptedKinds: HELLO_KINDS,
      acceptedFrom: 'before the handshake',
      // An unauthenticated peer gets no room for a bulk payload.
      maxPayloadBytes: MAX_HANDSHAKE_PAYLOAD_BYTES,
      writeTimeoutMs: this.options.writeTimeoutMs,
    });
    this.connections.add(connection);
    this.pendingHandshakes += 1;
    let handshaking = true;
    const endHandshake = (): void => {
      if (!handshaking) return;
      handshaking = false;
      this.pendingHandshakes -= 1;
      clearTimeout(timer);
    };
    const timer = setTimeout(() => {
      connection.fail(
        timeoutError('the handshake', this.options.handshakeTimeoutMs, `no Hello from ${connection.peer}`),
      );
    }, this.options.handshakeTimeoutMs);
    let identity: { rank: number; channel: ChannelName } | undefined;
    let refused = false;
    // A peer of another protocol version learns ours before we hang up.
    connection.farewell = (error) =>
      handshaking && WireError.isInstance(error) && error.reason === 'version'
        ? { type: 'Reject', protocolVersion: PROTOCOL_VERSION, reason: error.message.slice(0, 1024) }
        : undefined;
    connection.onClose((error) => {
      endHandshake();
      this.connections.delete(connection);
      if (error && !refused) this.report(error, connection.peer, identity);
    });
    connection.onFrame = (frame) => {
      this.stats.framesReceived += 1;
      const hello = decodeMessage(frame.kind, frame.payload) as Hello;
      const refusal = checkHello(hello, this.options.worldSize) ?? this.admissionRefusal(hello);
      if (refusal !== undefined) {
        this.stats.handshakesRefused += 1;
        refused = true;
        endHandshake();
        // Tell the rank why before hanging up; a refusal is an orderly close, not a reset.
        connection
          .send({ type: 'Reject', protocolVersion: PROTOCOL_VERSION, reason: refusal })
          .catch(() => {});
        connection.reader.accept(new Set(), 'after a refused handshake');
        connection.hangUp();
        this.report(
          new WireError('handshake', `refused a Hello: ${refusal}`, { got: describeHello(hello) }),
          connection.peer,
          undefined,
        );
        return;
      }
      const serverNonce = createNonce();
      // A data channel whose rank offers the fast bulk tag gets it (echoed in the Welcome).
      const bulkMac = hello.channel === 'data' && hello.capabilities.includes(BULK_MAC_CAPABILITY);
      connection
        .send({
          type: 'Welcome',
          protocolVersion: PROTOCOL_VERSION,
          rank: hello.rank,
          worldSize: this.options.worldSize,
          nonce: serverNonce,
          capabilities: bulkMac
            ? [...this.options.capabilities, BULK_MAC_CAPABILITY]
            : this.options.capabilities,
        })
        .catch(() => {});
      const keys = deriveSessionKeys(this.options.secret, hello.nonce, serverNonce);
      connection.rekey(keys.clientToServer, keys.serverToClient);
      if (bulkMac) connection.useBulkMac(MessageKind.TensorChunk);
      endHandshake();
      connection.reader.setMaxPayload(MAX_PAYLOAD_BYTES);
      this.stats.handshakesCompleted += 1;
      identity = { rank: hello.rank, channel: hello.channel };
      if (hello.channel === 'control') this.attachControl(connection, hello);
      else this.attachData(connection, hello);
    };
  }

  private admissionRefusal(hello: Hello): string | undefined {
    const taken =
      hello.channel === 'control' ? this.ranks.has(hello.rank) : this.dataChannels.has(hello.rank);
    if (taken) return `rank ${hello.rank} already has a ${hello.channel} channel`;
    return this.options.admit?.(hello);
  }

  private attachControl(connection: WireConnection, hello: Hello): void {
    const rank = hello.rank;
    connection.reader.accept(RANK_KINDS, 'from a rank');
    this.ranks.set(rank, { connection, hello });
    // A setup connection leaves without Exiting by design.
    let saidExiting = hello.capabilities.includes(BOOTSTRAP_CAPABILITY);
    connection.onFrame = (frame) => {
      this.stats.framesReceived += 1;
      const message = decodeMessage(frame.kind, frame.payload) as RankMessage;
      if (message.type === 'Exiting') saidExiting = true;
      this.deliver(() => this.emit('message', rank, message));
    };
    connection.onClose((closeError) => {
      if (this.ranks.get(rank)?.connection === connection) this.ranks.delete(rank);
      // A socket that ends without an Exiting message is a rank that died (a killed process's
      // socket is closed by the kernel, often with a plain FIN), not an orderly leave.
      const error =
        closeError ??
        (saidExiting
          ? undefined
          : new FlodlError('ERR_RANK_FAILED', `rank ${rank} disconnected without saying Exiting`, {
              op: 'ControlServer',
              expected: 'an Exiting message before the connection closes',
              got: 'the connection closed',
            }));
      this.deliver(() => this.emit('rankDisconnected', rank, error, hello));
    });
    this.deliver(() => this.emit('rankConnected', rank, hello));
  }

  private attachData(connection: WireConnection, hello: Hello): void {
    const rank = hello.rank;
    connection.reader.accept(DATA_KINDS, 'on a data channel');
    const channel = new DataChannel(connection, rank, this.options.dataChannel);
    this.dataChannels.set(rank, channel);
    connection.onClose(() => {
      if (this.dataChannels.get(rank) === channel) this.dataChannels.delete(rank);
    });
    this.deliver(() => this.emit('dataChannel', rank, channel));
  }

  /** Runs a listener call; a throwing listener is the application's bug, not the peer's frame. */
  private deliver(call: () => void): void {
    try {
      call();
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  private report(
    error: FlodlError,
    peer: string,
    identity: { rank: number; channel: ChannelName } | undefined,
  ): void {
    if (error.code === 'ERR_WIRE') this.stats.wireErrors += 1;
    const event: ConnectionErrorEvent = { error, peer, rank: identity?.rank, channel: identity?.channel };
    if (this.listenerCount('connectionError') > 0) {
      this.deliver(() => this.emit('connectionError', event));
      return;
    }
    // Nobody listens: log, at most once a second, so a flood cannot flood the log.
    const now = Date.now();
    if (now - this.lastLogAt < 1000) {
      this.suppressedLogs += 1;
      return;
    }
    const suppressed = this.suppressedLogs > 0 ? ` (${this.suppressedLogs} similar suppressed)` : '';
    this.lastLogAt = now;
    this.suppressedLogs = 0;
    console.warn(`[flodl] dropped connection from ${peer}${suppressed}: ${error.message}`);
  }

  private beat(): void {
    for (const { connection } of this.ranks.values()) {
      // A rank still draining earlier frames needs no extra beacon; skipping keeps buffers bounded.
      if (connection.socket.writableLength === 0) connection.send({ type: 'CoordHeartbeat' }).catch(() => {});
    }
  }

  private dropSilentRanks(): void {
    const now = Date.now();
    for (const [rank, { connection }] of this.ranks) {
      const silentMs = now - connection.lastHeardAt;
      if (silentMs > this.options.idleTimeoutMs) {
        connection.fail(
          timeoutError(
            `rank ${rank}'s control channel`,
            this.options.idleTimeoutMs,
            'no frame, not even a heartbeat',
          ),
        );
      }
    }
  }
}

function describeHello(hello: Hello): string {
  return `rank ${hello.rank} of ${hello.worldSize}, ${hello.channel} channel, protocol ${hello.protocolVersion}, from ${hello.host} pid ${hello.pid}`;
}
