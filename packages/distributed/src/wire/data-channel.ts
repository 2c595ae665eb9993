import {
  type Device,
  type DType,
  elementSize,
  FlodlError,
  fromBytes,
  invalidArgument,
  type Tensor,
  toBytes,
} from '@flodl/tensor-native';
import { decodeMessage, encodeMessage, kindsOf } from './codec.js';
import type { WireConnection } from './connection.js';
import { closedError, timeoutError, WireError } from './errors.js';
import { type Frame, MAX_PAYLOAD_BYTES } from './frame.js';
import { MessageKind, type TensorBegin, WIRE_DTYPES } from './messages.js';
import type { FrameHeader } from './reader.js';

/** Kinds of the data channel (both directions). */
export const DATA_KINDS: ReadonlySet<number> = kindsOf('data');

/** Options of a data channel (either end). */
export interface DataChannelOptions {
  /** Bytes of tensor data per frame. Default 4 MiB; at most 16 MiB. */
  chunkBytes?: number;
  /** The largest tensor accepted, in bytes. Default 1 GiB. */
  maxTensorBytes?: number;
  /** Received tensors held unread before the socket is paused. Default 256 MiB. */
  maxQueuedBytes?: number;
  /** Bytes of recycled tensors ({@link DataChannel.recycle}) kept for reuse. Default 1 GiB. */
  maxSpareBytes?: number;
}

/**
 * A tensor to send: a live tensor (copied out once by `toBytes`), or bytes on the host, or a
 * function that returns them with at least the first `end` bytes written, called before each
 * chunk is sent (`end` its last byte + 1): a root computes each chunk of the consensus while
 * the one before it goes out. It returns the same whole-tensor buffer every call.
 */
export type OutgoingTensor =
  | { name: string; mass: number; tensor: Tensor }
  | { name: string; mass: number; dtype: DType; shape: readonly number[]; bytes: Uint8Array }
  | {
      name: string;
      mass: number;
      dtype: DType;
      shape: readonly number[];
      bytes: (end: number) => Uint8Array;
    };

/** One received tensor: its raw little-endian bytes and where it sits in its contribution. */
export class ReceivedTensor {
  constructor(
    /** The averaging round of its contribution. */
    readonly version: number,
    /** Position in the contribution, from 0. */
    readonly index: number,
    /** Tensors in the contribution. */
    readonly tensorCount: number,
    readonly name: string,
    readonly dtype: DType,
    readonly shape: readonly number[],
    /** The weight the sender pre-scaled it by. */
    readonly mass: number,
    /** The raw element bytes (row-major, little-endian), owned by this object. */
    readonly bytes: Uint8Array,
  ) {}

  /**
   * A tensor holding these bytes (one copy into libtorch).
   *
   * @example const weight = received.toTensor({ device: 'cuda:0' });
   */
  toTensor(options: { device?: Device } = {}): Tensor {
    return fromBytes(this.bytes, this.shape, this.dtype, options);
  }
}

/** A whole received contribution. */
export interface ReceivedContribution {
  version: number;
  tensors: ReceivedTensor[];
}

interface IncomingTensor {
  name: string;
  dtype: DType;
  shape: number[];
  mass: number;
  bytes: Uint8Array;
  filled: number;
}

/**
 * The bulk channel of the host-averaging modes: streams named tensors with their masses,
 * authenticated frame by frame, tensor by tensor.
 *
 * A contribution is `ContributionBegin { version, tensorCount }`, then per tensor
 * `TensorBegin { name, dtype, shape, mass }` and its bytes in `TensorChunk` frames of at
 * most `chunkBytes`. Sending copies each tensor out once (`toBytes`) and writes views of
 * that copy, waiting on backpressure between chunks, so at most one tensor's bytes are in
 * flight on the host. Receiving writes chunks straight into one buffer per tensor (a chunk
 * whose tag then fails kills the channel, so unverified bytes are never handed out); when
 * unread tensors exceed `maxQueuedBytes` the socket is paused until the consumer catches up.
 *
 * Obtained from `ControlClient.openDataChannel()` (rank side) or the server's
 * `'dataChannel'` event (coordinator side).
 *
 * @example
 * ```ts
 * const channel = await client.openDataChannel();
 * await channel.send(7, model.namedParameters().map(([name, tensor]) => ({ name, tensor, mass: steps })));
 * const consensus = await channel.receiveContribution({ timeoutMs: 60_000 });
 * ```
 */
