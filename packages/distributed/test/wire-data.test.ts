import { once } from 'node:events';
import { type DType, liveTensorCount, randint, randn, type Tensor, toBytes } from '@flodl/tensor-native';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type ConnectionErrorEvent,
  ControlClient,
  ControlServer,
  type ControlServerOptions,
  createRunSecret,
  type DataChannel,
  type DataChannelOptions,
  encodeMessage,
  MessageKind,
  type OutgoingTensor,
  type WireError,
} from '../src/wire/index.js';
import { caught, closedSocket, eventually, rawRank } from './fixtures/wire-helpers.js';

const secret = createRunSecret();
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A coordinator and one rank with both channels open. */
async function pair(
  serverOptions: Partial<ControlServerOptions> = {},
  chunkBytes = 1000,
  rankOptions: DataChannelOptions = {},
) {
  const server = await ControlServer.listen({
    secret,
    worldSize: 2,
    heartbeatIntervalMs: 0,
    ...serverOptions,
  });
  const errors: ConnectionErrorEvent[] = [];
  server.on('connectionError', (event) => errors.push(event));
  cleanups.push(() => server.close({ timeoutMs: 1000 }));
  const client = await ControlClient.connect({
    port: server.port,
    secret,
    rank: 1,
    worldSize: 2,
    heartbeatIntervalMs: 0,
  });
  cleanups.push(() => client.close({ timeoutMs: 1000 }));
  const arrived = once(server, 'dataChannel');
  const rankChannel = await client.openDataChannel({ chunkBytes, ...rankOptions });
  const [rank, coordinatorChannel] = (await arrived) as [number, DataChannel];
  cleanups.push(() => rankChannel.close());
  return { server, client, rank, rankChannel, coordinatorChannel, errors };
}

/** `tensor` converted to `dtype`, the source released. */
function as(tensor: Tensor, dtype: DType): Tensor {
  const converted = tensor.to({ dtype });
  tensor.dispose();
  return converted;
}

/** Tensors of every wire dtype, odd shapes included. */
function sampleTensors(): { name: string; tensor: Tensor; mass: number }[] {
  return [
    { name: 'encoder.weight', tensor: randn([64, 300]), mass: 12.5 }, // 76 800 bytes: many 1000-byte chunks
    { name: 'encoder.bias', tensor: randn([300], { dtype: 'float64' }), mass: 12.5 },
    { name: 'embedding.bf16', tensor: as(randn([7, 5]), 'bfloat16'), mass: 3 },
    { name: 'head.f16', tensor: as(randn([3, 3]), 'float16'), mass: 0.25 },
    { name: 'counter', tensor: randint(-1000, 1000, [4], { dtype: 'int64' }), mass: 1 },
    { name: 'ids', tensor: randint(0, 100, [2, 2, 2], { dtype: 'int32' }), mass: 1 },
    { name: 'bytes', tensor: randint(0, 255, [1001], { dtype: 'uint8' }), mass: 1 },
    { name: 'mask', tensor: as(randint(0, 2, [9]), 'bool'), mass: 0 },
    { name: 'empty', tensor: randn([0, 3]), mass: 2 },
    { name: 'scalar', tensor: randn([]), mass: 2 },
  ];
}

