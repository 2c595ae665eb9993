import { createHmac, type KeyObject, timingSafeEqual } from 'node:crypto';
import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import { type BulkMac, bulkTagger, type FrameTagger } from './bulk-mac.js';
import { ALL_KINDS, describeKind, kindName } from './codec.js';
import { hex32, WireError } from './errors.js';
import {
  FRAME_HEADER_BYTES,
  FRAME_MAGIC,
  FRAME_TAG_BYTES,
  type Frame,
  HEADER_OFFSET,
  MAX_PAYLOAD_BYTES,
  PROTOCOL_VERSION,
  SIGNED_HEADER_BYTES,
  toKeyObject,
  type WireKey,
} from './frame.js';

/** The parsed header of a frame whose payload is still arriving. */
export interface FrameHeader {
  version: number;
  kind: number;
  payloadLength: number;
  sequence: number;
}

/** Options of `FrameReader`. */
export interface FrameReaderOptions {
  /** The key frames must be signed with. Change it with `setKey` (after a handshake). */
  key: WireKey;
  /** Payload cap in bytes. Default and maximum `MAX_PAYLOAD_BYTES` (16 MiB). */
  maxPayloadBytes?: number;
  /** Kinds accepted; any other is rejected. Default: every kind of the protocol. */
  acceptedKinds?: ReadonlySet<number>;
  /** Who is speaking, for error messages, e.g. `from a rank`. Default `here`. */
  acceptedFrom?: string;
  /** The sequence number of the first frame. Default 0. */
  firstSequence?: number;
}

/**
 * Where the payload of a frame should be written, or `undefined` for a buffer of the
 * reader's own. Lets a consumer receive bulk payloads straight into their destination.
 * Throwing rejects the frame.
 */
export type PayloadTarget = (header: FrameHeader) => Uint8Array | undefined;

const MAGIC_BYTES = (() => {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, FRAME_MAGIC, true);
  return bytes;
})();

/**
 * Incremental decoder of a frame stream: feed it socket chunks of any size, get verified
 * frames. Frames split at any byte and many frames per chunk both work.
 *
 * Buffering is bounded: at most one 32-byte header and one payload (≤ the cap), and the
 * payload buffer is allocated only after the header passed its checks. A payload that
 * arrives whole inside one chunk is handed out as a view, without copying.
 *
 * Checks, in order, each failing with a `WireError` (ERR_WIRE) naming the field:
 * magic (byte by byte), version, kind, length (before any allocation), tag, sequence.
 * After a failure the reader is poisoned: every later call throws the same error.
 *
 * @example
 * ```ts
 * const reader = new FrameReader({ key: secret });
 * socket.on('data', (chunk) => reader.push(chunk, (frame) => handle(decodeMessage(frame.kind, frame.payload))));
 * socket.on('end', () => reader.end());
 * ```
 */
export class FrameReader {
  private key: KeyObject;
  private maxPayloadBytes: number;
  private acceptedKinds: ReadonlySet<number>;
  private acceptedFrom: string;
  private expectedSequence: number;
  /** Consumer hook for bulk payloads; see `PayloadTarget`. */
  payloadTarget: PayloadTarget | undefined;

  private readonly header = new Uint8Array(FRAME_HEADER_BYTES);
  private readonly headerView = new DataView(this.header.buffer);
  private headerFilled = 0;
  private current: FrameHeader | undefined;
  private hmac: FrameTagger | undefined;
  private bulk: BulkMac | undefined;
  /** Times the expected 32-bit sequence wrapped (part of a bulk frame's nonce). */
  private wraps = 0;
  private payload: Uint8Array | undefined;
  /** True while `payload` is the consumer's buffer (`payloadTarget`), not the reader's own. */
  private payloadIsTarget = false;
  private payloadFilled = 0;
  private failure: FlodlError | undefined;
  private frames = 0;

  constructor(options: FrameReaderOptions) {
    this.key = toKeyObject(options.key);
    const cap = options.maxPayloadBytes ?? MAX_PAYLOAD_BYTES;
    if (!Number.isInteger(cap) || cap < 0 || cap > MAX_PAYLOAD_BYTES) {
      throw invalidArgument('FrameReader', 'maxPayloadBytes', `an integer in [0, ${MAX_PAYLOAD_BYTES}]`, cap);
    }
    this.maxPayloadBytes = cap;
    this.acceptedKinds = options.acceptedKinds ?? ALL_KINDS;
    this.acceptedFrom = options.acceptedFrom ?? 'here';
    this.expectedSequence = options.firstSequence ?? 0;
  }

  /** Frames verified so far. */
  get framesRead(): number {
    return this.frames;
  }

  /** Bytes held for the frame in progress (header and payload). */
  get bufferedBytes(): number {
    return this.headerFilled + this.payloadFilled;
  }

  /** True between frames (nothing of a partial frame is buffered). */
  get atFrameBoundary(): boolean {
    return this.headerFilled === 0;
  }

