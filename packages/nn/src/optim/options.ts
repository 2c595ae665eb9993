// Validation of optimizer options: every check names the argument (`options.lr`,
// `paramGroups[1].betas`) and shows what was expected versus what came.
import { checkNumberInRange, FlodlError, invalidArgument, unknownOptionError } from '@flodl/tensor-native';

export {
  checkBoolean,
  checkFiniteNumber,
  checkNumberInRange,
  checkOptionsObject,
} from '@flodl/tensor-native';

/**
 * @internal Throws ERR_INVALID_ARGUMENT for any key of `options` outside `allowed` (catches
 * misspellings, suggesting the closest allowed key).
 */
export function rejectUnknownKeys(
  op: string,
  where: string,
  options: object,
  allowed: readonly string[],
  code: 'ERR_INVALID_ARGUMENT' | 'ERR_CHECKPOINT' = 'ERR_INVALID_ARGUMENT',
): void {
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) throw unknownOptionError(op, key, allowed, { where, code });
  }
}

/** @internal Adam-style `betas`: two numbers, each in [0, 1). */
export function checkBetas(op: string, name: string, value: unknown): [number, number] {
  if (!Array.isArray(value) || value.length !== 2) {
    throw invalidArgument(op, name, 'two numbers [beta1, beta2], each in [0, 1)', value);
  }
  checkNumberInRange(op, `${name}[0]`, value[0], 0, 1, { maximumExclusive: true });
  checkNumberInRange(op, `${name}[1]`, value[1], 0, 1, { maximumExclusive: true });
  return [value[0], value[1]];
}

/** @internal Re-throws an option error found while loading a state dict as ERR_CHECKPOINT. */
export function asCheckpointError(error: unknown, op: string): unknown {
  if (FlodlError.isInstance(error) && error.code === 'ERR_INVALID_ARGUMENT') {
    const headline = (error.message.split('\n')[0] ?? '').replace(`${error.op}: `, '');
    return new FlodlError('ERR_CHECKPOINT', `the state dict holds an ${headline}`, {
      op,
      expected: error.expected,
      got: error.got,
      cause: error,
    });
  }
  return error;
}
