import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import {
  createRunSecret,
  decodeMessage,
  encodeFrame,
  encodeMessage,
  FRAME_HEADER_BYTES,
  type Frame,
  FrameReader,
  FrameWriter,
  HEADER_OFFSET,
  MAX_PAYLOAD_BYTES,
  MessageKind,
  sendFrame,
  WireError,
} from '../src/wire/index.js';
import {
  caught,
  caughtSync,
  closedSocket,
  messageFrame,
  rawConnect,
  rawServer,
} from './fixtures/wire-helpers.js';
import { COORDINATOR_SAMPLES, RANK_SAMPLES } from './fixtures/wire-samples.js';

const secret = createRunSecret();

/** Feeds `chunks` to a fresh reader; returns the frames, or throws the reader's error. */
function readAll(
  chunks: Uint8Array[],
  options: Partial<ConstructorParameters<typeof FrameReader>[0]> = {},
): Frame[] {
  const reader = new FrameReader({ key: secret, ...options });
  const frames: Frame[] = [];
  for (const chunk of chunks)
    reader.push(chunk, (frame) => frames.push({ ...frame, payload: new Uint8Array(frame.payload) }));
  reader.end();
  return frames;
}

function rejection(
  chunks: Uint8Array[],
  options: Partial<ConstructorParameters<typeof FrameReader>[0]> = {},
): WireError {
  const error = caughtSync(() => readAll(chunks, options));
  if (!WireError.isInstance(error)) throw new Error(`expected a WireError, got ${error.message}`);
  expect(error.code).toBe('ERR_WIRE');
  return error;
}

/** A stream of frames numbered from 0: a message of each sample plus empty and large payloads. */
function sampleStream(): { bytes: Uint8Array; payloads: Uint8Array[] } {
  const messages = [...COORDINATOR_SAMPLES, ...RANK_SAMPLES];
  const payloads: Uint8Array[] = [];
  const frames: Uint8Array[] = [];
  messages.forEach((message, sequence) => {
    const { kind, payload } = encodeMessage(message);
    payloads.push(new Uint8Array(payload));
    frames.push(encodeFrame(secret, { kind, sequence }, payload));
  });
  const large = new Uint8Array(randomBytes(600));
  payloads.push(new Uint8Array(0), large);
  frames.push(
    encodeFrame(secret, { kind: MessageKind.TensorChunk, sequence: messages.length }, new Uint8Array(0)),
  );
  frames.push(encodeFrame(secret, { kind: MessageKind.TensorChunk, sequence: messages.length + 1 }, large));
  return { bytes: Buffer.concat(frames), payloads };
}

describe('frame layout', () => {
  it('is a 32-byte little-endian header then the payload', () => {
    const frame = encodeFrame(
      secret,
      { kind: MessageKind.Heartbeat, sequence: 7 },
      Uint8Array.of(0x91, 0x05),
    );
    expect(frame.length).toBe(FRAME_HEADER_BYTES + 2);
    expect(Buffer.from(frame.subarray(0, 16)).toString('hex')).toMatchInlineSnapshot(
      `"c4170df1010003030200000007000000"`,
    );
    const view = new DataView(frame.buffer);
    expect(view.getUint16(HEADER_OFFSET.kind, true)).toBe(MessageKind.Heartbeat);
    expect(view.getUint32(HEADER_OFFSET.sequence, true)).toBe(7);
  });

  it('reads back what it wrote, one message per sample', () => {
    const { bytes, payloads } = sampleStream();
    const frames = readAll([bytes]);
    expect(frames.map((frame) => frame.payload)).toEqual(payloads);
    expect(frames.map((frame) => frame.sequence)).toEqual(payloads.map((_, index) => index));
    const messages = [...COORDINATOR_SAMPLES, ...RANK_SAMPLES];
    expect(frames.slice(0, messages.length).map((frame) => decodeMessage(frame.kind, frame.payload))).toEqual(
      messages,
    );
  });
});

