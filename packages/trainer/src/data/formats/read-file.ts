// Reads a data file whole, gunzipping it when it starts with the gzip magic bytes.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { invalidArgument } from '@flodl/tensor-native';
import { fileError } from '../errors.js';

/** Options shared by the file readers. */
export interface ReadFileOptions {
  /**
   * The most bytes a file may hold after decompression: a corrupt or hostile gzip stream
   * cannot make the reader allocate more. Default 4 GiB.
   */
  maxBytes?: number;
}

/** Default bound on a file's decompressed size. */
export const DEFAULT_MAX_BYTES = 4 * 1024 ** 3;

/** True when `bytes` start with gzip's magic number 1f 8b. */
export function isGzip(bytes: Uint8Array): boolean {
  return bytes.length >= 2 && bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/**
 * The bytes of `path`, decompressed when the file is gzip (whatever its name).
 *
 * @throws FlodlError ERR_IO naming the file when it is missing, unreadable, a truncated or
 *   corrupt gzip stream, or larger than `maxBytes`
 */
export function readDataFile(op: string, path: string, options: ReadFileOptions = {}): Uint8Array {
  if (typeof path !== 'string' || path.length === 0) throw invalidArgument(op, 'path', 'a file path', path);
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) {
    throw invalidArgument(op, 'maxBytes', 'a positive integer', maxBytes);
  }
  let raw: Uint8Array;
  try {
    raw = readFileSync(path);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const problem =
      code === 'ENOENT'
        ? 'no such file'
        : code === 'EISDIR'
          ? 'is a folder, not a file'
          : `cannot be read (${code})`;
    throw fileError(op, path, problem, { cause: error });
  }
  if (!isGzip(raw)) {
    if (raw.length > maxBytes) throw tooLarge(op, path, maxBytes, `${raw.length} bytes`);
    return raw;
  }
  try {
    return gunzipSync(raw, { maxOutputLength: maxBytes });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ERR_BUFFER_TOO_LARGE')
      throw tooLarge(op, path, maxBytes, 'more after decompression', error);
    const problem =
      code === 'Z_BUF_ERROR'
        ? 'the gzip stream is truncated (unexpected end of file)'
        : `the gzip stream is corrupt (${(error as Error).message})`;
    throw fileError(op, path, problem, { cause: error, expected: 'a complete gzip file; download it again' });
  }
}

function tooLarge(op: string, path: string, maxBytes: number, got: string, cause?: unknown) {
  return fileError(op, path, 'the file is larger than the reader allows', {
    expected: `at most ${maxBytes} bytes (raise the maxBytes option if the file is right)`,
    got,
    cause,
  });
}
