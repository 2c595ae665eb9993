// Argument checks shared by the schedulers; each names the argument and shows expected vs got.
import { checkInteger, checkNumberInRange, invalidArgument, unknownOptionError } from '@flodl/tensor-native';

export { checkInteger, checkNumberInRange, checkOneOf } from '@flodl/tensor-native';

/**
 * @internal Rejects keys of `options` outside `allowed` (catches misspellings, suggesting the
 * closest allowed key); undefined values are ignored.
 */
export function checkSchedulerOptions(op: string, options: unknown, allowed: readonly string[]): void {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalidArgument(op, 'options', 'an options object', options);
  }
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined && !allowed.includes(key)) throw unknownOptionError(op, key, allowed);
  }
}

/** @internal The step a pure schedule is asked about: an integer >= 0. */
export function checkStep(op: string, step: unknown): number {
  return checkInteger(op, 'step', step, 0);
}

/** @internal One value per parameter group, from a number or an array of `groups` numbers. */
export function perGroup(
  op: string,
  name: string,
  value: unknown,
  groups: number,
  check: (name: string, value: unknown) => number,
): number[] {
  if (Array.isArray(value)) {
    if (value.length !== groups) {
      throw invalidArgument(op, name, `a number or ${groups} numbers (one per parameter group)`, value);
    }
    return value.map((item, k) => check(`${name}[${k}]`, item));
  }
  const single = check(name, value);
  return new Array<number>(groups).fill(single);
}

/** @internal One finite number >= 0 per parameter group (learning rates, momenta). */
export function nonNegativePerGroup(op: string, name: string, value: unknown, groups: number): number[] {
  return perGroup(op, name, value, groups, (itemName, item) => checkNumberInRange(op, itemName, item, 0));
}
