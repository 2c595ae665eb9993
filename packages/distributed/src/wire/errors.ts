import { FlodlError } from '@flodl/tensor-native';

const WIRE_MARKER = Symbol.for('flodl.wire-error');

/**
 * What was wrong with a rejected frame or handshake. Stable: code may branch on it.
 *
 * - `magic`, `version`, `kind`, `length`, `sequence`: a header field.
 * - `tag`: the authentication tag did not verify under the expected key.
 * - `body`: the payload is not a well-formed message of its kind.
 * - `field`: one field of the message is out of its documented range.
 * - `truncated`: the connection ended inside a frame.
 * - `order`: a well-formed frame arrived in a state where it is not allowed.
 * - `handshake`: the peer refused the handshake, or the handshake could not complete.
 */
export type WireRejection =
  | 'magic'
  | 'version'
  | 'kind'
  | 'length'
  | 'tag'
  | 'sequence'
  | 'body'
  | 'field'
  | 'truncated'
  | 'order'
  | 'handshake';

/** Options of `WireError` beyond its reason and message. */
export interface WireErrorOptions {
  /** What the protocol required, e.g. `0xf10d17c4`. */
  expected?: string;
  /** What arrived, e.g. `0x47455420 ("GET ")`. */
  got?: string;
  cause?: unknown;
}

/**
 * A frame or handshake the wire layer refused: a `FlodlError` with code `ERR_WIRE` and a
 * machine-readable `reason`. The connection it arrived on is dropped; nothing else is.
 *
 * @example
 * ```ts
 * server.on('connectionError', ({ error }) => {
 *   if (WireError.isInstance(error) && error.reason === 'tag') console.warn('unsigned traffic', error.message);
 * });
 * ```
 */
export class WireError extends FlodlError {
  readonly [WIRE_MARKER] = true;
  /** Which check failed. */
  readonly reason: WireRejection;

  constructor(reason: WireRejection, message: string, options: WireErrorOptions = {}) {
    super('ERR_WIRE', message, { op: 'wire', ...options });
    this.name = 'WireError';
    this.reason = reason;
  }

  /** True for a WireError from any copy of this package. */
  static override isInstance(value: unknown): value is WireError {
    return (
      typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[WIRE_MARKER] === true
    );
  }
}

/** The `ERR_TIMEOUT` error of a bounded wait that ran out. */
export function timeoutError(what: string, timeoutMs: number, hint: string): FlodlError {
  return new FlodlError('ERR_TIMEOUT', `${what} timed out after ${timeoutMs} ms (${hint})`, { op: 'wire' });
}

/** The `ERR_IO` error of an operation on a connection that is already closed. */
export function closedError(what: string, cause?: unknown): FlodlError {
  return new FlodlError('ERR_IO', `${what}: the connection is closed`, { op: 'wire', cause });
}

/** `0x0000002a`: a fixed-width hex rendering for header fields. */
export function hex32(value: number): string {
  return `0x${(value >>> 0).toString(16).padStart(8, '0')}`;
}
