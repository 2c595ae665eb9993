import { createCipheriv, hkdfSync, type KeyObject } from 'node:crypto';
import { FRAME_TAG_BYTES } from './frame.js';

/**
 * The capability a data channel's `Hello` offers and its `Welcome` echoes to authenticate bulk
 * frames (`TensorChunk`) with ChaCha20-Poly1305 instead of HMAC-SHA256: several times faster
 * per byte, so a large model's snapshot is bounded by the socket, not by the tag. Peers that do
 * not both speak it keep HMAC-SHA256 on every frame (the wire stays compatible).
 */
export const BULK_MAC_CAPABILITY = 'bulk-mac:chacha20-poly1305';

/** Bulk-frame authentication of one direction of a connection. */
export interface BulkMac {
  /** The frame kind it covers. */
  readonly kind: number;
  /** 32 bytes derived from that direction's session key ({@link deriveBulkKey}). */
  readonly key: Uint8Array;
}

/** Something a frame's signed header and payload parts are fed to, then read once. */
export interface FrameTagger {
  update(part: Uint8Array): unknown;
  /** The 16-byte tag. */
  digest(): Buffer;
}

/** The bulk key of one direction: HKDF-SHA256 of its session key, in its own domain. */
export function deriveBulkKey(sessionKey: KeyObject): Uint8Array {
  return new Uint8Array(
    hkdfSync('sha256', sessionKey.export(), new Uint8Array(0), 'flodl wire bulk chacha20-poly1305', 32),
  );
}

/**
 * The tagger of one bulk frame: ChaCha20-Poly1305 over no plaintext with the signed header and
 * the payload as additional data (the AEAD's tag is then a MAC of them). The nonce is the
 * frame's position in its direction's stream, `sequence` and the count of `wraps` of the
 * 32-bit sequence, so no nonce repeats under one key.
 */
export function bulkTagger(bulk: BulkMac, sequence: number, wraps: number): FrameTagger {
  const nonce = new Uint8Array(12);
  const view = new DataView(nonce.buffer);
  view.setUint32(0, sequence >>> 0, true);
  view.setUint32(4, wraps >>> 0, true);
  view.setUint32(8, Math.floor(wraps / 2 ** 32) >>> 0, true);
  const cipher = createCipheriv('chacha20-poly1305', bulk.key, nonce, { authTagLength: FRAME_TAG_BYTES });
  return {
    update: (part) => cipher.setAAD(part, { plaintextLength: 0 }),
    digest: () => {
      cipher.final();
      return cipher.getAuthTag();
    },
  };
}