export class DataChannel {
  private readonly chunkBytes: number;
  private readonly maxTensorBytes: number;
  private readonly maxQueuedBytes: number;
  private readonly sendAheadBytes: number;
  private sending: Promise<void> = Promise.resolve();
  private contribution: { version: number; tensorCount: number; next: number } | undefined;
  private incoming: IncomingTensor | undefined;
  private readonly queue: ReceivedTensor[] = [];
  private queuedBytes = 0;
  /** Buffers handed back by `recycle`, by byte length, for later tensors of that length. */
  private readonly spare = new Map<number, Uint8Array[]>();
  private spareBytes = 0;
  private readonly maxSpareBytes: number;
  /** The received tensor each buffer of this channel currently belongs to. */
  private readonly owners = new WeakMap<ArrayBufferLike, ReceivedTensor>();
  private readonly waiters: {
    resolve: (tensor: ReceivedTensor) => void;
    reject: (error: unknown) => void;
  }[] = [];
  private closeError: FlodlError | undefined;

  /** @internal Built by the server and client once the handshake is done. */
  constructor(
    private readonly connection: WireConnection,
    /** The rank at the other end (coordinator side) or this process's rank (rank side). */
    readonly rank: number,
    options: DataChannelOptions = {},
  ) {
    this.chunkBytes = options.chunkBytes ?? 4 * 1024 * 1024;
    if (!Number.isInteger(this.chunkBytes) || this.chunkBytes < 1 || this.chunkBytes > MAX_PAYLOAD_BYTES) {
      throw invalidArgument(
        'DataChannel',
        'chunkBytes',
        `an integer in [1, ${MAX_PAYLOAD_BYTES}]`,
        options.chunkBytes,
      );
    }
    this.maxTensorBytes = options.maxTensorBytes ?? 1024 ** 3;
    this.maxQueuedBytes = options.maxQueuedBytes ?? 256 * 1024 * 1024;
    this.maxSpareBytes = options.maxSpareBytes ?? 1024 ** 3;
    this.sendAheadBytes = 2 * this.chunkBytes;
    connection.reader.payloadTarget = (header) => this.chunkTarget(header);
    connection.onFrame = (frame) => this.receiveFrame(frame);
    connection.onClose((error) => {
      this.closeError = error ?? closedError('data channel');
      for (const waiter of this.waiters.splice(0)) waiter.reject(this.closeError);
    });
  }

  /** True once the channel has ended. */
  get closed(): boolean {
    return this.connection.closed;
  }

  /**
   * Sends a contribution (or a consensus) of averaging round `version`, tensor by tensor.
   * Concurrent calls are queued, never interleaved. Resolves when the last chunk is in the
   * socket's buffer.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for an empty list, a bad name, mass or byte count
   * @throws FlodlError ERR_IO when the channel is closed
   * @throws FlodlError ERR_TIMEOUT when the peer stops reading
   */
  send(version: number, tensors: readonly OutgoingTensor[]): Promise<void> {
    const run = this.sending.then(() => this.sendNow(version, tensors));
    this.sending = run.catch(() => {});
    return run;
  }

