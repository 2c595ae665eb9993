import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { invalidArgument } from '@flodl/tensor-native';

/** First four bytes of every control or data frame (little-endian on the wire). */
export const FRAME_MAGIC = 0xf10d17c4;

/**
 * The wire protocol version. Every frame header carries it and the handshake checks it;
 * peers of different versions refuse each other. Bump it for any change that is not an
 * appended message kind or an appended optional field.
 */
export const PROTOCOL_VERSION = 1;

/** Bytes of the fixed frame header. */
export const FRAME_HEADER_BYTES = 32;

/** Bytes of the authentication tag: HMAC-SHA256 truncated to 128 bits (RFC 2104 §5). */
export const FRAME_TAG_BYTES = 16;

/** The largest payload a control frame may carry: 16 MiB. */
export const MAX_PAYLOAD_BYTES = 16 * 1024 * 1024;
/**
 * Payload cap of a frame before the handshake completed (a `Hello` is at most about 13 KiB:
 * 64 capabilities of 64 characters and a 255-character host name), so an unauthenticated
 * peer cannot make the server hold a full {@link MAX_PAYLOAD_BYTES} payload.
 */
export const MAX_HANDSHAKE_PAYLOAD_BYTES = 16 * 1024;

/**
 * Byte offsets of the header fields. The layout, little-endian:
 *
 * | offset | size | field |
 * |---|---|---|
 * | 0 | 4 | magic `0xf10d17c4` |
 * | 4 | 2 | protocol version |
 * | 6 | 2 | message kind |
 * | 8 | 4 | payload length |
 * | 12 | 4 | sequence number (per connection and direction, from 0, wraps at 2³²) |
 * | 16 | 16 | tag = HMAC-SHA256(key, header[0, 16) ‖ payload)[0, 16) |
 *
 * The tag covers every other header byte, so a frame cannot be replayed at another
 * position of the stream, re-kinded or re-sized without detection.
 */
export const HEADER_OFFSET = {
  magic: 0,
  version: 4,
  kind: 6,
  payloadLength: 8,
  sequence: 12,
  tag: 16,
} as const;

/** Bytes of the header the tag authenticates (everything before the tag). */
export const SIGNED_HEADER_BYTES = HEADER_OFFSET.tag;

/** A key that signs or verifies frames: raw bytes (at least 16) or a prepared `KeyObject`. */
export type WireKey = Uint8Array | KeyObject;

/** One verified frame as the reader hands it out. */
export interface Frame {
  version: number;
  kind: number;
  sequence: number;
  /**
   * The payload. It may be a view into the socket's receive buffer: read it before the
   * callback returns, or copy it.
   */
  payload: Uint8Array;
}

/** The fields of a frame header, for building frames. */
export interface FrameFields {
  kind: number;
  sequence: number;
  /** Defaults to `PROTOCOL_VERSION`; fuzzers and tests set other values. */
  version?: number;
  /** Defaults to `FRAME_MAGIC`; fuzzers and tests set other values. */
  magic?: number;
}

/**
 * Prepares a signing key once so per-frame HMACs do not re-import it.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for fewer than 16 key bytes
 * @example const key = toKeyObject(createRunSecret());
 */
export function toKeyObject(key: WireKey): KeyObject {
  if (key instanceof Uint8Array) {
    if (key.length < 16) throw invalidArgument('wire', 'key', 'at least 16 bytes', key);
    return createSecretKey(key);
  }
  if (typeof key === 'object' && key !== null && (key as KeyObject).type === 'secret') return key;
  throw invalidArgument('wire', 'key', 'a Uint8Array or a secret KeyObject', key);
}

/**
 * Writes the signed part of a header (magic, version, kind, length, sequence) into
 * `target[0, 16)`.
 */
export function writeSignedHeader(target: Uint8Array, fields: FrameFields, payloadLength: number): void {
  const view = new DataView(target.buffer, target.byteOffset, FRAME_HEADER_BYTES);
  view.setUint32(HEADER_OFFSET.magic, fields.magic ?? FRAME_MAGIC, true);
  view.setUint16(HEADER_OFFSET.version, fields.version ?? PROTOCOL_VERSION, true);
  view.setUint16(HEADER_OFFSET.kind, fields.kind, true);
  view.setUint32(HEADER_OFFSET.payloadLength, payloadLength, true);
  view.setUint32(HEADER_OFFSET.sequence, fields.sequence >>> 0, true);
}

/**
 * The 16-byte tag of a frame: HMAC-SHA256 over the signed header and the payload parts,
 * without concatenating them.
 */
export function computeTag(key: KeyObject, signedHeader: Uint8Array, payload: readonly Uint8Array[]): Buffer {
  const hmac = createHmac('sha256', key);
  hmac.update(signedHeader.subarray(0, SIGNED_HEADER_BYTES));
  for (const part of payload) hmac.update(part);
  return hmac.digest().subarray(0, FRAME_TAG_BYTES);
}

/**
 * Builds the 32-byte header of a frame whose payload is `payload` (one or more parts that
 * are sent back to back). The payload itself is not copied.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for a kind or sequence out of range
 * @example
 * ```ts
 * const header = encodeFrameHeader(key, { kind: MessageKind.SyncNow, sequence: 3 }, [payload]);
 * socket.write(header); socket.write(payload);
 * ```
 */
export function encodeFrameHeader(
  key: KeyObject,
  fields: FrameFields,
  payload: readonly Uint8Array[],
  payloadLength = sumLengths(payload),
): Uint8Array {
  if (!Number.isInteger(fields.kind) || fields.kind < 0 || fields.kind > 0xffff) {
    throw invalidArgument('wire', 'kind', 'an integer in [0, 65535]', fields.kind);
  }
  if (!Number.isInteger(fields.sequence) || fields.sequence < 0) {
    throw invalidArgument('wire', 'sequence', 'a non-negative integer', fields.sequence);
  }
  const header = new Uint8Array(FRAME_HEADER_BYTES);
  writeSignedHeader(header, fields, payloadLength);
  header.set(computeTag(key, header, payload), HEADER_OFFSET.tag);
  return header;
}

/**
 * One whole frame (header and payload in one buffer). Meant for small frames, tests and
 * fuzzers; the writers send header and payload without joining them.
 *
 * @example const bytes = encodeFrame(secret, { kind: MessageKind.SyncNow, sequence: 1 }, payload);
 */
export function encodeFrame(key: WireKey, fields: FrameFields, payload: Uint8Array): Uint8Array {
  const header = encodeFrameHeader(toKeyObject(key), fields, [payload]);
  const frame = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  frame.set(header, 0);
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

function sumLengths(parts: readonly Uint8Array[]): number {
  let total = 0;
  for (const part of parts) total += part.length;
  return total;
}
