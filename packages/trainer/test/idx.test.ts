import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { loadIdx, parseIdx, readIdx } from '../src/data/index.js';
import { expectNoLeaks, idxBytes, temporaryFolder } from './helpers.js';

const folder = temporaryFolder('idx');
function file(name: string, bytes: Uint8Array): string {
  const path = join(folder, name);
  writeFileSync(path, bytes);
  return path;
}

describe('IDX reader', () => {
  it('reads every element type, big-endian, into native order', () => {
    const cases = [
      ['uint8', [0, 7, 255]],
      ['int8', [-128, 0, 127]],
      ['int16', [-30000, 1, 30000]],
      ['int32', [-2147483648, 65536, 2147483647]],
      ['float32', [-1.5, 0, 3.25]],
      ['float64', [Math.PI, -1e300, 0.1]],
    ] as const;
    for (const [type, values] of cases) {
      const array = parseIdx(idxBytes(type, [3], [...values]));
      expect(array.type).toBe(type);
      expect(array.shape).toEqual([3]);
      expect(Array.from(array.data)).toEqual(values);
    }
  });

  it('reads raw and gzip files alike, whatever their names', () => {
    const bytes = idxBytes('uint8', [2, 2, 3], [...Array(12).keys()]);
    const raw = readIdx(file('images-idx3-ubyte', bytes));
    const gzipped = readIdx(file('images-idx3-ubyte.gz', gzipSync(bytes)));
    const misnamed = readIdx(file('no-extension', gzipSync(bytes)));
    for (const array of [raw, gzipped, misnamed]) {
      expect(array.shape).toEqual([2, 2, 3]);
      expect(Array.from(array.data)).toEqual([...Array(12).keys()]);
    }
  });

  it('loads a tensor; int8 and int16 widen to int32', async () => {
    await expectNoLeaks(() => {
      const images = loadIdx(file('u8', idxBytes('uint8', [2, 3], [1, 2, 3, 4, 5, 6])));
      expect(images.dtype).toBe('uint8');
      expect(images.toArray()).toEqual([
        [1, 2, 3],
        [4, 5, 6],
      ]);
      const small = loadIdx(file('i16', idxBytes('int16', [2], [-5, 300])));
      expect(small.dtype).toBe('int32');
      expect(small.toArray()).toEqual([-5, 300]);
      const floats = loadIdx(file('f32.gz', gzipSync(idxBytes('float32', [1, 2], [0.5, -2]))));
      expect(floats.dtype).toBe('float32');
      expect(floats.toArray()).toEqual([[0.5, -2]]);
      for (const tensor of [images, small, floats]) tensor.dispose();
    });
  });

  it('rejects a bad magic number, naming the file', () => {
    const path = file('bad-magic', Uint8Array.from([0x1f, 0x00, 0x08, 0x01, 0, 0, 0, 1, 5]));
    expect(() => readIdx(path)).toThrow(
      expect.objectContaining({
        code: 'ERR_IO',
        message: expect.stringContaining(`${path}: bad magic number: not an IDX file`),
        got: '0x1f000801',
      }),
    );
    expect(() => parseIdx(Uint8Array.from([0, 0, 0x07, 1, 0, 0, 0, 0]), 'x.idx')).toThrow(/bad magic number/);
    expect(() => parseIdx(Uint8Array.from([0, 0]), 'x.idx')).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: parseIdx: x.idx: too short to be an IDX file
        expected: at least the 4-byte magic number
        got: 2 bytes]
    `);
    expect(() => parseIdx(Uint8Array.from([0, 0, 8, 0]), 'x.idx')).toThrow(/0 dimensions/);
  });

  it('rejects truncated headers and data, and trailing bytes', () => {
    const bytes = idxBytes('int32', [4, 5], [...Array(20).keys()]);
    expect(() => parseIdx(bytes.subarray(0, 9), 'cut-header')).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: parseIdx: cut-header: truncated header
        expected: 12 header bytes for 2 dimensions
        got: 9 bytes in all]
    `);
    expect(() =>
      parseIdx(bytes.subarray(0, bytes.length - 1), 'cut-data'),
    ).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: parseIdx: cut-data: truncated data (the file is shorter than its header declares)
        expected: 80 data bytes for shape [4, 5] of int32
        got: 79 bytes]
    `);
    const longer = new Uint8Array(bytes.length + 3);
    longer.set(bytes);
    expect(() => parseIdx(longer, 'long')).toThrow(/3 unexpected bytes after the data/);
  });

  it('bounds header sizes by the file size before allocating', () => {
    // Claims 65535 × 65535 × 65535 float64 values in a 20-byte file.
    const bytes = idxBytes('float64', [65535, 65535, 65535], []);
    expect(() => parseIdx(bytes, 'huge')).toThrow(/truncated data/);
    const zero = parseIdx(idxBytes('uint8', [0, 28, 28], []), 'empty');
    expect(zero.shape).toEqual([0, 28, 28]);
  });

  it('reports missing files and truncated or corrupt gzip streams', () => {
    expect(() => readIdx(join(folder, 'missing.gz'))).toThrow(
      expect.objectContaining({
        code: 'ERR_IO',
        message: expect.stringContaining('missing.gz: no such file'),
      }),
    );
    const gzipped = gzipSync(idxBytes('uint8', [1000], Array(1000).fill(3)));
    const cut = file('cut.gz', gzipped.subarray(0, gzipped.length - 10));
    expect(() => readIdx(cut)).toThrow(/cut.gz: the gzip stream is truncated/);
    const corrupt = Uint8Array.from(gzipped);
    corrupt[2] = 7; // compression method 7 does not exist
    expect(() => readIdx(file('corrupt.gz', corrupt))).toThrow(/corrupt.gz: the gzip stream is corrupt/);
    expect(() => readIdx(file('big.gz', gzipped), { maxBytes: 100 })).toThrow(
      /larger than the reader allows/,
    );
    expect(() => readIdx(folder)).toThrow(/is a folder/);
  });
});
