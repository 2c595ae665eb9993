import type { KeyObject } from 'node:crypto';
import type { Writable } from 'node:stream';
import { invalidArgument } from '@flodl/tensor-native';
import { type BulkMac, bulkTagger } from './bulk-mac.js';
import { closedError, timeoutError } from './errors.js';
import {
  encodeFrameHeader,
  FRAME_HEADER_BYTES,
  HEADER_OFFSET,
  MAX_PAYLOAD_BYTES,
  SIGNED_HEADER_BYTES,
  toKeyObject,
  type WireKey,
  writeSignedHeader,
} from './frame.js';

/** Default bound on waiting for a peer to read (a "write stall"), ms. */
export const DEFAULT_WRITE_TIMEOUT_MS = 30_000;

/** Options of `sendFrame`. */
export interface SendOptions {
  /** How long to wait for `'drain'` when the socket's buffer is full. Default 30 000 ms. */
  timeoutMs?: number;
}

/**
 * Writes the parts of one frame back to back (corked into one `writev`, never joined) and,
 * when `write` reports a full buffer, waits for `'drain'`, bounded by `timeoutMs`.
 *
 * @throws FlodlError ERR_IO when the socket is closed before or while waiting
 * @throws FlodlError ERR_TIMEOUT when the peer does not read within `timeoutMs`
 * @example await sendFrame(socket, [header, payload], { timeoutMs: 10_000 });
 */
export function sendFrame(
  socket: Writable,
  parts: readonly Uint8Array[],
  options: SendOptions = {},
): Promise<void> {
  if (socket.destroyed || socket.writableEnded) return Promise.reject(closedError('sendFrame'));
  socket.cork();
  let flowing = true;
  for (const part of parts) if (part.length > 0) flowing = socket.write(part);
  socket.uncork();
  return flowing ? Promise.resolve() : waitForDrain(socket, options.timeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS);
}

/**
 * Resolves once `socket` emits `'drain'` (or has nothing buffered), bounded by `timeoutMs`.
 *
 * @throws FlodlError ERR_IO when the socket closes first
 * @throws FlodlError ERR_TIMEOUT when it does not drain within `timeoutMs`
 */
export function waitForDrain(socket: Writable, timeoutMs: number): Promise<void> {
  if (!socket.writableNeedDrain) return Promise.resolve();
  // Every waiter of one socket shares one wait: one set of listeners however many frames queue.
  const pending = DRAINS.get(socket);
  if (pending) return pending;
  const wait = new Promise<void>((resolve, reject) => {
    const cleanup = (): void => {
      clearTimeout(timer);
      socket.off('drain', onDrain);
      socket.off('close', onClose);
      socket.off('error', onClose);
    };
    const onDrain = (): void => {
      cleanup();
      resolve();
    };
    const onClose = (error?: unknown): void => {
      cleanup();
      reject(closedError('waiting for the peer to read', error));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(
        timeoutError('waiting for the peer to read', timeoutMs, 'the peer stopped reading: a write stall'),
      );
    }, timeoutMs);
    socket.on('drain', onDrain);
    socket.on('close', onClose);
    socket.on('error', onClose);
  });
  DRAINS.set(socket, wait);
  const forget = (): void => {
    if (DRAINS.get(socket) === wait) DRAINS.delete(socket);
  };
  wait.then(forget, forget);
  return wait;
}

const DRAINS = new WeakMap<Writable, Promise<void>>();

/** Options of `FrameWriter`. */
export interface FrameWriterOptions {
  /** The key frames are signed with. Change it with `setKey` (after a handshake). */
  key: WireKey;
  /** Bound on each wait for `'drain'`. Default 30 000 ms. */
  writeTimeoutMs?: number;
  /** The sequence number of the first frame. Default 0. */
  firstSequence?: number;
}

/**
 * Signs and writes frames to one socket: numbers them, tags them, respects backpressure.
 * Encoding happens synchronously inside `write`, so frames go out in call order even when
 * callers do not await; awaiting each `write` keeps the socket's buffer bounded.
 *
 * @example
 * ```ts
 * const writer = new FrameWriter(socket, { key: secret });
 * await writer.write(MessageKind.SyncNow, payload);
 * ```
 */
export class FrameWriter {
  private key: KeyObject;
  private sequence: number;
  /** Times the 32-bit sequence wrapped (part of a bulk frame's nonce). */
  private wraps = 0;
  private bulk: BulkMac | undefined;
  private readonly writeTimeoutMs: number;

  constructor(
    private readonly socket: Writable,
    options: FrameWriterOptions,
  ) {
    this.key = toKeyObject(options.key);
    this.sequence = options.firstSequence ?? 0;
    this.writeTimeoutMs = options.writeTimeoutMs ?? DEFAULT_WRITE_TIMEOUT_MS;
  }

  /** The sequence number the next frame gets. */
  get nextSequence(): number {
    return this.sequence;
  }

  /** Signs later frames with `key`. */
  setKey(key: WireKey): void {
    this.key = toKeyObject(key);
  }

  /** Tags later frames of `bulk.kind` with ChaCha20-Poly1305 (see `BULK_MAC_CAPABILITY`). */
  setBulkMac(bulk: BulkMac | undefined): void {
    this.bulk = bulk;
  }

  /**
   * Writes one frame whose payload is `payload` (one buffer, or parts sent back to back).
   * Resolves when the socket can take more; the frame is queued in order either way.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for a payload over the 16 MiB cap
   * @throws FlodlError ERR_IO when the socket is closed
   * @throws FlodlError ERR_TIMEOUT when the peer stops reading for `writeTimeoutMs`
   */
  write(kind: number, payload: Uint8Array | readonly Uint8Array[]): Promise<void> {
    const parts = payload instanceof Uint8Array ? [payload] : payload;
    let length = 0;
    for (const part of parts) length += part.length;
    if (length > MAX_PAYLOAD_BYTES) {
      return Promise.reject(
        invalidArgument(
          'FrameWriter.write',
          'payload',
          `at most ${MAX_PAYLOAD_BYTES} bytes`,
          `${length} bytes`,
        ),
      );
    }
    if (this.socket.destroyed || this.socket.writableEnded)
      return Promise.reject(closedError('FrameWriter.write'));
    const header =
      this.bulk?.kind === kind
        ? this.bulkHeader(this.bulk, kind, parts, length)
        : encodeFrameHeader(this.key, { kind, sequence: this.sequence }, parts, length);
    this.sequence = (this.sequence + 1) >>> 0;
    if (this.sequence === 0) this.wraps += 1;
    return sendFrame(this.socket, [header, ...parts], { timeoutMs: this.writeTimeoutMs });
  }

  private bulkHeader(bulk: BulkMac, kind: number, parts: readonly Uint8Array[], length: number): Uint8Array {
    const header = new Uint8Array(FRAME_HEADER_BYTES);
    writeSignedHeader(header, { kind, sequence: this.sequence }, length);
    const tagger = bulkTagger(bulk, this.sequence, this.wraps);
    tagger.update(header.subarray(0, SIGNED_HEADER_BYTES));
    for (const part of parts) tagger.update(part);
    header.set(tagger.digest(), HEADER_OFFSET.tag);
    return header;
  }
}
