// The safetensors format: an 8-byte little-endian header length, a JSON header
// (name → {dtype, shape, data_offsets}, plus optional "__metadata__" strings), then the raw
// little-endian bytes. Weights move between flodl, PyTorch and Hugging Face tools this way.

import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  fsyncSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import {
  type Device,
  type DType,
  FlodlError,
  fromBytes,
  invalidArgument,
  type Tensor,
  toBytes,
} from '@flodl/tensor-native';

const DTYPE_TO_CODE: Record<DType, string> = {
  float16: 'F16',
  bfloat16: 'BF16',
  float32: 'F32',
  float64: 'F64',
  int32: 'I32',
  int64: 'I64',
  uint8: 'U8',
  bool: 'BOOL',
};
const CODE_TO_DTYPE = new Map<string, DType>(
  Object.entries(DTYPE_TO_CODE).map(([dtype, code]) => [code, dtype as DType]),
);
const ELEMENT_SIZE: Record<string, number> = {
  F16: 2,
  BF16: 2,
  F32: 4,
  F64: 8,
  I32: 4,
  I64: 8,
  U8: 1,
  BOOL: 1,
};
/** Headers larger than this are refused before anything is allocated for them. */
export const MAX_HEADER_BYTES = 100 * 1024 * 1024;

/** String metadata stored in the header's `__metadata__`. */
export type SafetensorsMetadata = Record<string, string>;

interface HeaderEntry {
  dtype: string;
  shape: number[];
  data_offsets: [number, number];
}

function corrupt(path: string, problem: string, got?: string): FlodlError {
  return new FlodlError('ERR_CHECKPOINT', `${path} is not a valid safetensors file: ${problem}`, {
    op: 'readSafetensors',
    ...(got === undefined ? {} : { got }),
  });
}

/** Something fed every byte of a file as it is written, in order: a `node:crypto` `Hash`. */
export interface ByteDigest {
  update(bytes: Uint8Array): unknown;
}

/**
 * Writes tensors to `path` atomically: a temporary file in the same folder is written and
 * flushed, then renamed over `path`, so a crash or a full disk never leaves a torn file.
 * `options.digest` is fed the file's bytes from memory as they are written (a checksum
 * without reading the file back).
 * @throws FlodlError ERR_IO when the file cannot be written (the previous file stays intact)
 */
export function writeSafetensors(
  path: string,
  tensors: Record<string, Tensor>,
  metadata: SafetensorsMetadata = {},
  options: { digest?: ByteDigest } = {},
): void {
  if (typeof path !== 'string' || path === '')
    throw invalidArgument('writeSafetensors', 'path', 'a file path', path);
  for (const [key, value] of Object.entries(metadata)) {
    if (typeof value !== 'string')
      throw invalidArgument('writeSafetensors', `metadata.${key}`, 'a string', value);
  }
  const names = Object.keys(tensors).sort();
  const header: Record<string, unknown> = {};
  if (Object.keys(metadata).length > 0) header.__metadata__ = metadata;
  const chunks: Uint8Array[] = [];
  let offset = 0;
  for (const name of names) {
    const tensor = tensors[name]!;
    const bytes = toBytes(tensor);
    header[name] = {
      dtype: DTYPE_TO_CODE[tensor.dtype],
      shape: [...tensor.shape],
      data_offsets: [offset, offset + bytes.length],
    };
    chunks.push(bytes);
    offset += bytes.length;
  }
  let headerText = JSON.stringify(header);
  // Pad with spaces so the data starts 8-byte aligned, as the reference implementation does.
  headerText += ' '.repeat((8 - (Buffer.byteLength(headerText) % 8)) % 8);
  const headerBytes = Buffer.from(headerText, 'utf8');
  const prefix = Buffer.alloc(8);
  prefix.writeBigUInt64LE(BigInt(headerBytes.length));
  const file = [prefix, headerBytes, ...chunks];
  if (options.digest) for (const chunk of file) options.digest.update(chunk);
  writeFileAtomic(path, file, 'writeSafetensors');
}

