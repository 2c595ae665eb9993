import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadNpy, parseNpy, readNpy } from '../src/data/index.js';
import { expectNoLeaks, float32Bytes, npyBytes, temporaryFolder } from './helpers.js';

const fixtures = fileURLToPath(new URL('./fixtures/npy/', import.meta.url));
const folder = temporaryFolder('npy');
const arange = (scale: (value: number) => number | boolean) =>
  [0, 1, 2].map((row) => [0, 1, 2, 3].map((column) => scale(row * 4 + column)));

describe('.npy files written by NumPy (scripts/make-npy-fixtures.py)', () => {
  it('loads every supported dtype with its values', async () => {
    const expected = {
      float16: ['float16', arange((value) => value / 4)],
      float32: ['float32', arange((value) => value)],
      float64: ['float64', arange((value) => value)],
      int8: ['int32', arange((value) => value - 6)],
      int16: ['int32', arange((value) => value * -300 + 0)],
      int32: ['int32', arange((value) => value * 100000)],
      int64: ['int64', arange((value) => value * 1e12)],
      uint8: ['uint8', arange((value) => value * 20)],
      bool: ['bool', arange((value) => value % 3 === 0)],
    } as const;
    await expectNoLeaks(() => {
      for (const [name, [dtype, values]] of Object.entries(expected)) {
        const tensor = loadNpy(join(fixtures, `${name}.npy`));
        expect([name, tensor.dtype, tensor.shape]).toEqual([name, dtype, [3, 4]]);
        expect(tensor.toArray()).toEqual(values);
        tensor.dispose();
      }
    });
  });

  it('reads format versions 2.0 and 3.0, scalars and empty arrays', () => {
    expect(readNpy(join(fixtures, 'v2.npy')).version).toEqual([2, 0]);
    const v3 = loadNpy(join(fixtures, 'v3.npy'));
    expect(v3.toArray()).toEqual(arange((value) => value));
    const scalar = loadNpy(join(fixtures, 'scalar.npy'));
    expect([scalar.shape, scalar.item()]).toEqual([[], 2.5]);
    const empty = loadNpy(join(fixtures, 'empty.npy'));
    expect(empty.shape).toEqual([0, 3]);
    for (const tensor of [v3, scalar, empty]) tensor.dispose();
  });

  it('rejects Fortran order, big-endian and unsupported types clearly', () => {
    expect(() => readNpy(join(fixtures, 'fortran.npy'))).toThrow(
      expect.objectContaining({
        code: 'ERR_IO',
        message: expect.stringContaining('fortran.npy: the array is stored in Fortran (column-major) order'),
      }),
    );
    expect(() => readNpy(join(fixtures, 'big-endian.npy'))).toThrow(
      expect.objectContaining({
        code: 'ERR_DTYPE',
        message: expect.stringContaining('big-endian data is not supported'),
      }),
    );
    expect(() =>
      parseNpy(Uint8Array.from(readNpyBytes('unsigned16.npy')), 'u2.npy'),
    ).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: parseNpy: u2.npy: unsupported element type '<u2'
        expected: one of '<f2', '<f4', '<f8', '<i1', '<i2', '<i4', '<i8', '<u1', '<b1' (C-order, little-endian)
        got: '<u2']
    `);
  });
});

function readNpyBytes(name: string): Uint8Array {
  return new Uint8Array(readFileSync(join(fixtures, name)));
}

describe('.npy reader on hand-written files', () => {
  const header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }";
  const data = float32Bytes([1, 2, 3, 4]);

  it('parses each header version and Python literal spelling', () => {
    for (const version of [1, 2, 3] as const) {
      const array = parseNpy(npyBytes(header, data, version));
      expect([array.type, array.shape, array.version]).toEqual(['float32', [2, 2], [version, 0]]);
    }
    const spaced = parseNpy(npyBytes('{"shape":(4,),"fortran_order":False,"descr":"<f4"}', data));
    expect(spaced.shape).toEqual([4]);
    const path = join(folder, 'hand.npy');
    writeFileSync(path, npyBytes(header, data));
    const tensor = loadNpy(path);
    expect(tensor.toArray()).toEqual([
      [1, 2],
      [3, 4],
    ]);
    tensor.dispose();
  });

  it('rejects truncated files and bad headers', () => {
    const bytes = npyBytes(header, data);
    expect(() =>
      parseNpy(bytes.subarray(0, bytes.length - 4), 'cut.npy'),
    ).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: parseNpy: cut.npy: truncated data (the file is shorter than its header declares)
        expected: 16 data bytes for shape [2, 2] of float32
        got: 12 bytes]
    `);
    expect(() => parseNpy(bytes.subarray(0, 40), 'cut-header.npy')).toThrow(/truncated header/);
    expect(() => parseNpy(new TextEncoder().encode('PK\u0003\u0004 not npy at all'), 'x.npz')).toThrow(
      /not a .npy file \(bad magic string\)/,
    );
    const future = Uint8Array.from(bytes);
    future[6] = 4;
    expect(() => parseNpy(future, 'v4.npy')).toThrow(/unsupported .npy format version 4.0/);
    expect(() => parseNpy(npyBytes("{'descr': '<f4', 'shape': (4,)}", data), 'keys.npy')).toThrow(
      /wrong keys/,
    );
    expect(() =>
      parseNpy(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': True}", data)),
    ).toThrow(/wrong keys/);
    expect(() => parseNpy(npyBytes("{'descr': __import__('os'), }", data), 'evil.npy')).toThrow(
      /malformed header/,
    );
    expect(() =>
      parseNpy(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", data)),
    ).toThrow(/malformed header/);
    expect(() =>
      parseNpy(
        npyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999, 99999999), }", data),
        'huge',
      ),
    ).toThrow(/truncated data/);
    expect(() =>
      parseNpy(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", data), 'long'),
    ).toThrow(/4 unexpected bytes after the data/);
  });
});
