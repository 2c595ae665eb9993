// Small integers that cross the native boundary: a dtype's code is its index in DTYPES, whose
// order matches kDtypes in native/convert.cc.
import { DTYPES, type DType } from '../dtype.js';

const CODE_OF = new Map<DType, number>(DTYPES.map((name, code) => [name, code]));

export function dtypeCode(dtype: DType): number {
  return CODE_OF.get(dtype)!;
}

export function dtypeFromCode(code: number): DType {
  return DTYPES[code]!;
}