describe('FrameReader reassembly', () => {
  it('handles a stream split at every byte boundary', () => {
    const { bytes, payloads } = sampleStream();
    for (let split = 0; split <= bytes.length; split += 1) {
      const frames = readAll([bytes.subarray(0, split), bytes.subarray(split)]);
      expect(frames.length).toBe(payloads.length);
      expect(frames[frames.length - 1]!.payload).toEqual(payloads[payloads.length - 1]);
    }
  });

  it('handles one byte at a time and random chunkings', () => {
    const { bytes, payloads } = sampleStream();
    const single = readAll(Array.from(bytes, (byte) => Uint8Array.of(byte)));
    expect(single.map((frame) => frame.payload)).toEqual(payloads);
    for (let trial = 0; trial < 50; trial += 1) {
      const chunks: Uint8Array[] = [];
      for (let offset = 0; offset < bytes.length; ) {
        const size = 1 + Math.floor(Math.random() * 400);
        chunks.push(bytes.subarray(offset, offset + size));
        offset += size;
      }
      expect(readAll(chunks).map((frame) => frame.payload)).toEqual(payloads);
    }
  });

  it('hands out a payload that arrived whole as a view, without copying', () => {
    const frame = messageFrame(secret, { type: 'Heartbeat', stepCount: 3 });
    const reader = new FrameReader({ key: secret });
    let payload: Uint8Array | undefined;
    reader.push(frame, (received) => {
      payload = received.payload;
    });
    expect(payload!.buffer).toBe(frame.buffer);
    expect(payload!.byteOffset).toBe(FRAME_HEADER_BYTES);
  });

  it('buffers at most one header and one payload, allocated only after the header checks', () => {
    const reader = new FrameReader({ key: secret, maxPayloadBytes: 1024 });
    const frame = encodeFrame(secret, { kind: MessageKind.TensorChunk, sequence: 0 }, randomBytes(1000));
    reader.push(frame.subarray(0, 600), () => {});
    expect(reader.bufferedBytes).toBe(600);
    expect(reader.atFrameBoundary).toBe(false);
    reader.push(frame.subarray(600), () => {});
    expect(reader.bufferedBytes).toBe(0);
    expect(reader.framesRead).toBe(1);
  });

  /** A reader whose TensorChunk payloads go to `target` from byte 100, and one such frame of `data`. */
  function targetReader() {
    const target = new Uint8Array(1100);
    const data = randomBytes(1000);
    const reader = new FrameReader({ key: secret });
    reader.payloadTarget = (header) => target.subarray(100, 100 + header.payloadLength);
    const frame = encodeFrame(secret, { kind: MessageKind.TensorChunk, sequence: 0 }, data);
    return { target, data, reader, frame };
  }

  it('writes a payload straight into a consumer buffer when asked', () => {
    const { target, data, reader, frame } = targetReader();
    for (let offset = 0; offset < frame.length; offset += 77)
      reader.push(frame.subarray(offset, offset + 77), () => {});
    expect(target.subarray(100)).toEqual(new Uint8Array(data));
  });

  it('names where the rest of a consumer payload goes, and takes bytes read there without copying them', () => {
    const { target, data, reader, frame } = targetReader();
    expect(reader.pendingTarget).toBeUndefined(); // between frames
    reader.push(frame.subarray(0, FRAME_HEADER_BYTES + 300), () => {});
    const rest = reader.pendingTarget!;
    expect([rest.buffer, rest.byteOffset, rest.length]).toEqual([target.buffer, 400, 700]);
    // As a socket dialed with `SocketReads` does: the read lands in place, then is pushed.
    const copies = vi.spyOn(Uint8Array.prototype, 'set');
    let frames = 0;
    for (const [start, end] of [
      [300, 650],
      [650, 1000],
    ] as const) {
      const read = reader.pendingTarget!.subarray(0, end - start);
      read.set(data.subarray(start, end));
      copies.mockClear();
      reader.push(read, () => (frames += 1));
      expect(
        copies.mock.contexts.filter((context) => (context as Uint8Array).buffer === target.buffer),
      ).toEqual([]);
    }
    copies.mockRestore();
    expect(frames).toBe(1);
    expect(target.subarray(100)).toEqual(new Uint8Array(data));
    expect(reader.pendingTarget).toBeUndefined();
  });

  it('names no pending target for payloads of its own, or once it failed', () => {
    const reader = new FrameReader({ key: secret });
    const frame = encodeFrame(secret, { kind: MessageKind.TensorChunk, sequence: 0 }, randomBytes(100));
    reader.push(frame.subarray(0, FRAME_HEADER_BYTES + 10), () => {});
    expect(reader.pendingTarget).toBeUndefined();
    const target = new Uint8Array(100);
    const failing = new FrameReader({ key: secret });
    failing.payloadTarget = () => target;
    const forged = encodeFrame(
      createRunSecret(),
      { kind: MessageKind.TensorChunk, sequence: 0 },
      randomBytes(100),
    );
    failing.push(forged.subarray(0, FRAME_HEADER_BYTES + 10), () => {});
    expect(failing.pendingTarget?.length).toBe(90);
    expect(() => failing.push(forged.subarray(FRAME_HEADER_BYTES + 10), () => {})).toThrow(WireError);
    expect(failing.pendingTarget).toBeUndefined();
  });
});

