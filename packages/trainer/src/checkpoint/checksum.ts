// The checksums of a bundle's files: SHA-256, taken from the bytes in memory as each file is
// written, and checked against the file on disk before a resume uses it, so a file changed
// in place (same size, other bytes) is refused instead of resuming into NaNs.

import { createHash, type Hash } from 'node:crypto';
import { closeSync, openSync, readSync } from 'node:fs';

/** The checksum algorithm a bundle's meta records (`files.*.sha256`). */
export const CHECKSUM_ALGORITHM = 'sha256';

/** How much of a file one read takes while it is hashed. */
const READ_BYTES = 4 * 1024 * 1024;

/** A fresh digest for a file about to be written: feed it the bytes, then {@link hexOf}. */
export function newDigest(): Hash {
  return createHash(CHECKSUM_ALGORITHM);
}

/** The digest's value as lowercase hex (64 characters). */
export function hexOf(digest: Hash): string {
  return digest.digest('hex');
}

/** The SHA-256 of `bytes`. */
export function checksumOfBytes(bytes: Uint8Array): string {
  return hexOf(newDigest().update(bytes));
}

/**
 * The SHA-256 of the file at `path`, read in 4 MiB pieces (a file of any size, in constant
 * memory). Errors of the read (a missing file) are thrown as they come.
 */
export function checksumOfFile(path: string): string {
  const digest = newDigest();
  const buffer = Buffer.allocUnsafe(READ_BYTES);
  const descriptor = openSync(path, 'r');
  try {
    for (;;) {
      const read = readSync(descriptor, buffer, 0, READ_BYTES, null);
      if (read === 0) break;
      digest.update(buffer.subarray(0, read));
    }
  } finally {
    closeSync(descriptor);
  }
  return hexOf(digest);
}

/** True for a SHA-256 as the meta records it. */
export function isChecksum(value: unknown): value is string {
  return typeof value === 'string' && /^[0-9a-f]{64}$/.test(value);
}
