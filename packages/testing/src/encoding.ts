// The one encoding of the golden fixtures (written by the make-goldens*.py scripts through
// packages/testing/python/flodl_goldens.py): JSON has no NaN or Infinity, so a non-finite number
// is the string 'nan', 'inf' or '-inf'.
import { readFileSync } from 'node:fs';

/** A number as the fixtures store it. */
export type EncodedNumber = number | 'nan' | 'inf' | '-inf';

const NON_FINITE: Readonly<Record<string, number>> = {
  nan: Number.NaN,
  inf: Number.POSITIVE_INFINITY,
  '-inf': Number.NEGATIVE_INFINITY,
};

/** The number an encoded value stands for (a boolean reads as 1 or 0). */
export function decodeNumber(value: EncodedNumber | boolean): number {
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (typeof value === 'number') return value;
  const decoded = NON_FINITE[value];
  if (decoded === undefined) throw new Error(`not an encoded number: ${JSON.stringify(value)}`);
  return decoded;
}

/**
 * Reads a JSON fixture; the encoded non-finite numbers of every tensor's `data` array come back as
 * numbers (other strings, such as an option `normType: 'inf'`, are left as written).
 */
export function readFixture<T>(url: URL): T {
  return JSON.parse(readFileSync(url, 'utf8'), (key, value: unknown) =>
    key === 'data' && Array.isArray(value)
      ? value.map((item) => (typeof item === 'string' && item in NON_FINITE ? NON_FINITE[item] : item))
      : value,
  ) as T;
}
