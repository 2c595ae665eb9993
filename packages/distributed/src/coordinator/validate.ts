import { invalidArgument } from '@flodl/tensor-native';

export { checkBoolean, checkOneOf } from '@flodl/tensor-native';

// Argument checks shared by the coordinator's config resolvers. Each names the
// argument and throws ERR_INVALID_ARGUMENT with expected versus got.

/** Throws unless `value` is an integer ≥ `min`. */
export function checkInteger(op: string, name: string, value: unknown, min: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw invalidArgument(op, name, `an integer ≥ ${min}`, value);
  }
  return value;
}

/** Throws unless `value` is a finite number in `[min, max]`. */
export function checkNumberInRange(
  op: string,
  name: string,
  value: unknown,
  min: number,
  max: number,
): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    throw invalidArgument(op, name, `a finite number in [${min}, ${max}]`, value);
  }
  return value;
}

/** Rejects misspelled option names: every own key of `options` must be in `known`. */
export function rejectUnknownKeys(op: string, name: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw invalidArgument(op, `${name}.${key}`, `one of the known options (${known.join(', ')})`, key);
    }
  }
}

/** Throws unless `value` is a plain object (or undefined, which yields `{}`). */
export function checkOptionsObject(op: string, name: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidArgument(op, name, 'an options object', value);
  }
  return value as Record<string, unknown>;
}