  /**
   * The next received tensor, in order, bounded by `timeoutMs`.
   *
   * @throws FlodlError ERR_TIMEOUT when none arrives in time
   * @throws FlodlError ERR_IO or ERR_WIRE when the channel closed (with its reason)
   */
  receiveTensor(options: { timeoutMs?: number } = {}): Promise<ReceivedTensor> {
    const queued = this.take();
    if (queued) return Promise.resolve(queued);
    if (this.closeError) return Promise.reject(this.closeError);
    const timeoutMs = options.timeoutMs ?? 60_000;
    return new Promise<ReceivedTensor>((resolve, reject) => {
      const waiter = {
        resolve: (tensor: ReceivedTensor) => {
          clearTimeout(timer);
          resolve(tensor);
        },
        reject: (error: unknown) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(timeoutError('receiving a tensor', timeoutMs, 'the peer sent no tensor data'));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /**
   * Every tensor of the next contribution, bounded by `timeoutMs` per tensor.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT when a contribution was partly read with `receiveTensor`
   * @throws FlodlError ERR_TIMEOUT, ERR_IO or ERR_WIRE as `receiveTensor`
   */
  async receiveContribution(options: { timeoutMs?: number } = {}): Promise<ReceivedContribution> {
    const first = await this.receiveTensor(options);
    if (first.index !== 0) {
      throw invalidArgument(
        'receiveContribution',
        'state',
        'the start of a contribution',
        `tensor ${first.index} of ${first.tensorCount}`,
      );
    }
    const tensors = [first];
    while (tensors.length < first.tensorCount) tensors.push(await this.receiveTensor(options));
    return { version: first.version, tensors };
  }

  /**
   * Hands received tensors back once their bytes are no longer needed (e.g. folded into a
   * consensus): their buffers receive later tensors of the same size, so a steady stream of
   * rounds stops allocating (and first-touching) fresh memory for every contribution. A tensor
   * is taken back only once, and only while its buffer is still its own; the bytes of a recycled
   * tensor must not be read again. Kept up to `maxSpareBytes`; the rest is left to the GC.
   *
   * @example
   * const contribution = await channel.receiveContribution();
   * root.add(rank, contribution.tensors);
   * const consensus = root.average();
   * channel.recycle(contribution.tensors);
   */
  recycle(tensors: readonly ReceivedTensor[]): void {
    for (const tensor of tensors) {
      const { buffer } = tensor.bytes;
      const size = tensor.bytes.byteLength;
      if (size === 0 || this.owners.get(buffer) !== tensor) continue;
      this.owners.delete(buffer);
      if (this.spareBytes + size > this.maxSpareBytes) continue;
      const list = this.spare.get(size);
      if (list) list.push(tensor.bytes);
      else this.spare.set(size, [tensor.bytes]);
      this.spareBytes += size;
    }
  }

  /** Ends the channel in order (what was sent is flushed first). */
  close(): void {
    this.connection.end();
  }

  private async sendNow(version: number, tensors: readonly OutgoingTensor[]): Promise<void> {
    if (!Array.isArray(tensors) || tensors.length === 0) {
      throw invalidArgument('DataChannel.send', 'tensors', 'a non-empty list of tensors', tensors);
    }
    // Validate every header before the first frame, so a bad entry never leaves half a contribution.
    const begin = encodeMessage({ type: 'ContributionBegin', version, tensorCount: tensors.length });
    const headers = tensors.map((entry) => encodeMessage(describeOutgoing(entry)).payload);
    await this.connection.sendRaw(begin.kind, begin.payload);
    try {
      const socket = this.connection.socket;
      let last: Promise<void> = Promise.resolve();
      const write = async (kind: number, payload: Uint8Array): Promise<void> => {
        if (this.connection.closed) await last;
        last = this.connection.sendRaw(kind, payload);
        last.catch(() => {}); // awaited below or at the end
        // Frames queue without a wait until `sendAheadBytes` are unwritten: the socket keeps
        // moving while the next frame is tagged (they are views of one tensor's bytes).
        if (socket.writableLength > this.sendAheadBytes) await last;
      };
      for (const [index, entry] of tensors.entries()) {
        await write(MessageKind.TensorBegin, headers[index]!);
        const { length, upTo } = chunkSource(entry);
        for (let offset = 0; offset < length; offset += this.chunkBytes) {
          const end = Math.min(length, offset + this.chunkBytes);
          await write(MessageKind.TensorChunk, upTo(end).subarray(offset, end));
        }
      }
      await last;
    } catch (error) {
      // Half a contribution cannot be taken back: the channel is unusable from here.
      this.connection.fail(FlodlError.isInstance(error) ? error : closedError('DataChannel.send', error));
      throw error;
    }
  }

  private chunkTarget(header: FrameHeader): Uint8Array | undefined {
    if (header.kind !== MessageKind.TensorChunk) return undefined;
    const incoming = this.incoming;
    if (incoming === undefined) {
      throw new WireError('order', 'bad order: TensorChunk outside a tensor', {
        expected: 'TensorBegin first',
      });
    }
    const remaining = incoming.bytes.length - incoming.filled;
    if (header.payloadLength > remaining) {
      throw new WireError('length', `bad length: chunk overruns tensor ${JSON.stringify(incoming.name)}`, {
        expected: `at most ${remaining} bytes`,
        got: `${header.payloadLength} bytes`,
      });
    }
    return incoming.bytes.subarray(incoming.filled, incoming.filled + header.payloadLength);
  }

  private receiveFrame(frame: Frame): void {
    if (frame.kind === MessageKind.TensorChunk) {
      // The reader wrote the payload in place (see chunkTarget); an empty one is refused.
      const incoming = this.incoming;
      if (incoming === undefined || frame.payload.length === 0) {
        throw new WireError('length', 'bad length: empty TensorChunk', { expected: 'at least 1 byte' });
      }
      incoming.filled += frame.payload.length;
      if (incoming.filled === incoming.bytes.length) this.completeTensor(incoming);
      return;
    }
    const message = decodeMessage(frame.kind, frame.payload);
    if (message.type === 'ContributionBegin') {
      if (this.contribution !== undefined) {
        throw new WireError('order', 'bad order: ContributionBegin inside a contribution', {
          expected: `${this.contribution.tensorCount - this.contribution.next} more tensor(s) first`,
        });
      }
      this.contribution = { version: message.version, tensorCount: message.tensorCount, next: 0 };
      return;
    }
    if (message.type !== 'TensorBegin') {
      throw new WireError('kind', `bad kind: ${message.type} on a data channel`);
    }
    if (this.contribution === undefined || this.incoming !== undefined) {
      throw new WireError('order', 'bad order: TensorBegin outside a contribution or inside another tensor', {
        expected: this.incoming ? `the rest of ${this.incoming.name}` : 'ContributionBegin first',
      });
    }
    const byteLength =
      message.shape.reduce((product, size) => product * size, 1) * elementSize(message.dtype);
    if (!Number.isSafeInteger(byteLength) || byteLength > this.maxTensorBytes) {
      throw new WireError(
        'field',
        `bad field TensorBegin.shape: ${JSON.stringify(message.name)} is too large`,
        {
          expected: `at most ${this.maxTensorBytes} bytes`,
          got: `[${message.shape.join(', ')}] ${message.dtype}`,
        },
      );
    }
    const incoming: IncomingTensor = {
      name: message.name,
      dtype: message.dtype,
      shape: message.shape,
      mass: message.mass,
      bytes: this.buffer(byteLength),
      filled: 0,
    };
    this.incoming = incoming;
    if (byteLength === 0) this.completeTensor(incoming);
  }

  private completeTensor(incoming: IncomingTensor): void {
    const contribution = this.contribution!;
    const tensor = new ReceivedTensor(
      contribution.version,
      contribution.next,
      contribution.tensorCount,
      incoming.name,
      incoming.dtype,
      incoming.shape,
      incoming.mass,
      incoming.bytes,
    );
    if (tensor.bytes.byteLength > 0) this.owners.set(tensor.bytes.buffer, tensor);
    this.incoming = undefined;
    contribution.next += 1;
    if (contribution.next === contribution.tensorCount) this.contribution = undefined;
    const waiter = this.waiters.shift();
    if (waiter) {
      waiter.resolve(tensor);
      return;
    }
    this.queue.push(tensor);
    this.queuedBytes += tensor.bytes.length;
    if (this.queuedBytes > this.maxQueuedBytes) this.connection.socket.pause();
  }

  /** A recycled buffer of `size` bytes, or a fresh one. */
  private buffer(size: number): Uint8Array {
    const reused = this.spare.get(size)?.pop();
    if (reused === undefined) return new Uint8Array(size);
    this.spareBytes -= size;
    return reused;
  }

  private take(): ReceivedTensor | undefined {
    const tensor = this.queue.shift();
    if (tensor === undefined) return undefined;
    this.queuedBytes -= tensor.bytes.length;
    if (this.connection.socket.isPaused() && this.queuedBytes <= this.maxQueuedBytes / 2)
      this.connection.socket.resume();
    return tensor;
  }
}

function describeOutgoing(entry: OutgoingTensor): TensorBegin {
  if (typeof entry !== 'object' || entry === null) {
    throw invalidArgument(
      'DataChannel.send',
      'tensors[]',
      'an object with name, mass and tensor or bytes',
      entry,
    );
  }
  if ('tensor' in entry) {
    const { dtype, shape } = entry.tensor;
    return {
      type: 'TensorBegin',
      name: entry.name,
      dtype: wireDType(dtype),
      shape: [...shape],
      mass: entry.mass,
    };
  }
  const { name, dtype, shape, bytes } = entry;
  const tensor: TensorBegin = {
    type: 'TensorBegin',
    name,
    dtype: wireDType(dtype),
    shape: [...shape],
    mass: entry.mass,
  };
  // Bytes made later are checked when they are made (see bytesOf).
  if (typeof bytes !== 'function') checkBytes(entry, bytes);
  return tensor;
}

/**
 * Where `entry`'s chunks come from: its byte count, and its bytes with at least the first `end`
 * written (a live tensor copied out once here; bytes made later checked on the first chunk).
 */
function chunkSource(entry: OutgoingTensor): { length: number; upTo: (end: number) => Uint8Array } {
  if ('tensor' in entry) {
    const bytes = toBytes(entry.tensor);
    return { length: bytes.length, upTo: () => bytes };
  }
  const { bytes: made } = entry;
  if (typeof made !== 'function') return { length: made.length, upTo: () => made };
  let checked = false;
  return {
    length: byteLength(entry),
    upTo: (end) => {
      const bytes = made(end);
      if (!checked) checkBytes(entry, bytes);
      checked = true;
      return bytes;
    },
  };
}

/** The bytes of a tensor of `entry`'s dtype and shape. */
function byteLength(entry: Exclude<OutgoingTensor, { tensor: Tensor }>): number {
  return entry.shape.reduce((product, size) => product * size, 1) * elementSize(entry.dtype);
}

/** Refuses bytes that are not a Uint8Array of exactly `entry`'s byte length. */
function checkBytes(entry: Exclude<OutgoingTensor, { tensor: Tensor }>, bytes: unknown): void {
  const { name, dtype, shape } = entry;
  const expected = byteLength(entry);
  if (!(bytes instanceof Uint8Array) || bytes.length !== expected) {
    throw invalidArgument(
      'DataChannel.send',
      `bytes of ${name}`,
      `${expected} bytes for ${dtype} [${shape.join(', ')}]`,
      bytes,
    );
  }
}

function wireDType(dtype: DType): TensorBegin['dtype'] {
  if (!(WIRE_DTYPES as readonly string[]).includes(dtype)) {
    throw invalidArgument('DataChannel.send', 'dtype', `one of ${WIRE_DTYPES.join(', ')}`, dtype);
  }
  return dtype as TensorBegin['dtype'];
}
