// Small shared pieces of the layers: option checks, factory options and size normalisation.
import {
  type Device,
  type DType,
  invalidArgument,
  isFloatingPoint,
  parseDType,
  type TensorOptions,
} from '@flodl/tensor-native';

/** A positive integer argument, named in the error. */
export { checkOptions, checkPositiveInteger as positiveInteger } from '@flodl/tensor-native';

/**
 * PyTorch's factory keywords of a layer with parameters (`nn.Linear(4, 2, dtype=..., device=...)`):
 * where and as what its parameters and floating buffers are created.
 */
export interface FactoryOptions {
  /** A floating dtype. Default: float32. */
  dtype?: DType;
  /** Default: {@link getDefaultDevice} (`'cpu'` unless changed). */
  device?: Device;
}

/** The option names of {@link FactoryOptions}, for a layer's `checkOptions` list. */
export const FACTORY_KEYS = ['dtype', 'device'] as const;

/**
 * The tensor options a layer creates its parameters with (the factory ones of `options`).
 * @throws FlodlError ERR_INVALID_ARGUMENT for a dtype that is not a floating one
 */
export function factoryOf(layer: string, options: FactoryOptions): TensorOptions {
  const factory: TensorOptions = {};
  if (options.dtype !== undefined) {
    const dtype = parseDType(layer, options.dtype);
    if (!isFloatingPoint(dtype)) throw invalidArgument(layer, 'dtype', 'a floating dtype', options.dtype);
    factory.dtype = dtype;
  }
  if (options.device !== undefined) factory.device = options.device;
  return factory;
}

/** A number or a tuple of `length` numbers, as a tuple. */
export function tuple(
  layer: string,
  name: string,
  value: number | readonly number[],
  length: number,
): number[] {
  const list = typeof value === 'number' ? Array.from({ length }, () => value) : [...value];
  if (list.length !== length || !list.every((item) => Number.isSafeInteger(item))) {
    throw invalidArgument(layer, name, `an integer or ${length} integers`, value);
  }
  return list;
}

/** Python's `True`/`False` for extra_repr strings. */
export function pythonBool(value: boolean): string {
  return value ? 'True' : 'False';
}

/** Python's tuple repr: `(3, 3)`, `(3,)`. */
export function pythonTuple(values: readonly (number | string)[]): string {
  return values.length === 1 ? `(${values[0]},)` : `(${values.join(', ')})`;
}

/** An int or a tuple of ints as PyTorch prints a size it stored as given: `3`, `(2, 3)`. */
export function pythonSize(value: number | readonly number[]): string {
  return typeof value === 'number' ? String(value) : pythonTuple(value);
}

/**
 * Python's `repr` of a float, for settings PyTorch stores as floats: `1e-05` (not `1e-5`),
 * `1.0` (not `1`), `0.1`; the digits are the shortest that round-trip, as in both languages.
 */
export function pythonFloat(value: number): string {
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  if (value === 0) return Object.is(value, -0) ? '-0.0' : '0.0';
  const [mantissa, exponentText] = value.toExponential().split('e') as [string, string];
  const exponent = Number(exponentText);
  // Python switches to exponent notation below 1e-4 and from 1e16, with 2-digit exponents.
  if (exponent < -4 || exponent >= 16) {
    return `${mantissa}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
  }
  return Number.isInteger(value) ? `${value}.0` : String(value);
}
