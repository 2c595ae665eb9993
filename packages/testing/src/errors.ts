// Expectations on flodl's typed errors. Structural on purpose: the kit imports no flodl package
// (tensor-native's own tests use it), and every FlodlError carries the `flodl.error` marker.
import { expect } from 'vitest';

const MARKER = Symbol.for('flodl.error');

/** What the kit reads of a FlodlError (tensor-native's class has these fields and more). */
export interface FlodlErrorLike extends Error {
  readonly code: string;
  readonly op: string | undefined;
  readonly expected: string | undefined;
  readonly got: string | undefined;
  readonly nativeMessage: string | undefined;
}

/** True for a FlodlError of any copy of tensor-native (the check `FlodlError.isInstance` makes). */
export function isFlodlError(value: unknown): value is FlodlErrorLike {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[MARKER] === true;
}

function asFlodlError<E extends FlodlErrorLike>(error: unknown, code: string | undefined): E {
  if (!isFlodlError(error)) throw new Error(`expected a FlodlError, got ${String(error)}`);
  if (code !== undefined) expect(error.code, error.message).toBe(code);
  return error as E;
}

/**
 * The FlodlError that `run` throws, checked against `code` when one is given. Fails when `run`
 * returns, or throws anything else.
 *
 * @example expect(caught(() => ones([2]).add(ones([3]))).code).toBe('ERR_SHAPE');
 */
export function caught<E extends FlodlErrorLike = FlodlErrorLike>(run: () => unknown, code?: string): E {
  try {
    run();
  } catch (error) {
    return asFlodlError<E>(error, code);
  }
  throw new Error(
    code === undefined ? 'expected a throw' : `expected a FlodlError ${code}, but nothing was thrown`,
  );
}

/** The FlodlError that an async `run` throws or rejects with (see {@link caught}). */
export async function caughtAsync<E extends FlodlErrorLike = FlodlErrorLike>(
  run: () => unknown,
  code?: string,
): Promise<E> {
  try {
    await run();
  } catch (error) {
    return asFlodlError<E>(error, code);
  }
  throw new Error(
    code === undefined ? 'expected a throw' : `expected a FlodlError ${code}, but nothing was thrown`,
  );
}

/** {@link caught} with the code required: the FlodlError `run` throws, which must carry `code`. */
export function expectFlodlError<E extends FlodlErrorLike = FlodlErrorLike>(
  run: () => unknown,
  code: string,
): E {
  return caught<E>(run, code);
}
