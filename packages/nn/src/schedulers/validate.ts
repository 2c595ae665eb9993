// Argument checks shared by the schedulers; each names the argument and shows expected vs got.
import { FlodlError, invalidArgument } from '@flodl/tensor-native';

/** @internal Rejects keys of `options` outside `allowed` (catches misspellings); undefined values are ignored. */
export function checkSchedulerOptions(op: string, options: unknown, allowed: readonly string[]): void {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw invalidArgument(op, 'options', 'an options object', options);
  }
  for (const [key, value] of Object.entries(options)) {
    if (value !== undefined && !allowed.includes(key)) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `unknown option '${key}'`, {
        op,
        expected: `one of ${allowed.join(', ')}`,
        got: key,
      });
    }
  }
}

/** @internal An integer >= `minimum`. */
export function checkInteger(op: string, name: string, value: unknown, minimum: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < minimum) {
    throw invalidArgument(op, name, `an integer >= ${minimum}`, value);
  }
  return value;
}

/** @internal A finite number in `[low, high]` (each bound inclusive unless stated). */
export function checkNumberIn(
  op: string,
  name: string,
  value: unknown,
  low: number,
  high: number,
  highInclusive = true,
): number {
  const inRange =
    typeof value === 'number' &&
    Number.isFinite(value) &&
    value >= low &&
    (highInclusive ? value <= high : value < high);
  if (!inRange) {
    const upper = high === Number.POSITIVE_INFINITY ? '' : highInclusive ? `, <= ${high}` : `, < ${high}`;
    throw invalidArgument(op, name, `a finite number >= ${low}${upper}`, value);
  }
  return value as number;
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
  return perGroup(op, name, value, groups, (itemName, item) =>
    checkNumberIn(op, itemName, item, 0, Infinity),
  );
}

/** @internal One of the listed strings. */
export function checkChoice<T extends string>(
  op: string,
  name: string,
  value: unknown,
  choices: readonly T[],
): T {
  if (!choices.includes(value as T)) {
    throw invalidArgument(op, name, `one of ${choices.map((choice) => `'${choice}'`).join(', ')}`, value);
  }
  return value as T;
}
