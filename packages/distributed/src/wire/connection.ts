import type { Socket } from 'node:net';
import { FlodlError } from '@flodl/tensor-native';
import { deriveBulkKey } from './bulk-mac.js';
import { encodeMessage } from './codec.js';
import { closedError, WireError } from './errors.js';
import { type Frame, toKeyObject, type WireKey } from './frame.js';
import type { WireMessage } from './messages.js';
import { FrameReader } from './reader.js';
import type { SocketReads } from './socket-reads.js';
import { DEFAULT_WRITE_TIMEOUT_MS, FrameWriter } from './writer.js';

/** Options of `WireConnection`. */
export interface WireConnectionOptions {
  /** The key of the handshake frames (the run secret). */
  key: WireKey;
  /** Kinds accepted before the handshake completes. */
  acceptedKinds: ReadonlySet<number>;
  /** Who sends them, for error messages (`from a rank`). */
  acceptedFrom: string;
  /** Payload cap. Default 16 MiB. */
  maxPayloadBytes?: number;
  /** Bound on each write stall. Default 30 000 ms. */
  writeTimeoutMs?: number;
  /**
   * The socket's reads when it was dialed with `onread: reads.onread`: bulk payloads are then
   * read straight into their destination. Without it the connection reads `'data'` events.
   */
  reads?: SocketReads;
}

/**
 * Called once when the connection ends: without an error for an orderly close, with the
 * `WireError` of a rejected frame, or with the socket's own error.
 */
export type CloseHandler = (error: FlodlError | undefined) => void;

/**
 * One authenticated frame stream over a socket: the reader and writer of both ends,
 * frame dispatch, and the one rule of failure: a bad frame resets this connection (TCP
 * RST, so no TIME_WAIT piles up under a flood) and nothing else.
 *
 * Internal to the wire layer: servers, clients and data channels are built on it.
 */
export class WireConnection {
  readonly reader: FrameReader;
  readonly writer: FrameWriter;
  /** Handles each verified frame, synchronously; throwing rejects the frame. */
  onFrame: (frame: Frame) => void = () => {};
  /**
   * Chooses a last message to send before hanging up on a bad frame (e.g. a `Reject`
   * naming our protocol version); `undefined` resets the connection without a word.
   */
  farewell: ((error: FlodlError) => WireMessage | undefined) | undefined;
  /** When the last frame arrived (ms since the epoch); starts at the connection time. */
  lastHeardAt = Date.now();
  private closeHandlers: CloseHandler[] = [];
  private sessionKeys: { receive: WireKey; send: WireKey } | undefined;
  private closedWith: { error: FlodlError | undefined } | undefined;

  constructor(
    readonly socket: Socket,
    options: WireConnectionOptions,
  ) {
    this.reader = new FrameReader({
      key: options.key,
      maxPayloadBytes: options.maxPayloadBytes,
      acceptedKinds: options.acceptedKinds,
      acceptedFrom: options.acceptedFrom,
    });
    this.writer = new FrameWriter(socket, {
      key: options.key,
      writeTimeoutMs: options.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS,
    });
    socket.setNoDelay(true);
    // Catches a peer whose host vanished without a FIN on channels that carry no heartbeats.
    socket.setKeepAlive(true, KEEPALIVE_MS);
    if (options.reads) {
      options.reads.attach({
        target: () => this.reader.pendingTarget,
        deliver: (chunk) => this.receive(chunk),
      });
    } else {
      socket.on('data', (chunk: Buffer) => this.receive(chunk));
    }
    socket.on('end', () => this.receiveEnd());
    socket.on('error', (error) =>
      this.finish(
        new FlodlError('ERR_IO', `connection error: ${error.message}`, { op: 'wire', cause: error }),
      ),
    );
    socket.on('close', () => this.finish(undefined));
  }

  /** True once the connection has ended, for any reason. */
  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  /** `127.0.0.1:53122`: the peer, for messages. */
  get peer(): string {
    return `${this.socket.remoteAddress ?? '?'}:${this.socket.remotePort ?? '?'}`;
  }

  /** Registers `handler` for the end of the connection (runs at once if it has ended). */
  onClose(handler: CloseHandler): void {
    if (this.closedWith) handler(this.closedWith.error);
    else this.closeHandlers.push(handler);
  }

  /** Switches both directions to session keys (after the handshake frames). */
  rekey(receiveKey: WireKey, sendKey: WireKey): void {
    this.reader.setKey(receiveKey);
    this.writer.setKey(sendKey);
    this.sessionKeys = { receive: receiveKey, send: sendKey };
  }