describe('FrameReader rejections name the bad field', () => {
  const good = () => messageFrame(secret, { type: 'Heartbeat', stepCount: 3 });

  it('bad magic, as soon as the first wrong byte arrives', () => {
    const error = rejection([Buffer.from('GET / HTTP/1.1\r\n')]);
    expect(error.reason).toBe('magic');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad magic: this is not a flodl frame (is something else talking to this port?)
        expected: 0xf10d17c4
        got: 0x20544547 ("GET ")"
    `);
    expect(rejection([Uint8Array.of(0x00)]).message).toMatchInlineSnapshot(`
      "wire: bad magic: this is not a flodl frame (is something else talking to this port?)
        expected: 0xf10d17c4
        got: 1 byte(s) 00"
    `);
  });

  it('bad version', () => {
    const frame = messageFrame(secret, { type: 'Heartbeat', stepCount: 3 }, { version: 2 });
    const error = rejection([frame]);
    expect(error.reason).toBe('version');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad version: the peer speaks another protocol version (run the same @flodl/distributed on every host)
        expected: 1
        got: 2"
    `);
  });

  it('bad kind: unknown, and known but not accepted from this peer', () => {
    const unknown = encodeFrame(secret, { kind: 0x7777, sequence: 0 }, Uint8Array.of(0x90));
    expect(rejection([unknown]).message).toMatchInlineSnapshot(`
      "wire: bad kind: 0x7777 (unknown) is not accepted here
        expected: one of Hello, Welcome, Reject, StartEpoch, SyncNow, RequestParams, Update, Throttle, … (36 kinds)
        got: 0x7777 (unknown)"
    `);
    const fromCoordinator = messageFrame(secret, { type: 'SyncNow' });
    const error = rejection([fromCoordinator], {
      acceptedKinds: new Set([MessageKind.Heartbeat, MessageKind.Batch]),
      acceptedFrom: 'from a rank',
    });
    expect(error.reason).toBe('kind');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad kind: 0x0202 SyncNow is not accepted from a rank
        expected: one of Heartbeat, Batch
        got: 0x0202 SyncNow"
    `);
  });

  it('bad length: over the cap, before any payload is buffered', () => {
    const frame = good();
    new DataView(frame.buffer).setUint32(HEADER_OFFSET.payloadLength, MAX_PAYLOAD_BYTES + 1, true);
    const reader = new FrameReader({ key: secret });
    const error = caughtSync(() => reader.push(frame.subarray(0, 12), () => {}));
    expect((error as WireError).reason).toBe('length');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad length: the payload exceeds the cap
        expected: at most 16777216 bytes
        got: 16777217 bytes"
    `);
    expect(rejection([frame.subarray(0, 12)], { maxPayloadBytes: 0 }).reason).toBe('length');
  });

  it('bad tag: another key, a flipped payload bit, a flipped header bit', () => {
    const foreign = messageFrame(createRunSecret(), { type: 'Heartbeat', stepCount: 3 });
    const error = rejection([foreign]);
    expect(error.reason).toBe('tag');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad tag: the frame is not signed with this run's key (check that FLODL_SECRET or FLODL_SECRET_FILE match the coordinator's)
        got: 0x0303 Heartbeat, 2 payload bytes, sequence 0"
    `);
    const flippedPayload = good();
    flippedPayload[FRAME_HEADER_BYTES + 1]! ^= 0x01;
    expect(rejection([flippedPayload]).reason).toBe('tag');
    const flippedSequence = good();
    flippedSequence[HEADER_OFFSET.sequence]! ^= 0x01;
    expect(rejection([flippedSequence], { firstSequence: 1 }).reason).toBe('tag');
    const flippedTag = good();
    flippedTag[HEADER_OFFSET.tag + 15]! ^= 0x80;
    expect(rejection([flippedTag]).reason).toBe('tag');
  });

  it('bad sequence: a replayed frame', () => {
    const frame = good();
    const error = rejection([frame, frame]);
    expect(error.reason).toBe('sequence');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad sequence: a frame was replayed, dropped or reordered
        expected: 1
        got: 0"
    `);
  });

  it('truncated frame at end of stream', () => {
    const frame = good();
    expect(rejection([frame.subarray(0, 20)]).message).toMatchInlineSnapshot(`
      "wire: truncated frame: the connection ended inside a frame
        expected: a 32-byte header
        got: 20 bytes"
    `);
    expect(rejection([frame.subarray(0, frame.length - 1)]).message).toMatchInlineSnapshot(`
      "wire: truncated frame: the connection ended inside a frame
        expected: 32 header bytes + 2 payload bytes
        got: 33 bytes"
    `);
  });

  it('stays poisoned after a rejection', () => {
    const reader = new FrameReader({ key: secret });
    const first = caughtSync(() => reader.push(Uint8Array.of(1, 2, 3, 4), () => {}));
    expect(caughtSync(() => reader.push(good(), () => {}))).toBe(first);
    expect(caughtSync(() => reader.end())).toBe(first);
  });

  it('garbage body with a valid tag is caught by the codec', () => {
    const frame = encodeFrame(
      secret,
      { kind: MessageKind.Heartbeat, sequence: 0 },
      Uint8Array.of(0x92, 0xa1, 0x78, 0xc0),
    );
    const [received] = readAll([frame]);
    const error = caughtSync(() => decodeMessage(received!.kind, received!.payload));
    expect((error as WireError).reason).toBe('body');
    expect(error.message).toMatchInlineSnapshot(`
      "wire: bad body: Heartbeat is malformed
        expected: a list of 1 field (stepCount)
        got: ["x", null]"
    `);
  });
});

