import { shareClassIdentity } from './class-identity.js';

const MARKER = Symbol.for('flodl.error');

/** The stable error codes. Code may branch on these; messages may change. */
export type FlodlErrorCode =
  | 'ERR_SHAPE'
  | 'ERR_DTYPE'
  | 'ERR_DEVICE'
  | 'ERR_NATIVE'
  | 'ERR_BINDING_NOT_FOUND'
  | 'ERR_DISPOSED'
  | 'ERR_INVALID_ARGUMENT'
  | 'ERR_SCOPE'
  | 'ERR_WIRE'
  | 'ERR_RANK_FAILED'
  | 'ERR_TIMEOUT'
  | 'ERR_IO'
  | 'ERR_CHECKPOINT'
  | 'ERR_AUTOGRAD'
  | 'ERR_CUDA_GRAPH';

export interface FlodlErrorOptions {
  /** The operation that failed, e.g. `add` or `Tensor.from`. */
  op?: string;
  /** What the operation needed, e.g. `shapes that broadcast`. */
  expected?: string;
  /** What it was given, e.g. `[2, 3] and [4]`. */
  got?: string;
  /** libtorch's own message, when the failure came from native code. */
  nativeMessage?: string;
  cause?: unknown;
}

/**
 * The one error type of flodl. `code` is stable; `op`, `expected` and `got` say what went
 * wrong; `nativeMessage` carries libtorch's text when native code refused.
 *
 * @example
 * ```ts
 * try { a.matmul(b); } catch (error) {
 *   if (FlodlError.isInstance(error) && error.code === 'ERR_SHAPE') console.log(error.expected, error.got);
 * }
 * ```
 */
export class FlodlError extends Error {
  readonly code: FlodlErrorCode;
  readonly op: string | undefined;
  readonly expected: string | undefined;
  readonly got: string | undefined;
  readonly nativeMessage: string | undefined;

  constructor(code: FlodlErrorCode, message: string, options: FlodlErrorOptions = {}) {
    const parts = [options.op ? `${options.op}: ${message}` : message];
    if (options.expected !== undefined) parts.push(`expected: ${options.expected}`);
    if (options.got !== undefined) parts.push(`got: ${options.got}`);
    super(parts.join('\n  '), options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'FlodlError';
    this.code = code;
    this.op = options.op;
    this.expected = options.expected;
    this.got = options.got;
    this.nativeMessage = options.nativeMessage;
  }

  /** True for a FlodlError from any copy of this package (works across duplicated installs). */
  static isInstance(value: unknown): value is FlodlError {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
  }
}

/** Builds the standard ERR_INVALID_ARGUMENT error naming the argument. */
export function invalidArgument(op: string, name: string, expected: string, actual: unknown): FlodlError {
  return new FlodlError('ERR_INVALID_ARGUMENT', `invalid ${name}`, {
    op,
    expected,
    got: describeValue(actual),
  });
}

/** A short, safe description of any JS value for error messages. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint')
    return String(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) {
    const head = value.slice(0, 6).map(describeValue).join(', ');
    return `[${head}${value.length > 6 ? ', …' : ''}]`;
  }
  if (ArrayBuffer.isView(value))
    return `${value.constructor.name}(${(value as unknown as { length: number }).length})`;
  const name = (value as object).constructor?.name;
  if (name === 'Tensor' && typeof (value as { describe?: unknown }).describe === 'function') {
    return (value as { describe(): string }).describe();
  }
  return name && name !== 'Object' ? `a ${name}` : 'an object';
}

// Sets the marker `isInstance` reads on FlodlError.prototype.
shareClassIdentity(FlodlError, 'flodl.error');
