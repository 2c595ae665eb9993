import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  caught,
  caughtAsync,
  compareValues,
  decodeNumber,
  EXACT,
  expectFlodlError,
  fixtureData,
  forDevice,
  isClose,
  isFlodlError,
  onDevice,
  readFixture,
} from '../src/index.js';

/** An error carrying the marker tensor-native's FlodlError carries. */
function flodlError(code: string): Error {
  return Object.assign(new Error(`op: ${code}`), { [Symbol.for('flodl.error')]: true, code });
}

describe('FlodlError expectations', () => {
  it('returns the marked error a function throws, and checks its code when given', () => {
    const error = caught(() => {
      throw flodlError('ERR_SHAPE');
    });
    expect(error.code).toBe('ERR_SHAPE');
    expect(isFlodlError(error)).toBe(true);
    expect(
      expectFlodlError(() => {
        throw flodlError('ERR_DTYPE');
      }, 'ERR_DTYPE').code,
    ).toBe('ERR_DTYPE');
  });

  it('fails when nothing is thrown, or something else is', () => {
    expect(() => caught(() => 1)).toThrow('expected a throw');
    expect(() => expectFlodlError(() => 1, 'ERR_SHAPE')).toThrow('expected a FlodlError ERR_SHAPE');
    expect(() =>
      caught(() => {
        throw new TypeError('plain');
      }),
    ).toThrow('expected a FlodlError, got TypeError: plain');
    expect(() =>
      expectFlodlError(() => {
        throw flodlError('ERR_DTYPE');
      }, 'ERR_SHAPE'),
    ).toThrow();
  });

  it('catches rejections too', async () => {
    const error = await caughtAsync(async () => {
      throw flodlError('ERR_RANK_FAILED');
    }, 'ERR_RANK_FAILED');
    expect(error.code).toBe('ERR_RANK_FAILED');
    await expect(caughtAsync(async () => 1)).rejects.toThrow('expected a throw');
  });
});

describe('the fixture encoding', () => {
  it("reads 'nan', 'inf' and '-inf', and refuses other strings", () => {
    expect(decodeNumber('nan')).toBeNaN();
    expect(decodeNumber('inf')).toBe(Number.POSITIVE_INFINITY);
    expect(decodeNumber('-inf')).toBe(Number.NEGATIVE_INFINITY);
    expect(decodeNumber(true)).toBe(1);
    expect(decodeNumber(2.5)).toBe(2.5);
    expect(() => decodeNumber('Infinity' as never)).toThrow('not an encoded number: "Infinity"');
  });

  it('decodes the data arrays of a fixture file, and only those', () => {
    const dir = mkdtempSync(join(tmpdir(), 'flodl-testing-'));
    try {
      const file = join(dir, 'fixture.json');
      writeFileSync(
        file,
        JSON.stringify({ data: [1, 'nan', '-inf'], normType: 'inf', nested: { data: ['inf'] } }),
      );
      const fixture = readFixture<{ data: number[]; normType: string; nested: { data: number[] } }>(
        pathToFileURL(file),
      );
      expect(fixture.data).toEqual([1, Number.NaN, Number.NEGATIVE_INFINITY]);
      expect(fixture.normType).toBe('inf');
      expect(fixture.nested.data).toEqual([Number.POSITIVE_INFINITY]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('fixture data', () => {
  it('gives booleans for bool fixtures and decoded numbers otherwise', () => {
    expect(fixtureData({ shape: [3], dtype: 'bool', data: [true, false, 1] })).toEqual([true, false, true]);
    expect(fixtureData({ shape: [3], dtype: 'float32', data: [0.5, 'nan', '-inf'] })).toEqual([
      0.5,
      Number.NaN,
      Number.NEGATIVE_INFINITY,
    ]);
  });
});

describe('closeness', () => {
  it('holds NaN to NaN, infinities exactly, the rest to atol + rtol·|expected|', () => {
    const tolerance = { atol: 1e-3, rtol: 1e-2 };
    expect(isClose(Number.NaN, Number.NaN, tolerance)).toBe(true);
    expect(isClose(0, Number.NaN, tolerance)).toBe(false);
    expect(isClose(Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY, EXACT)).toBe(true);
    expect(isClose(1e308, Number.POSITIVE_INFINITY, tolerance)).toBe(false);
    expect(isClose(100.9, 100, tolerance)).toBe(true);
    expect(isClose(100.9, 100, EXACT)).toBe(false);
  });

  it('names the first mismatches and counts the rest', () => {
    const expected = Array.from({ length: 10 }, () => 0);
    const problems = compareValues(
      Array.from({ length: 10 }, () => 1),
      expected,
      EXACT,
    );
    expect(problems).toHaveLength(9);
    expect(problems[0]).toBe('[0] expected 0, got 1');
    expect(problems[8]).toBe('… 2 more');
    expect(compareValues([1], [1, 2], EXACT)).toEqual(['expected 2 values, got 1']);
  });

  it('widens float tolerances on the device tier only, never an exact one', () => {
    const tolerance = { atol: 1e-10, rtol: 1e-9 };
    expect(forDevice(EXACT)).toBe(EXACT);
    expect(forDevice(tolerance)).toEqual(onDevice ? { atol: 1e-6, rtol: 1e-5 } : tolerance);
  });
});