describe('data channel', () => {
  it('round-trips tensors of every dtype with their masses, rank to coordinator', async () => {
    const { rank, rankChannel, coordinatorChannel } = await pair();
    expect(rank).toBe(1);
    const before = liveTensorCount();
    const tensors = sampleTensors();
    await rankChannel.send(17, tensors);
    const contribution = await coordinatorChannel.receiveContribution({ timeoutMs: 5000 });
    expect(contribution.version).toBe(17);
    expect(
      contribution.tensors.map(({ name, dtype, shape, mass, index, tensorCount }) => ({
        name,
        dtype,
        shape,
        mass,
        index,
        tensorCount,
      })),
    ).toEqual(
      tensors.map(({ name, tensor, mass }, index) => ({
        name,
        dtype: tensor.dtype,
        shape: [...tensor.shape],
        mass,
        index,
        tensorCount: tensors.length,
      })),
    );
    contribution.tensors.forEach((received, index) => {
      const original = tensors[index]!.tensor;
      expect(received.bytes).toEqual(toBytes(original));
      const rebuilt = received.toTensor();
      expect(rebuilt.dtype).toBe(original.dtype);
      expect(toBytes(rebuilt)).toEqual(toBytes(original));
      rebuilt.dispose();
    });
    for (const { tensor } of tensors) tensor.dispose();
    expect(liveTensorCount()).toBe(before);
  });

  it('sends host bytes back (the consensus) and queues concurrent sends without interleaving', async () => {
    const { rankChannel, coordinatorChannel } = await pair({}, 64);
    const average = new Float32Array([
      1.5, -2, 3.25, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20,
    ]);
    const consensus = (version: number): OutgoingTensor[] => [
      {
        name: 'w',
        mass: 40,
        dtype: 'float32',
        shape: [4, 5],
        bytes: new Uint8Array(average.buffer.slice(0)),
      },
      {
        name: 'b',
        mass: 40,
        dtype: 'float32',
        shape: [2],
        bytes: new Uint8Array(new Float32Array([version, -version]).buffer),
      },
    ];
    const first = coordinatorChannel.send(1, consensus(1));
    const second = coordinatorChannel.send(2, consensus(2));
    await Promise.all([first, second]);
    const one = await rankChannel.receiveContribution({ timeoutMs: 5000 });
    const two = await rankChannel.receiveContribution({ timeoutMs: 5000 });
    expect([one.version, two.version]).toEqual([1, 2]);
    expect(new Float32Array(one.tensors[0]!.bytes.buffer)).toEqual(average);
    expect(new Float32Array(two.tensors[1]!.bytes.buffer)).toEqual(new Float32Array([2, -2]));
    const tensor = one.tensors[0]!.toTensor();
    expect(tensor.shape).toEqual([4, 5]);
    tensor.dispose();
  });

  it('sends bytes made chunk by chunk, each asked for just before its chunk goes out', async () => {
    const { rankChannel, coordinatorChannel } = await pair({}, 64);
    const values = Float32Array.from({ length: 50 }, (_, k) => k * 0.5 - 3);
    const buffer = new Uint8Array(values.byteLength); // 200 bytes: chunks of 64, 64, 64, 8
    const asked: number[] = [];
    const produce = (end: number): Uint8Array => {
      asked.push(end);
      buffer.set(new Uint8Array(values.buffer, 0, end));
      return buffer;
    };
    await rankChannel.send(3, [
      { name: 'w', mass: 2, dtype: 'float32', shape: [5, 10], bytes: produce },
      {
        name: 'b',
        mass: 2,
        dtype: 'float32',
        shape: [2],
        bytes: new Uint8Array(new Float32Array([1, 2]).buffer),
      },
    ]);
    expect(asked).toEqual([64, 128, 192, 200]);
    const received = await coordinatorChannel.receiveContribution({ timeoutMs: 5000 });
    expect(new Float32Array(received.tensors[0]!.bytes.slice().buffer)).toEqual(values);
    expect(received.tensors[0]!.shape).toEqual([5, 10]);
    expect(new Float32Array(received.tensors[1]!.bytes.slice().buffer)).toEqual(new Float32Array([1, 2]));
  });

  it("fails the channel, typed, when bytes made later are not the tensor's size", async () => {
    const { rankChannel } = await pair({}, 64);
    await expect(
      rankChannel.send(1, [
        { name: 'w', mass: 1, dtype: 'float32', shape: [8], bytes: () => new Uint8Array(4) },
      ]),
    ).rejects.toMatchObject({ code: 'ERR_INVALID_ARGUMENT' });
  });

  it('reuses the buffers of recycled tensors for later ones of the same size, each buffer once', async () => {
    const { rankChannel, coordinatorChannel } = await pair();
    const round = (fill: number) => [
      { name: 'w', mass: 1, dtype: 'float32' as const, shape: [600], bytes: new Uint8Array(2400).fill(fill) },
      { name: 'b', mass: 1, dtype: 'float32' as const, shape: [3], bytes: new Uint8Array(12).fill(fill) },
    ];
    const receive = async (fill: number) => {
      await rankChannel.send(fill, round(fill));
      return coordinatorChannel.receiveContribution({ timeoutMs: 5000 });
    };
    const first = await receive(1);
    coordinatorChannel.recycle(first.tensors);
    const second = await receive(2);
    // The same memory, holding the new round's bytes.
    expect(second.tensors.map((tensor) => tensor.bytes.buffer)).toEqual(
      first.tensors.map((tensor) => tensor.bytes.buffer),
    );
    expect(second.tensors.every((tensor) => tensor.bytes.every((value) => value === 2))).toBe(true);
    // A tensor whose buffer moved on (or was recycled already) is not taken back again.
    coordinatorChannel.recycle(first.tensors);
    coordinatorChannel.recycle(first.tensors);
    const third = await receive(3);
    for (const [index, tensor] of third.tensors.entries())
      expect(tensor.bytes.buffer).not.toBe(second.tensors[index]!.bytes.buffer);
    expect(second.tensors.every((tensor) => tensor.bytes.every((value) => value === 2))).toBe(true);
    expect(third.tensors.every((tensor) => tensor.bytes.every((value) => value === 3))).toBe(true);
  });

  it('reads the consensus on the rank straight into its tensors, and reuses them once recycled', async () => {
    const { rankChannel, coordinatorChannel } = await pair({}, 256 * 1024);
    const socket = (rankChannel as unknown as { connection: { socket: import('node:net').Socket } })
      .connection.socket;
    // The rank dialed with `onread`: no 'data' events, every read goes where the reader says.
    expect(socket.listenerCount('data')).toBe(0);
    const values = (round: number) => Float32Array.from({ length: 700_001 }, (_, k) => k * 0.25 - round);
    const consensus = (round: number): OutgoingTensor[] => [
      { name: 'w', mass: 3, dtype: 'float32', shape: [700_001], bytes: new Uint8Array(values(round).buffer) },
      {
        name: 'b',
        mass: 3,
        dtype: 'float32',
        shape: [5],
        bytes: new Uint8Array(new Float32Array(5).fill(round).buffer),
      },
    ];
    await coordinatorChannel.send(1, consensus(1));
    const first = await rankChannel.receiveContribution({ timeoutMs: 5000 });
    expect(new Float32Array(first.tensors[0]!.bytes.buffer)).toEqual(values(1));
    expect(new Float32Array(first.tensors[1]!.bytes.buffer)).toEqual(new Float32Array(5).fill(1));
    rankChannel.recycle(first.tensors);
    await coordinatorChannel.send(2, consensus(2));
    const second = await rankChannel.receiveContribution({ timeoutMs: 5000 });
    expect(second.tensors.map((tensor) => tensor.bytes.buffer)).toEqual(
      first.tensors.map((tensor) => tensor.bytes.buffer),
    );
    expect(new Float32Array(second.tensors[0]!.bytes.buffer)).toEqual(values(2));
  });

  // The coordinator's accepted socket reads 'data' events; the rank's dialed one reads through onread.
  it.each(['coordinator', 'rank'] as const)(
    'pauses the %s side when unread tensors pile up, and resumes as they are read',
    async (side) => {
      const { rankChannel, coordinatorChannel } = await pair(
        { dataChannel: { maxQueuedBytes: 64 * 1024 } },
        16 * 1024,
        { maxQueuedBytes: 64 * 1024 },
      );
      const [sender, receiver] =
        side === 'coordinator' ? [rankChannel, coordinatorChannel] : [coordinatorChannel, rankChannel];
      const tensors: OutgoingTensor[] = Array.from({ length: 24 }, (_, index) => ({
        name: `block${index}`,
        mass: index,
        dtype: 'uint8',
        shape: [128 * 1024],
        bytes: new Uint8Array(128 * 1024).fill(index),
      }));
      const sending = sender.send(3, tensors);
      const socket = (receiver as unknown as { connection: { socket: import('node:net').Socket } }).connection
        .socket;
      await eventually(() => socket.isPaused(), 5000, `the ${side} side to pause`);
      for (let index = 0; index < tensors.length; index += 1) {
        const tensor = await receiver.receiveTensor({ timeoutMs: 5000 });
        expect(tensor.index).toBe(index);
        expect(tensor.bytes.every((value) => value === index)).toBe(true);
      }
      await sending;
      expect(socket.isPaused()).toBe(false);
    },
  );

  it('validates a contribution before sending any of it', async () => {
    const { rankChannel, coordinatorChannel } = await pair();
    const bad = await caught(() =>
      rankChannel.send(1, [
        { name: 'ok', mass: 1, dtype: 'float32', shape: [1], bytes: new Uint8Array(4) },
        { name: 'short', mass: 1, dtype: 'float32', shape: [2], bytes: new Uint8Array(4) },
      ]),
    );
    expect(bad.code).toBe('ERR_INVALID_ARGUMENT');
    expect(bad.message).toMatchInlineSnapshot(`
      "DataChannel.send: invalid bytes of short
        expected: 8 bytes for float32 [2]
        got: Uint8Array(4)"
    `);
    const negative = await caught(() =>
      rankChannel.send(1, [{ name: 'w', mass: -1, dtype: 'float32', shape: [1], bytes: new Uint8Array(4) }]),
    );
    expect(negative.message).toContain('TensorBegin.mass');
    expect((await caught(() => rankChannel.send(1, []))).code).toBe('ERR_INVALID_ARGUMENT');
    // Nothing half-sent: the channel still works.
    await rankChannel.send(2, [
      { name: 'ok', mass: 1, dtype: 'float32', shape: [1], bytes: new Uint8Array(4) },
    ]);
    expect((await coordinatorChannel.receiveContribution({ timeoutMs: 2000 })).version).toBe(2);
  });

  it('times out a receive and reports a closed channel', async () => {
    const { rankChannel, coordinatorChannel } = await pair();
    const waited = await caught(() => coordinatorChannel.receiveTensor({ timeoutMs: 30 }));
    expect(waited.message).toMatchInlineSnapshot(
      `"wire: receiving a tensor timed out after 30 ms (the peer sent no tensor data)"`,
    );
    const pending = caught(() => coordinatorChannel.receiveTensor({ timeoutMs: 5000 }));
    rankChannel.close();
    expect((await pending).code).toBe('ERR_IO');
  });

  it('drops a data connection that breaks the stream order, chunk bounds or size limits', async () => {
    const { server, errors } = await pair({ dataChannel: { maxTensorBytes: 1024 } });
    const cases: [string, (raw: Awaited<ReturnType<typeof rawRank>>) => Uint8Array[]][] = [
      ['chunk before any tensor', (raw) => [raw.frame(MessageKind.TensorChunk, new Uint8Array(8))]],
      [
        'tensor before any contribution',
        (raw) => [
          raw.frame(
            MessageKind.TensorBegin,
            encodeMessage({ type: 'TensorBegin', name: 'w', dtype: 'float32', shape: [2], mass: 1 }).payload,
          ),
        ],
      ],
      [
        'chunk overrunning its tensor',
        (raw) => [
          raw.frame(
            MessageKind.ContributionBegin,
            encodeMessage({ type: 'ContributionBegin', version: 1, tensorCount: 1 }).payload,
          ),
          raw.frame(
            MessageKind.TensorBegin,
            encodeMessage({ type: 'TensorBegin', name: 'w', dtype: 'float32', shape: [2], mass: 1 }).payload,
          ),
          raw.frame(MessageKind.TensorChunk, new Uint8Array(12)),
        ],
      ],
      [
        'tensor over the size limit',
        (raw) => [
          raw.frame(
            MessageKind.ContributionBegin,
            encodeMessage({ type: 'ContributionBegin', version: 1, tensorCount: 1 }).payload,
          ),
          raw.frame(
            MessageKind.TensorBegin,
            encodeMessage({ type: 'TensorBegin', name: 'w', dtype: 'float64', shape: [1024], mass: 1 })
              .payload,
          ),
        ],
      ],
      [
        'control message on a data channel',
        (raw) => [
          raw.frame(MessageKind.Heartbeat, encodeMessage({ type: 'Heartbeat', stepCount: 1 }).payload),
        ],
      ],
    ];
    for (const [, frames] of cases) {
      const raw = await rawRank(server.port, secret, 0, 2, 'data');
      for (const frame of frames(raw)) raw.socket.write(frame);
      await closedSocket(raw.socket);
    }
    await eventually(() => errors.length === cases.length);
    expect(errors.every((event) => event.channel === 'data' && event.rank === 0)).toBe(true);
    expect(errors.map((event) => event.error.message)).toMatchInlineSnapshot(`
      [
        "wire: bad order: TensorChunk outside a tensor
        expected: TensorBegin first",
        "wire: bad order: TensorBegin outside a contribution or inside another tensor
        expected: ContributionBegin first",
        "wire: bad length: chunk overruns tensor "w"
        expected: at most 8 bytes
        got: 12 bytes",
        "wire: bad field TensorBegin.shape: "w" is too large
        expected: at most 1024 bytes
        got: [1024] float64",
        "wire: bad kind: 0x0303 Heartbeat is not accepted on a data channel
        expected: one of ContributionBegin, TensorBegin, TensorChunk
        got: 0x0303 Heartbeat",
      ]
    `);
    expect(errors.map((event) => (event.error as WireError).reason)).toEqual([
      'order',
      'order',
      'length',
      'field',
      'kind',
    ]);
  });
});