  /**
   * Where the next bytes of the stream belong when a consumer's buffer is waiting for them:
   * the unfilled rest of the payload in progress when `payloadTarget` gave it one, else
   * `undefined`. A socket can read straight into it (see `SocketReads`); `push` then finds the
   * bytes already in place and does not copy them. At most the rest of this payload, so a read
   * into it never takes bytes of the next frame.
   */
  get pendingTarget(): Uint8Array | undefined {
    const current = this.current;
    if (current === undefined || this.failure !== undefined || !this.payloadIsTarget) return undefined;
    return this.payload!.subarray(this.payloadFilled, current.payloadLength);
  }

  /** Verifies later frames with `key` (the next frame on, even within the current chunk). */
  setKey(key: WireKey): void {
    this.key = toKeyObject(key);
  }

  /** Verifies later frames of `bulk.kind` with ChaCha20-Poly1305 (see `BULK_MAC_CAPABILITY`). */
  setBulkMac(bulk: BulkMac | undefined): void {
    this.bulk = bulk;
  }

  /**
   * Caps the payload of the next frame on (a frame whose header was already read keeps the
   * cap it was checked against): the server holds frames before the handshake to a few KiB.
   */
  setMaxPayload(bytes: number): void {
    if (!Number.isInteger(bytes) || bytes < 0 || bytes > MAX_PAYLOAD_BYTES) {
      throw invalidArgument(
        'FrameReader',
        'maxPayloadBytes',
        `an integer in [0, ${MAX_PAYLOAD_BYTES}]`,
        bytes,
      );
    }
    this.maxPayloadBytes = bytes;
  }

  /** Accepts only `kinds` from the next frame on; `from` says who sends them, for errors. */
  accept(kinds: ReadonlySet<number>, from: string): void {
    this.acceptedKinds = kinds;
    this.acceptedFrom = from;
  }

  /**
   * Consumes one chunk. `onFrame` runs synchronously for every completed frame, in order;
   * changes it makes (`setKey`, `accept`) apply to the next frame of the same chunk.
   *
   * @throws WireError ERR_WIRE for the first bad frame (and ever after); a FlodlError `onFrame` threw passes through
   */
  push(chunk: Uint8Array, onFrame: (frame: Frame) => void): void {
    if (this.failure) throw this.failure;
    try {
      let offset = 0;
      while (offset < chunk.length) {
        if (this.current === undefined) {
          const take = Math.min(FRAME_HEADER_BYTES - this.headerFilled, chunk.length - offset);
          const before = this.headerFilled;
          this.header.set(chunk.subarray(offset, offset + take), before);
          this.headerFilled += take;
          offset += take;
          this.checkHeaderPrefix(before);
          if (this.headerFilled < FRAME_HEADER_BYTES) return;
          this.beginPayload();
          if (this.current!.payloadLength === 0) this.finishFrame(onFrame);
          continue;
        }
        const current = this.current;
        const need = current.payloadLength - this.payloadFilled;
        const take = Math.min(need, chunk.length - offset);
        const slice = chunk.subarray(offset, offset + take);
        offset += take;
        this.hmac!.update(slice);
        if (this.payload === undefined && take === need) {
          // The whole payload sits in this chunk: hand out a view, no copy.
          this.payload = slice;
        } else {
          this.payload ??= new Uint8Array(current.payloadLength);
          // A socket that read into `pendingTarget` left the bytes where they belong.
          if (!isAt(slice, this.payload, this.payloadFilled)) this.payload.set(slice, this.payloadFilled);
        }
        this.payloadFilled += take;
        if (this.payloadFilled === current.payloadLength) this.finishFrame(onFrame);
      }
    } catch (error) {
      // A consumer may refuse a frame with its own FlodlError (e.g. ERR_IO); anything else is a body problem.
      this.failure = FlodlError.isInstance(error)
        ? error
        : new WireError(
            'body',
            `frame rejected by its consumer: ${error instanceof Error ? error.message : String(error)}`,
            {
              cause: error,
            },
          );
      throw this.failure;
    }
  }

  /**
   * The stream ended. Fine between frames.
   *
   * @throws WireError ERR_WIRE `truncated` when a frame was cut off
   */
  end(): void {
    if (this.failure) throw this.failure;
    if (this.headerFilled === 0) return;
    const expected =
      this.current === undefined
        ? `a ${FRAME_HEADER_BYTES}-byte header`
        : `${FRAME_HEADER_BYTES} header bytes + ${this.current.payloadLength} payload bytes`;
    this.failure = new WireError('truncated', 'truncated frame: the connection ended inside a frame', {
      expected,
      got: `${this.bufferedBytes} bytes`,
    });
    throw this.failure;
  }

