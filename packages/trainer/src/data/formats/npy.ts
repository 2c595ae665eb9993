// NumPy's .npy format (versions 1.0, 2.0 and 3.0): the magic string "\x93NUMPY", a version,
// a little-endian header length (2 bytes in v1, 4 in v2/v3), a Python dict literal giving
// `descr`, `fortran_order` and `shape`, then the raw elements.
import { type Device, FlodlError, fromBytes, fromData, type Tensor } from '@flodl/tensor-native';
import { fileError } from '../errors.js';
import { type HeaderValue, LiteralSyntaxError, parseHeaderDict } from './python-literal.js';
import { type ReadFileOptions, readDataFile } from './read-file.js';

/** Element types the reader accepts, by their NumPy names. */
export type NpyElementType =
  | 'float16'
  | 'float32'
  | 'float64'
  | 'int8'
  | 'int16'
  | 'int32'
  | 'int64'
  | 'uint8'
  | 'bool';

/** The decoded contents of a .npy file: raw little-endian element bytes in C order. */
export interface NpyArray {
  readonly type: NpyElementType;
  readonly shape: readonly number[];
  /** The elements' bytes, little-endian, row-major. */
  readonly bytes: Uint8Array;
  /** The format version, `[major, minor]`. */
  readonly version: readonly [number, number];
}

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
const MAX_HEADER_BYTES = 1 << 20;
const DESCRIPTORS: Readonly<Record<string, { type: NpyElementType; size: number }>> = {
  f2: { type: 'float16', size: 2 },
  f4: { type: 'float32', size: 4 },
  f8: { type: 'float64', size: 8 },
  i1: { type: 'int8', size: 1 },
  i2: { type: 'int16', size: 2 },
  i4: { type: 'int32', size: 4 },
  i8: { type: 'int64', size: 8 },
  u1: { type: 'uint8', size: 1 },
  b1: { type: 'bool', size: 1 },
};
const SUPPORTED = Object.keys(DESCRIPTORS)
  .map((code) => `'<${code}'`)
  .join(', ');

/**
 * Decodes .npy bytes. The header's sizes are checked against the bytes present before
 * anything is allocated.
 *
 * @param source names the data in error messages (a file path, usually)
 * @throws FlodlError ERR_IO naming `source` on a bad magic string or version, a truncated
 *   header or data, a malformed header, Fortran order or trailing bytes; ERR_DTYPE on a
 *   big-endian or unsupported element type
 * @example parseNpy(bytes, 'weights.npy') // { type: 'float32', shape: [3, 4], bytes, version: [1, 0] }
 */
