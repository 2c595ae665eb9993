// The data pipeline's error builders. Every failure is a FlodlError with a stable code; file
// errors name the file, what was wrong, and what to do next.
import { FlodlError, type FlodlErrorCode } from '@flodl/tensor-native';

/** Details a data error may carry beside its message. */
export interface DataErrorDetails {
  expected?: string;
  got?: string;
  cause?: unknown;
}

/**
 * An `ERR_IO` error about one file: `<file>: <problem>`.
 *
 * @example throw fileError('readIdx', '/data/x.idx', 'truncated data', { expected: '47040000 bytes', got: '1024 bytes' });
 */
export function fileError(
  op: string,
  file: string,
  problem: string,
  details: DataErrorDetails = {},
): FlodlError {
  return new FlodlError('ERR_IO', `${file}: ${problem}`, { op, ...details });
}

/**
 * Wraps an error a dataset threw so that it names the sample index (or indices) it was reading.
 * A FlodlError keeps its code; any other error becomes `ERR_IO` (reading the data failed).
 * The original error is the `cause`.
 */
export function datasetError(op: string, where: string, error: unknown): FlodlError {
  const code: FlodlErrorCode = FlodlError.isInstance(error) ? error.code : 'ERR_IO';
  const text = error instanceof Error ? error.message : String(error);
  return new FlodlError(code, `${where} failed: ${text}`, { op, cause: error });
}

/** Describes a list of indices briefly: `[3, 17, 4, … 128 indices]`. */
export function describeIndices(indices: ArrayLike<number>): string {
  const shown = Array.from({ length: Math.min(indices.length, 4) }, (_, k) => indices[k]);
  return indices.length <= 4 ? `[${shown.join(', ')}]` : `[${shown.join(', ')}, … ${indices.length} indices]`;
}
