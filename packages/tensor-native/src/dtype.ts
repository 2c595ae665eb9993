import { invalidArgument } from './errors.js';

/** Element types. Names follow PyTorch (`torch.float32` → `'float32'`). */
export type DType = 'float16' | 'bfloat16' | 'float32' | 'float64' | 'int32' | 'int64' | 'uint8' | 'bool';

/** Every supported dtype, in the order of the native dtype codes (kDtypes in native/convert.cc). */
export const DTYPES: readonly DType[] = [
  'float16',
  'bfloat16',
  'float32',
  'float64',
  'int32',
  'int64',
  'uint8',
  'bool',
];

const FLOATING = new Set<DType>(['float16', 'bfloat16', 'float32', 'float64']);
const ALIASES: Record<string, DType> = {
  half: 'float16',
  float: 'float32',
  double: 'float64',
  int: 'int32',
  long: 'int64',
  byte: 'uint8',
};

/** True for float16, bfloat16, float32 and float64. */
export function isFloatingPoint(dtype: DType): boolean {
  return FLOATING.has(dtype);
}

/** Bytes per element. */
export function elementSize(dtype: DType): number {
  switch (dtype) {
    case 'float64':
    case 'int64':
      return 8;
    case 'float32':
    case 'int32':
      return 4;
    case 'float16':
    case 'bfloat16':
      return 2;
    default:
      return 1;
  }
}

/** Validates a dtype name (PyTorch aliases such as `'float'` and `'long'` are accepted). */
export function parseDType(op: string, value: unknown, name = 'dtype'): DType {
  if (typeof value === 'string') {
    if ((DTYPES as readonly string[]).includes(value)) return value as DType;
    const alias = ALIASES[value];
    if (alias) return alias;
  }
  throw invalidArgument(op, name, `one of ${DTYPES.join(', ')}`, value);
}