export function parseNpy(bytes: Uint8Array, source = 'npy data'): NpyArray {
  const op = 'parseNpy';
  if (bytes.length < 10 || MAGIC.some((byte, k) => bytes[k] !== byte)) {
    throw fileError(op, source, 'not a .npy file (bad magic string)', {
      expected: 'the bytes \\x93NUMPY',
      got: JSON.stringify(String.fromCharCode(...bytes.subarray(0, 6))),
    });
  }
  const major = bytes[6]!;
  const minor = bytes[7]!;
  if (major < 1 || major > 3) {
    throw fileError(op, source, `unsupported .npy format version ${major}.${minor}`, {
      expected: 'version 1.0, 2.0 or 3.0',
    });
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const lengthBytes = major === 1 ? 2 : 4;
  const headerStart = 8 + lengthBytes;
  if (bytes.length < headerStart) {
    throw fileError(op, source, 'truncated header', {
      expected: `${headerStart} bytes`,
      got: `${bytes.length}`,
    });
  }
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  const dataStart = headerStart + headerLength;
  if (headerLength > MAX_HEADER_BYTES || dataStart > bytes.length) {
    throw fileError(op, source, 'truncated header (the file is shorter than its header length)', {
      expected: `${headerLength} header bytes from offset ${headerStart}`,
      got: `${bytes.length} bytes in all`,
    });
  }
  const headerBytes = bytes.subarray(headerStart, dataStart);
  const header = new TextDecoder(major === 3 ? 'utf-8' : 'latin1').decode(headerBytes);
  const fields = parseHeader(op, source, header);
  const element = elementOf(op, source, fields.descr);
  if (fields.fortranOrder) {
    throw fileError(
      op,
      source,
      'the array is stored in Fortran (column-major) order, which is not supported',
      {
        expected: 'fortran_order: False; save it with np.save(path, np.ascontiguousarray(array))',
        got: 'fortran_order: True',
      },
    );
  }
  const available = bytes.length - dataStart;
  const capacity = Math.floor(available / element.size);
  let count = 1;
  for (const size of fields.shape) {
    if (size !== 0 && count > capacity / size) throw truncated(op, source, fields.shape, element, available);
    count *= size;
  }
  const needed = count * element.size;
  if (available < needed) throw truncated(op, source, fields.shape, element, available);
  if (available > needed) {
    throw fileError(op, source, `${available - needed} unexpected bytes after the data`, {
      expected: `${needed} data bytes for shape [${fields.shape.join(', ')}] of ${element.type}`,
      got: `${available} bytes`,
    });
  }
  return {
    type: element.type,
    shape: fields.shape,
    bytes: bytes.subarray(dataStart, dataStart + needed),
    version: [major, minor],
  };
}

function parseHeader(
  op: string,
  source: string,
  header: string,
): { descr: string; fortranOrder: boolean; shape: number[] } {
  let fields: Map<string, HeaderValue>;
  try {
    fields = parseHeaderDict(header);
  } catch (error) {
    if (!(error instanceof LiteralSyntaxError)) throw error;
    throw fileError(op, source, `malformed header: ${error.message}`, {
      expected: "a dict such as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }",
    });
  }
  const keys = [...fields.keys()].sort().join(', ');
  const descr = fields.get('descr');
  const fortranOrder = fields.get('fortran_order');
  const shape = fields.get('shape');
  if (
    fields.size !== 3 ||
    typeof descr !== 'string' ||
    typeof fortranOrder !== 'boolean' ||
    !Array.isArray(shape)
  ) {
    throw fileError(op, source, 'the header has the wrong keys or value types', {
      expected: "exactly 'descr' (a string), 'fortran_order' (True/False) and 'shape' (a tuple)",
      got: `keys ${keys}`,
    });
  }
  return { descr, fortranOrder, shape };
}

function elementOf(op: string, source: string, descr: string): { type: NpyElementType; size: number } {
  const order = descr[0];
  const element = DESCRIPTORS[descr.slice(1)];
  if (element !== undefined && order === '>' && element.size > 1) {
    throw new FlodlError('ERR_DTYPE', `${source}: big-endian data is not supported`, {
      op,
      expected: `a little-endian type (${SUPPORTED}); convert with array.astype(array.dtype.newbyteorder('<'))`,
      got: `'${descr}'`,
    });
  }
  // '|' marks types without a byte order, '=' the writer's native order (little-endian machines).
  if (element === undefined || (order !== '<' && order !== '|' && order !== '=' && order !== '>')) {
    throw new FlodlError('ERR_DTYPE', `${source}: unsupported element type '${descr}'`, {
      op,
      expected: `one of ${SUPPORTED} (C-order, little-endian)`,
      got: `'${descr}'`,
    });
  }
  return element;
}

function truncated(
  op: string,
  source: string,
  shape: readonly number[],
  element: { type: NpyElementType; size: number },
  available: number,
) {
  const count = shape.reduce((product, size) => product * size, 1);
  return fileError(op, source, 'truncated data (the file is shorter than its header declares)', {
    expected: `${count * element.size} data bytes for shape [${shape.join(', ')}] of ${element.type}`,
    got: `${available} bytes`,
  });
}

/**
 * Reads a .npy file (gzip-compressed files are accepted too).
 *
 * @example readNpy('weights.npy').shape // [3, 4]
 * @throws FlodlError ERR_IO / ERR_DTYPE as {@link parseNpy}, ERR_IO when the file is missing
 * PyTorch: `torch.from_numpy(np.load(path))`.
 */
export function readNpy(path: string, options: ReadFileOptions = {}): NpyArray {
  return parseNpy(readDataFile('readNpy', path, options), path);
}

/** Options of {@link loadNpy}. */
export interface LoadNpyOptions extends ReadFileOptions {
  /** Where the tensor goes. Default `'cpu'`. */
  device?: Device;
}

/**
 * Reads a .npy file into a tensor of its shape and type. int8 and int16 (which libtorch here
 * has no dtype for) widen to int32; every other type is kept, float16 included.
 *
 * @example const weights = loadNpy('weights.npy'); // float32 [3, 4]
 * @throws FlodlError as {@link readNpy}
 * PyTorch: `torch.from_numpy(np.load(path))`.
 */
export function loadNpy(path: string, options: LoadNpyOptions = {}): Tensor {
  const { device, ...readOptions } = options;
  return npyToTensor(readNpy(path, readOptions), device);
}

/** A tensor holding an {@link NpyArray}'s elements (copied). */
export function npyToTensor(array: NpyArray, device?: Device): Tensor {
  const shape = [...array.shape];
  const placement = device === undefined ? {} : { device };
  const { bytes } = array;
  if (array.type === 'int8' || array.type === 'int16') {
    // Copy to an aligned buffer of its own first: the data may start at any offset in the file.
    const aligned = new Uint8Array(bytes).buffer;
    const widened =
      array.type === 'int8' ? new Int8Array(aligned) : new Int16Array(aligned, 0, bytes.length / 2);
    return fromData(widened, shape, device === undefined ? undefined : { device });
  }
  return fromBytes(bytes, shape, array.type, placement);
}
