import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { BULK_MAC_CAPABILITY, type BulkMac } from '../src/wire/bulk-mac.js';
import {
  ControlServer,
  createRunSecret,
  type Frame,
  FrameReader,
  FrameWriter,
  MessageKind,
  type WireError,
} from '../src/wire/index.js';
import { rawRank } from './fixtures/wire-helpers.js';

const secret = createRunSecret();
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Frames a writer produced, as the bytes it wrote. */
function capture(): { sink: Writable; bytes: () => Uint8Array } {
  const parts: Uint8Array[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      parts.push(new Uint8Array(chunk));
      done();
    },
  });
  return { sink, bytes: () => Buffer.concat(parts) };
}

function read(reader: FrameReader, bytes: Uint8Array): Frame[] {
  const frames: Frame[] = [];
  reader.push(bytes, (frame) => frames.push({ ...frame, payload: frame.payload.slice() }));
  return frames;
}

describe('bulk frames under ChaCha20-Poly1305', () => {
  const bulk: BulkMac = { kind: MessageKind.TensorChunk, key: new Uint8Array(randomBytes(32)) };

  it('round-trips bulk and other frames across a sequence wrap; tampering and a wrong key fail the tag', async () => {
    const { sink, bytes } = capture();
    const first = 2 ** 32 - 2;
    const writer = new FrameWriter(sink, { key: secret, firstSequence: first });
    writer.setBulkMac(bulk);
    const chunks = [new Uint8Array(70_000).fill(7), new Uint8Array([1, 2, 3]), new Uint8Array(5).fill(9)];
    for (const chunk of chunks) await writer.write(MessageKind.TensorChunk, chunk);
    await writer.write(MessageKind.ContributionBegin, new Uint8Array([4]));
    const wire = bytes();

    const reader = new FrameReader({ key: secret, firstSequence: first });
    reader.setBulkMac(bulk);
    // Fed in odd pieces: the tag is computed over payload parts as they arrive.
    const frames = [...read(reader, wire.subarray(0, 40_001)), ...read(reader, wire.subarray(40_001))];
    expect(frames.map((frame) => frame.sequence)).toEqual([first, first + 1, 0, 1]);
    expect(frames.slice(0, 3).map((frame) => Array.from(frame.payload))).toEqual(
      chunks.map((c) => Array.from(c)),
    );

    const tampered = wire.slice();
    tampered[32 + 100] = (tampered[32 + 100] as number) ^ 1;
    const strict = new FrameReader({ key: secret, firstSequence: first });
    strict.setBulkMac(bulk);
    expect(() => read(strict, tampered)).toThrow(expect.objectContaining({ reason: 'tag' }) as WireError);

    // A peer that did not agree to the bulk tag reads HMAC: the first bulk frame fails.
    const plain = new FrameReader({ key: secret, firstSequence: first });
    expect(() => read(plain, wire)).toThrow(/bad tag/);
    // The bulk key of another connection fails too.
    const other = new FrameReader({ key: secret, firstSequence: first });
    other.setBulkMac({ ...bulk, key: new Uint8Array(randomBytes(32)) });
    expect(() => read(other, wire)).toThrow(/bad tag/);
  });

  it('is negotiated on data channels only: echoed to a rank that offers it, HMAC for one that does not', async () => {
    const server = await ControlServer.listen({ secret, worldSize: 2, heartbeatIntervalMs: 0 });
    cleanups.push(() => server.close({ timeoutMs: 1000 }));
    const offering = await rawRank(server.port, secret, 0, 2, 'data', [BULK_MAC_CAPABILITY]);
    const silent = await rawRank(server.port, secret, 1, 2, 'data');
    const control = await rawRank(server.port, secret, 0, 2, 'control', [BULK_MAC_CAPABILITY]);
    for (const raw of [offering, silent, control])
      cleanups.push(() => {
        raw.socket.destroy();
      });
    expect(offering.capabilities).toContain(BULK_MAC_CAPABILITY);
    expect(silent.capabilities).not.toContain(BULK_MAC_CAPABILITY);
    expect(control.capabilities).not.toContain(BULK_MAC_CAPABILITY);
  });
});
