// Shared test helpers: temporary folders, file builders for IDX and .npy, a leak guard.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { liveTensorCount } from '@flodl/tensor-native';
import { afterAll, expect } from 'vitest';

/** A fresh temporary folder, removed after the file's tests. */
export function temporaryFolder(prefix: string): string {
  const folder = mkdtempSync(join(tmpdir(), `flodl-${prefix}-`));
  afterAll(() => rmSync(folder, { recursive: true, force: true }));
  return folder;
}

/** Runs `fn` and checks that it leaves no more live tensors than it found. */
export async function expectNoLeaks(fn: () => void | Promise<void>): Promise<void> {
  const before = liveTensorCount();
  await fn();
  expect(liveTensorCount()).toBe(before);
}

/** IDX type codes by element type. */
const IDX_CODES = {
  uint8: 0x08,
  int8: 0x09,
  int16: 0x0b,
  int32: 0x0c,
  float32: 0x0d,
  float64: 0x0e,
} as const;
const IDX_SIZES = { uint8: 1, int8: 1, int16: 2, int32: 4, float32: 4, float64: 8 } as const;

/** The bytes of an IDX file holding `values` (big-endian), shape `shape`. */
export function idxBytes(type: keyof typeof IDX_CODES, shape: number[], values: number[]): Uint8Array {
  const header = 4 + 4 * shape.length;
  const bytes = new Uint8Array(header + values.length * IDX_SIZES[type]);
  const view = new DataView(bytes.buffer);
  bytes[2] = IDX_CODES[type];
  bytes[3] = shape.length;
  shape.forEach((size, dim) => {
    view.setUint32(4 + 4 * dim, size);
  });
  values.forEach((value, k) => {
    const at = header + k * IDX_SIZES[type];
    if (type === 'uint8') view.setUint8(at, value);
    else if (type === 'int8') view.setInt8(at, value);
    else if (type === 'int16') view.setInt16(at, value);
    else if (type === 'int32') view.setInt32(at, value);
    else if (type === 'float32') view.setFloat32(at, value);
    else view.setFloat64(at, value);
  });
  return bytes;
}

/** The bytes of a .npy file: `header` is the dict text, `data` the raw element bytes. */
export function npyBytes(header: string, data: Uint8Array, version: 1 | 2 | 3 = 1): Uint8Array {
  const lengthBytes = version === 1 ? 2 : 4;
  const encoded = new TextEncoder().encode(header);
  // Pad with spaces and a newline so the data starts on a 64-byte boundary, as NumPy does.
  const unpadded = 8 + lengthBytes + encoded.length + 1;
  const padding = (64 - (unpadded % 64)) % 64;
  const headerLength = encoded.length + padding + 1;
  const bytes = new Uint8Array(8 + lengthBytes + headerLength + data.length);
  bytes.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, version, 0]);
  const view = new DataView(bytes.buffer);
  if (version === 1) view.setUint16(8, headerLength, true);
  else view.setUint32(8, headerLength, true);
  const start = 8 + lengthBytes;
  bytes.set(encoded, start);
  bytes.fill(0x20, start + encoded.length, start + headerLength - 1);
  bytes[start + headerLength - 1] = 0x0a;
  bytes.set(data, start + headerLength);
  return bytes;
}

/** Little-endian bytes of float32 values. */
export function float32Bytes(values: number[]): Uint8Array {
  return new Uint8Array(new Float32Array(values).buffer);
}