  /**
   * Authenticates later frames of `kind`, both directions, with ChaCha20-Poly1305 under keys
   * derived from the session keys (after `rekey`; both peers agreed on it in the handshake).
   */
  useBulkMac(kind: number): void {
    const keys = this.sessionKeys;
    if (!keys) {
      throw new FlodlError('ERR_WIRE', 'the bulk MAC needs the session keys (after the handshake)', {
        op: 'WireConnection.useBulkMac',
      });
    }
    this.reader.setBulkMac({ kind, key: deriveBulkKey(toKeyObject(keys.receive)) });
    this.writer.setBulkMac({ kind, key: deriveBulkKey(toKeyObject(keys.send)) });
  }

  /**
   * Validates, encodes, signs and writes a message.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for an invalid message (nothing is sent)
   * @throws FlodlError ERR_IO when the connection is closed
   * @throws FlodlError ERR_TIMEOUT when the peer stops reading
   */
  send(message: WireMessage): Promise<void> {
    if (this.closedWith)
      return Promise.reject(closedError(`cannot send ${message.type}`, this.closedWith.error));
    let encoded: ReturnType<typeof encodeMessage>;
    try {
      encoded = encodeMessage(message);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.watchWrite(this.writer.write(encoded.kind, encoded.payload));
  }

  /**
   * Sends `messages` in order as one write to the socket (one `writev`, so the peer wakes once
   * for all of them), each its own frame as `send` makes it. A message that fails to encode
   * rejects its own promise; the others still go.
   */
  sendAll(messages: readonly WireMessage[]): Promise<void>[] {
    if (messages.length <= 1 || this.closedWith) return messages.map((message) => this.send(message));
    this.socket.cork();
    try {
      return messages.map((message) => this.send(message));
    } finally {
      this.socket.uncork();
    }
  }

  /** Writes a raw-payload frame (the data channel's tensor bytes). */
  sendRaw(kind: number, payload: Uint8Array): Promise<void> {
    if (this.closedWith) return Promise.reject(closedError('cannot send', this.closedWith.error));
    return this.watchWrite(this.writer.write(kind, payload));
  }

  /**
   * Drops the connection because of `error`: resets it at once and reports `error` to the
   * close handlers. Idempotent.
   */
  fail(error: FlodlError): void {
    if (this.closedWith) return;
    const farewell = this.farewell?.(error);
    this.finish(error);
    if (this.socket.destroyed) return;
    if (farewell === undefined) {
      this.socket.resetAndDestroy();
      return;
    }
    // Say why, then close in order; a peer that never closes its side is cut off shortly.
    const encoded = encodeMessage(farewell);
    this.writer.write(encoded.kind, encoded.payload).catch(() => {});
    this.hangUp();
  }

  /** Ends the connection in order: flushes what was written, then closes. */
  end(): void {
    if (!this.socket.destroyed && !this.socket.writableEnded) this.socket.end();
  }

  /** Ends in order after a last word, and destroys the socket if the peer has not closed within a grace period. */
  hangUp(): void {
    this.end();
    setTimeout(() => this.socket.destroy(), FAREWELL_GRACE_MS).unref();
  }

  private watchWrite(write: Promise<void>): Promise<void> {
    return write.catch((error: unknown) => {
      // A peer that stopped reading is as gone as one that sent garbage.
      if (FlodlError.isInstance(error) && error.code === 'ERR_TIMEOUT') this.fail(error);
      throw error;
    });
  }

  private receive(chunk: Uint8Array): void {
    if (this.closedWith) return;
    this.lastHeardAt = Date.now();
    try {
      this.reader.push(chunk, (frame) => {
        if (!this.closedWith) this.onFrame(frame);
      });
    } catch (error) {
      this.fail(asWireError(error));
    }
  }

  private receiveEnd(): void {
    if (this.closedWith) return;
    try {
      this.reader.end();
    } catch (error) {
      this.fail(asWireError(error));
      return;
    }
    // The peer closed its side in order; close ours once our writes are flushed.
    this.end();
  }

  private finish(error: FlodlError | undefined): void {
    if (this.closedWith) return;
    this.closedWith = { error };
    const handlers = this.closeHandlers;
    this.closeHandlers = [];
    for (const handler of handlers) handler(error);
  }
}

/** Idle time before TCP keepalive probes start, ms. */
const KEEPALIVE_MS = 15_000;

/** How long a peer has to read a farewell before the socket is destroyed, ms. */
const FAREWELL_GRACE_MS = 2000;

function asWireError(error: unknown): FlodlError {
  if (FlodlError.isInstance(error)) return error;
  return new WireError('body', `frame rejected: ${error instanceof Error ? error.message : String(error)}`, {
    cause: error,
  });
}