  /** Checks the header fields that became complete since `before` bytes were buffered. */
  private checkHeaderPrefix(before: number): void {
    const filled = this.headerFilled;
    for (let index = before; index < Math.min(filled, 4); index += 1) {
      if (this.header[index] !== MAGIC_BYTES[index]) {
        const seen = this.header.subarray(0, Math.min(filled, 4));
        throw new WireError(
          'magic',
          'bad magic: this is not a flodl frame (is something else talking to this port?)',
          {
            expected: hex32(FRAME_MAGIC),
            got: describeMagic(seen),
          },
        );
      }
    }
    if (before < HEADER_OFFSET.kind && filled >= HEADER_OFFSET.kind) {
      const version = this.headerView.getUint16(HEADER_OFFSET.version, true);
      if (version !== PROTOCOL_VERSION) {
        throw new WireError(
          'version',
          'bad version: the peer speaks another protocol version (run the same @flodl/distributed on every host)',
          { expected: String(PROTOCOL_VERSION), got: String(version) },
        );
      }
    }
    if (before < HEADER_OFFSET.payloadLength && filled >= HEADER_OFFSET.payloadLength) {
      const kind = this.headerView.getUint16(HEADER_OFFSET.kind, true);
      if (!this.acceptedKinds.has(kind)) {
        const names = [...this.acceptedKinds].map((accepted) => kindName(accepted) ?? String(accepted));
        const list =
          names.length <= 8 ? names.join(', ') : `${names.slice(0, 8).join(', ')}, … (${names.length} kinds)`;
        throw new WireError('kind', `bad kind: ${describeKind(kind)} is not accepted ${this.acceptedFrom}`, {
          expected: `one of ${list}`,
          got: describeKind(kind),
        });
      }
    }
    if (before < HEADER_OFFSET.sequence && filled >= HEADER_OFFSET.sequence) {
      const length = this.headerView.getUint32(HEADER_OFFSET.payloadLength, true);
      if (length > this.maxPayloadBytes) {
        throw new WireError('length', 'bad length: the payload exceeds the cap', {
          expected: `at most ${this.maxPayloadBytes} bytes`,
          got: `${length} bytes`,
        });
      }
    }
  }

  private beginPayload(): void {
    const view = this.headerView;
    const header: FrameHeader = {
      version: view.getUint16(HEADER_OFFSET.version, true),
      kind: view.getUint16(HEADER_OFFSET.kind, true),
      payloadLength: view.getUint32(HEADER_OFFSET.payloadLength, true),
      sequence: view.getUint32(HEADER_OFFSET.sequence, true),
    };
    this.current = header;
    // The nonce is the frame's expected position: a frame out of place fails its tag.
    this.hmac =
      this.bulk?.kind === header.kind
        ? bulkTagger(this.bulk, this.expectedSequence, this.wraps)
        : createHmac('sha256', this.key);
    this.hmac.update(this.header.subarray(0, SIGNED_HEADER_BYTES));
    this.payloadFilled = 0;
    const target = header.payloadLength > 0 && this.payloadTarget ? this.payloadTarget(header) : undefined;
    if (target !== undefined && target.length !== header.payloadLength) {
      throw invalidArgument(
        'FrameReader',
        'payloadTarget()',
        `a buffer of ${header.payloadLength} bytes`,
        target,
      );
    }
    this.payload = target;
    this.payloadIsTarget = target !== undefined;
  }

  private finishFrame(onFrame: (frame: Frame) => void): void {
    const header = this.current!;
    const digest = this.hmac!.digest();
    const tag = this.header.subarray(HEADER_OFFSET.tag, HEADER_OFFSET.tag + FRAME_TAG_BYTES);
    if (!timingSafeEqual(digest.subarray(0, FRAME_TAG_BYTES), tag)) {
      throw new WireError(
        'tag',
        "bad tag: the frame is not signed with this run's key (check that FLODL_SECRET or FLODL_SECRET_FILE match the coordinator's)",
        {
          got: `${describeKind(header.kind)}, ${header.payloadLength} payload bytes, sequence ${header.sequence}`,
        },
      );
    }
    if (header.sequence !== this.expectedSequence) {
      throw new WireError('sequence', 'bad sequence: a frame was replayed, dropped or reordered', {
        expected: String(this.expectedSequence),
        got: String(header.sequence),
      });
    }
    this.expectedSequence = (this.expectedSequence + 1) >>> 0;
    if (this.expectedSequence === 0) this.wraps += 1;
    const payload = this.payload ?? new Uint8Array(0);
    this.current = undefined;
    this.hmac = undefined;
    this.payload = undefined;
    this.payloadIsTarget = false;
    this.headerFilled = 0;
    this.payloadFilled = 0;
    this.frames += 1;
    onFrame({ version: header.version, kind: header.kind, sequence: header.sequence, payload });
  }
}

/** True when `slice` is the very memory of `buffer` from byte `offset` on. */
function isAt(slice: Uint8Array, buffer: Uint8Array, offset: number): boolean {
  return slice.buffer === buffer.buffer && slice.byteOffset === buffer.byteOffset + offset;
}

/** `0x47455420 ("GET ")`: the magic bytes seen, with their text when printable. */
function describeMagic(seen: Uint8Array): string {
  const padded = new Uint8Array(4);
  padded.set(seen);
  const value = new DataView(padded.buffer).getUint32(0, true);
  const text = String.fromCharCode(...seen);
  const shown =
    seen.length < 4 ? `${seen.length} byte(s) ${Buffer.from(seen).toString('hex')}` : hex32(value);
  return /^[\x20-\x7e]+$/.test(text) ? `${shown} (${JSON.stringify(text)})` : shown;
}