/**
 * Writes `chunks` to `path` atomically: a temporary file in the same folder is written,
 * flushed to disk (fsync) and renamed over `path`, so a crash or a full disk never leaves a
 * torn file. Checkpoint formats beside safetensors (JSON meta files) use it too.
 * @throws FlodlError ERR_IO (with `op`) when the file cannot be written; the previous file stays intact
 */
export function writeFileAtomic(path: string, chunks: readonly Uint8Array[], op = 'writeFileAtomic'): void {
  const temporary = join(
    dirname(path),
    `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
  let descriptor: number | undefined;
  try {
    descriptor = openSync(temporary, 'w');
    for (const chunk of chunks) {
      let written = 0;
      while (written < chunk.length) written += writeSync(descriptor, chunk, written, chunk.length - written);
    }
    fsyncSync(descriptor);
    closeSync(descriptor);
    descriptor = undefined;
    renameSync(temporary, path);
  } catch (error) {
    try {
      if (descriptor !== undefined) closeSync(descriptor);
      rmSync(temporary, { force: true });
    } catch {
      // the temporary file may not exist (the folder was unusable); nothing to clean up
    }
    throw new FlodlError('ERR_IO', `could not write ${path}: ${(error as Error).message}`, {
      op,
      cause: error,
    });
  }
}

/**
 * Checks a safetensors header (every size against `fileLength`) and returns where the data
 * starts, the metadata and the tensor entries; `headerBytes(n)` gives the n header bytes.
 */
function parseHeader(
  path: string,
  prefix: Buffer,
  fileLength: number,
  headerBytes: (length: number) => Buffer,
): { headerEnd: number; metadata: SafetensorsMetadata; entries: [string, HeaderEntry][] } {
  const headerLength = prefix.readBigUInt64LE(0);
  if (headerLength > BigInt(Math.min(MAX_HEADER_BYTES, fileLength - 8))) {
    throw corrupt(
      path,
      'the header length exceeds the file (truncated?) or the 100 MiB header limit',
      `${headerLength} bytes`,
    );
  }
  const headerEnd = 8 + Number(headerLength);
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(headerBytes(Number(headerLength)).toString('utf8'));
  } catch (error) {
    throw corrupt(path, `the header is not JSON (${(error as Error).message})`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header))
    throw corrupt(path, 'the header is not an object');
  const dataLength = fileLength - headerEnd;
  const metadata: SafetensorsMetadata = {};
  const entries: [string, HeaderEntry][] = [];
  for (const [name, value] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (value === null || typeof value !== 'object') throw corrupt(path, '__metadata__ is not an object');
      for (const [key, text] of Object.entries(value as Record<string, unknown>)) {
        if (typeof text !== 'string') throw corrupt(path, `__metadata__.${key} is not a string`);
        metadata[key] = text;
      }
      continue;
    }
    const entry = value as HeaderEntry;
    const elementSize = ELEMENT_SIZE[entry?.dtype];
    if (elementSize === undefined || !CODE_TO_DTYPE.has(entry.dtype))
      throw corrupt(path, `'${name}' has an unsupported dtype`, String(entry?.dtype));
    if (
      !Array.isArray(entry.shape) ||
      !entry.shape.every((size) => Number.isSafeInteger(size) && size >= 0)
    ) {
      throw corrupt(path, `'${name}' has an invalid shape`, JSON.stringify(entry.shape));
    }
    const offsets = entry.data_offsets;
    if (
      !Array.isArray(offsets) ||
      offsets.length !== 2 ||
      !offsets.every((item) => Number.isSafeInteger(item) && item >= 0)
    ) {
      throw corrupt(path, `'${name}' has invalid data_offsets`, JSON.stringify(offsets));
    }
    const [begin, end] = offsets;
    const expected = entry.shape.reduce((product, size) => product * size, 1) * elementSize;
    if (begin > end || end > dataLength || end - begin !== expected) {
      throw corrupt(
        path,
        `'${name}' points outside the data or has the wrong size (truncated?)`,
        `[${begin}, ${end}) of ${dataLength} bytes, needs ${expected}`,
      );
    }
    entries.push([name, entry]);
  }
  const sorted = [...entries].sort((a, b) => a[1].data_offsets[0] - b[1].data_offsets[0]);
  for (let k = 1; k < sorted.length; k++) {
    if (sorted[k]![1].data_offsets[0] < sorted[k - 1]![1].data_offsets[1])
      throw corrupt(path, `'${sorted[k]![0]}' overlaps '${sorted[k - 1]![0]}'`);
  }
  return { headerEnd, metadata, entries };
}

/** What `readSafetensors` returns. Dispose the tensors (or read inside tidy). */
export interface SafetensorsContents {
  tensors: Record<string, Tensor>;
  metadata: SafetensorsMetadata;
}

/**
 * Reads a safetensors file. Every size the header claims is checked against the file before
 * anything is allocated; a truncated or corrupt file gives ERR_CHECKPOINT and no tensors.
 * @throws FlodlError ERR_IO when the file cannot be read, ERR_CHECKPOINT when it is invalid
 */
export function readSafetensors(path: string, options: { device?: Device } = {}): SafetensorsContents {
  if (typeof path !== 'string' || path === '')
    throw invalidArgument('readSafetensors', 'path', 'a file path', path);
  let file: Buffer;
  try {
    const size = statSync(path).size;
    if (size < 8) throw corrupt(path, 'shorter than the 8-byte header length', `${size} bytes`);
    file = readFileSync(path);
  } catch (error) {
    if (FlodlError.isInstance(error)) throw error;
    throw new FlodlError('ERR_IO', `could not read ${path}: ${(error as Error).message}`, {
      op: 'readSafetensors',
      cause: error,
    });
  }
  const { headerEnd, metadata, entries } = parseHeader(path, file.subarray(0, 8), file.length, (length) =>
    file.subarray(8, 8 + length),
  );
  const tensors: Record<string, Tensor> = {};
  try {
    for (const [name, entry] of entries) {
      const [begin, end] = entry.data_offsets;
      const bytes = new Uint8Array(file.buffer, file.byteOffset + headerEnd + begin, end - begin);
      tensors[name] = fromBytes(
        bytes,
        entry.shape,
        CODE_TO_DTYPE.get(entry.dtype)!,
        options.device === undefined ? {} : { device: options.device },
      );
    }
  } catch (error) {
    for (const tensor of Object.values(tensors)) tensor.dispose();
    throw error;
  }
  return { tensors, metadata };
}

/**
 * Reads only the header of a safetensors file (its `__metadata__`), checking every size it
 * claims against the file, without reading the tensor data.
 * @throws FlodlError ERR_IO when the file cannot be read, ERR_CHECKPOINT when it is invalid
 */
export function readSafetensorsMetadata(path: string): SafetensorsMetadata {
  if (typeof path !== 'string' || path === '')
    throw invalidArgument('readSafetensorsMetadata', 'path', 'a file path', path);
  let descriptor: number | undefined;
  try {
    descriptor = openSync(path, 'r');
    const size = fstatSync(descriptor).size;
    if (size < 8) throw corrupt(path, 'shorter than the 8-byte header length', `${size} bytes`);
    const fd = descriptor;
    const read = (length: number, position: number): Buffer => {
      const buffer = Buffer.alloc(length);
      let done = 0;
      while (done < length) {
        const count = readSync(fd, buffer, done, length - done, position + done);
        if (count === 0) throw corrupt(path, 'the file ended inside its header');
        done += count;
      }
      return buffer;
    };
    return parseHeader(path, read(8, 0), size, (length) => read(length, 8)).metadata;
  } catch (error) {
    if (FlodlError.isInstance(error)) throw error;
    throw new FlodlError('ERR_IO', `could not read ${path}: ${(error as Error).message}`, {
      op: 'readSafetensorsMetadata',
      cause: error,
    });
  } finally {
    if (descriptor !== undefined) closeSync(descriptor);
  }
}