describe('FrameWriter backpressure', () => {
  it('waits for drain while a slow reader is paused, then delivers every frame in order', async () => {
    const { server, port, accepted } = await rawServer();
    const client = await rawConnect(port);
    const peer = await accepted();
    peer.pause(); // a reader that does not read
    const writer = new FrameWriter(client, { key: secret, writeTimeoutMs: 10_000 });
    const payload = new Uint8Array(256 * 1024).fill(7);
    const total = 96; // 24 MiB in all: far beyond what loopback socket buffers hold
    let completed = 0;
    let maxBuffered = 0;
    const writing = (async () => {
      for (let index = 0; index < total; index += 1) {
        await writer.write(MessageKind.TensorChunk, payload);
        completed += 1;
        maxBuffered = Math.max(maxBuffered, client.writableLength);
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const completedWhilePaused = completed;
    expect(completedWhilePaused).toBeLessThan(total);
    expect(client.writableNeedDrain).toBe(true);
    // The writer stops at one frame past the high-water mark: nothing model-sized piles up in user space.
    expect(client.writableLength).toBeLessThanOrEqual(
      payload.length + FRAME_HEADER_BYTES + client.writableHighWaterMark,
    );

    const reader = new FrameReader({ key: secret });
    let received = 0;
    peer.on('data', (chunk: Buffer) =>
      reader.push(chunk, (frame) => {
        expect(frame.sequence).toBe(received);
        expect(frame.payload.length).toBe(payload.length);
        received += 1;
      }),
    );
    peer.resume();
    await writing;
    await new Promise<void>((resolve) => {
      const check = (): void => (received === total ? resolve() : void setTimeout(check, 5));
      check();
    });
    expect(received).toBe(total);
    expect(maxBuffered).toBeLessThanOrEqual(
      payload.length + FRAME_HEADER_BYTES + client.writableHighWaterMark,
    );
    client.destroy();
    peer.destroy();
    server.close();
  });

  it('fails a write stall with ERR_TIMEOUT when the reader never reads', async () => {
    const { server, port, accepted } = await rawServer();
    const client = await rawConnect(port);
    const peer = await accepted();
    peer.pause();
    const writer = new FrameWriter(client, { key: secret, writeTimeoutMs: 200 });
    const payload = new Uint8Array(1024 * 1024);
    const error = await caught(async () => {
      for (;;) await writer.write(MessageKind.TensorChunk, payload);
    });
    expect(error.code).toBe('ERR_TIMEOUT');
    expect(error.message).toMatchInlineSnapshot(
      `"wire: waiting for the peer to read timed out after 200 ms (the peer stopped reading: a write stall)"`,
    );
    client.destroy();
    peer.destroy();
    server.close();
  });

  it('refuses to write to a closed socket (ERR_IO) and payloads over the cap', async () => {
    const { server, port, accepted } = await rawServer();
    const client = await rawConnect(port);
    const peer = await accepted();
    client.destroy();
    await closedSocket(client);
    const error = await caught(() => sendFrame(client, [Uint8Array.of(1)]));
    expect(error.code).toBe('ERR_IO');
    expect(error.message).toMatchInlineSnapshot(`"wire: sendFrame: the connection is closed"`);
    const writer = new FrameWriter(peer, { key: secret });
    const tooLarge = await caught(() =>
      writer.write(MessageKind.TensorChunk, new Uint8Array(MAX_PAYLOAD_BYTES + 1)),
    );
    expect(tooLarge.code).toBe('ERR_INVALID_ARGUMENT');
    peer.destroy();
    server.close();
    await once(server, 'close');
  });
});
