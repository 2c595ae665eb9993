import { FlodlError } from '@flodl/tensor-native';

/** An `ERR_IO` error about one file: `<path>: <problem>`, what was expected, and the system's reason. */
export function fileError(
  op: string,
  path: string,
  problem: string,
  expected: string,
  cause: unknown,
): FlodlError {
  return new FlodlError('ERR_IO', `${path}: ${problem}`, {
    op,
    expected,
    got: cause instanceof Error ? cause.message : String(cause),
    cause,
  });
}
