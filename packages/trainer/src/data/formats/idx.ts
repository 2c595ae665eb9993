// The IDX format of the MNIST family (LeCun et al.): a 4-byte magic number (0x00 0x00, an
// element type code, a dimension count), one big-endian uint32 size per dimension, then the
// elements in row-major order, big-endian.
import { type Device, fromData, type Tensor } from '@flodl/tensor-native';
import { fileError } from '../errors.js';
import { type ReadFileOptions, readDataFile } from './read-file.js';

/** Element types of IDX files, by their type code. */
export type IdxElementType = 'uint8' | 'int8' | 'int16' | 'int32' | 'float32' | 'float64';

/** The decoded contents of an IDX file, elements in native byte order. */
export interface IdxArray {
  readonly type: IdxElementType;
  readonly shape: readonly number[];
  readonly data: Uint8Array | Int8Array | Int16Array | Int32Array | Float32Array | Float64Array;
}

const TYPE_CODES: ReadonlyMap<number, { type: IdxElementType; size: number }> = new Map([
  [0x08, { type: 'uint8', size: 1 }],
  [0x09, { type: 'int8', size: 1 }],
  [0x0b, { type: 'int16', size: 2 }],
  [0x0c, { type: 'int32', size: 4 }],
  [0x0d, { type: 'float32', size: 4 }],
  [0x0e, { type: 'float64', size: 8 }],
]);

const hex = (value: number, digits: number) => `0x${value.toString(16).padStart(digits, '0')}`;

/**
 * Decodes IDX bytes (already decompressed). Every size in the header is checked against the
 * bytes actually present before anything is allocated.
 *
 * @param source names the data in error messages (a file path, usually)
 * @throws FlodlError ERR_IO naming `source` on a bad magic number, an unknown type code, zero
 *   dimensions, a truncated header or data, or bytes after the data
 * @example parseIdx(bytes, 'train-labels-idx1-ubyte') // { type: 'uint8', shape: [60000], data }
 */
export function parseIdx(bytes: Uint8Array, source = 'IDX data'): IdxArray {
  const op = 'parseIdx';
  if (bytes.length < 4) {
    throw fileError(op, source, 'too short to be an IDX file', {
      expected: 'at least the 4-byte magic number',
      got: `${bytes.length} bytes`,
    });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = view.getUint32(0);
  const element = TYPE_CODES.get(bytes[2]!);
  if (bytes[0] !== 0 || bytes[1] !== 0 || element === undefined) {
    throw fileError(op, source, 'bad magic number: not an IDX file', {
      expected: `0x0000 then a type code (${[...TYPE_CODES.keys()].map((code) => hex(code, 2)).join(', ')}) and a dimension count, e.g. 0x00000803 for images`,
      got: hex(magic, 8),
    });
  }
  const rank = bytes[3]!;
  if (rank === 0) throw fileError(op, source, 'the header declares 0 dimensions', { got: hex(magic, 8) });
  const headerBytes = 4 + 4 * rank;
  if (bytes.length < headerBytes) {
    throw fileError(op, source, 'truncated header', {
      expected: `${headerBytes} header bytes for ${rank} dimensions`,
      got: `${bytes.length} bytes in all`,
    });
  }
  const shape = Array.from({ length: rank }, (_, dim) => view.getUint32(4 + 4 * dim));
  const available = bytes.length - headerBytes;
  // Bounded by the file: the element count may not exceed what the remaining bytes can hold.
  const capacity = Math.floor(available / element.size);
  let count = 1;
  for (const size of shape) {
    if (size !== 0 && count > capacity / size) {
      throw truncated(op, source, shape, element, available);
    }
    count *= size;
  }
  const needed = count * element.size;
  if (available < needed) throw truncated(op, source, shape, element, available);
  if (available > needed) {
    throw fileError(op, source, `${available - needed} unexpected bytes after the data`, {
      expected: `${needed} data bytes for shape [${shape.join(', ')}] of ${element.type}`,
      got: `${available} bytes`,
    });
  }
  return { type: element.type, shape, data: decode(bytes, headerBytes, count, element.type) };
}

function truncated(
  op: string,
  source: string,
  shape: readonly number[],
  element: { type: IdxElementType; size: number },
  available: number,
) {
  const count = shape.reduce((product, size) => product * size, 1);
  return fileError(op, source, 'truncated data (the file is shorter than its header declares)', {
    expected: `${count * element.size} data bytes for shape [${shape.join(', ')}] of ${element.type}`,
    got: `${available} bytes`,
  });
}

function decode(bytes: Uint8Array, offset: number, count: number, type: IdxElementType): IdxArray['data'] {
  const view = new DataView(bytes.buffer, bytes.byteOffset + offset, bytes.byteLength - offset);
  switch (type) {
    case 'uint8':
      return bytes.subarray(offset, offset + count);
    case 'int8':
      return new Int8Array(bytes.buffer, bytes.byteOffset + offset, count).slice();
    case 'int16':
      return Int16Array.from({ length: count }, (_, k) => view.getInt16(2 * k));
    case 'int32':
      return Int32Array.from({ length: count }, (_, k) => view.getInt32(4 * k));
    case 'float32':
      return Float32Array.from({ length: count }, (_, k) => view.getFloat32(4 * k));
    case 'float64':
      return Float64Array.from({ length: count }, (_, k) => view.getFloat64(8 * k));
  }
}

/**
 * Reads an IDX file, raw or gzip-compressed (detected from its first bytes, not its name).
 *
 * @example readIdx('/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz').shape // [10000]
 * @throws FlodlError ERR_IO naming the file when it is missing, not IDX, or truncated
 * PyTorch: `torchvision.datasets.mnist.read_sn3_pascalvincent_tensor`.
 */
export function readIdx(path: string, options: ReadFileOptions = {}): IdxArray {
  return parseIdx(readDataFile('readIdx', path, options), path);
}

/** Options of {@link loadIdx}. */
export interface LoadIdxOptions extends ReadFileOptions {
  /** Where the tensor goes. Default `'cpu'`. */
  device?: Device;
}

/**
 * Reads an IDX file into a tensor of its shape. uint8 stays uint8, int32/float32/float64 keep
 * their type; int8 and int16 (which libtorch here has no dtype for) widen to int32.
 *
 * @example const labels = loadIdx(`${root}/train-labels-idx1-ubyte.gz`); // uint8 [60000]
 * @throws FlodlError ERR_IO as {@link readIdx}
 */
export function loadIdx(path: string, options: LoadIdxOptions = {}): Tensor {
  const { device, ...readOptions } = options;
  const array = readIdx(path, readOptions);
  return fromData(array.data, [...array.shape], device === undefined ? undefined : { device });
}
