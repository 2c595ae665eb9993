// Small integers that cross the native boundary; the order matches native/convert.cc.
import type { DType } from '../dtype.js';

export const DTYPE_CODES: readonly DType[] = [
  'float16',
  'bfloat16',
  'float32',
  'float64',
  'int32',
  'int64',
  'uint8',
  'bool',
];

const CODE_OF = new Map<DType, number>(DTYPE_CODES.map((name, code) => [name, code]));

export function dtypeCode(dtype: DType): number {
  return CODE_OF.get(dtype)!;
}

export function dtypeFromCode(code: number): DType {
  return DTYPE_CODES[code]!;
}
