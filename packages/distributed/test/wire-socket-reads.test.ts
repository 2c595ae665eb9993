import { describe, expect, it } from 'vitest';
import { SocketReads } from '../src/wire/socket-reads.js';

/** What Node does with `onread`: asks for a buffer, reads `bytes` into it, hands it back. */
function read(reads: SocketReads, bytes: Uint8Array): Uint8Array {
  const { buffer, callback } = reads.onread;
  const into = typeof buffer === 'function' ? buffer() : buffer;
  into.set(bytes);
  callback(bytes.length, into);
  return into;
}

describe('SocketReads', () => {
  it('reads into the consumer target when there is one, else into one reused scratch buffer', () => {
    const reads = new SocketReads();
    const delivered: number[][] = [];
    let target: Uint8Array | undefined;
    reads.attach({ target: () => target, deliver: (chunk) => delivered.push([...chunk]) });
    const scratch = read(reads, Uint8Array.of(1, 2));
    expect(read(reads, Uint8Array.of(3)).buffer).toBe(scratch.buffer);
    const destination = new Uint8Array(8);
    target = destination.subarray(2);
    const into = read(reads, Uint8Array.of(4, 5, 6));
    expect([into.buffer, into.byteOffset]).toEqual([destination.buffer, 2]);
    expect(destination).toEqual(Uint8Array.of(0, 0, 4, 5, 6, 0, 0, 0));
    expect(delivered).toEqual([[1, 2], [3], [4, 5, 6]]);
  });

  it('keeps reads made before a consumer is attached, copied, and hands them over in order', () => {
    const reads = new SocketReads();
    read(reads, Uint8Array.of(7, 8));
    read(reads, Uint8Array.of(9)); // the scratch buffer again: the first read must have been copied
    const delivered: number[][] = [];
    reads.attach({ target: () => undefined, deliver: (chunk) => delivered.push([...chunk]) });
    read(reads, Uint8Array.of(10));
    expect(delivered).toEqual([[7, 8], [9], [10]]);
  });
});
