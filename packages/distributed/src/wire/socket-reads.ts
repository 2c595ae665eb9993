import type { OnReadOpts } from 'node:net';

/** Bytes of the reused buffer reads go into when no payload is waiting for them. */
const SCRATCH_BYTES = 64 * 1024;

/**
 * The reads of a socket this process dials (`net.connect`'s `onread`), made into memory the
 * frame reader chooses instead of a fresh buffer per read: while a bulk payload is arriving
 * into its destination (a received tensor's bytes), the kernel copies the socket's bytes
 * straight there; otherwise into one reused 64 KiB scratch buffer. Node's default reads
 * allocate 64 KiB per read, which a model-sized transfer turns into a major garbage
 * collection every 64 MiB and one more copy per byte.
 *
 * Bytes read into the scratch buffer are only valid during `deliver` (a frame's payload is
 * documented as such). Accepted sockets (the coordinator's) cannot take `onread` in Node and
 * keep the default reads.
 *
 * @example
 * const reads = new SocketReads();
 * const socket = connect({ host, port, onread: reads.onread });
 * const connection = new WireConnection(socket, { ...options, reads });
 */
export class SocketReads {
  readonly onread: OnReadOpts;
  #scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  /** Chunks read before a consumer was attached, copied out of the scratch buffer. */
  #early: Uint8Array[] = [];
  #consumer: SocketReadConsumer | undefined;

  constructor() {
    this.onread = {
      buffer: () => this.#consumer?.target() ?? this.#scratch,
      callback: (bytes, buffer) => {
        const chunk = buffer.subarray(0, bytes);
        if (this.#consumer === undefined)
          this.#early.push(new Uint8Array(chunk)); // a copy (a Buffer's slice is a view)
        else this.#consumer.deliver(chunk);
        return true;
      },
    };
  }

  /** Hands every later read to `consumer` (and the reads before it, in order, now). */
  attach(consumer: SocketReadConsumer): void {
    this.#consumer = consumer;
    for (const chunk of this.#early.splice(0)) consumer.deliver(chunk);
  }
}

/** What a socket's reads are handed to. */
export interface SocketReadConsumer {
  /** Where the next read should go, or `undefined` for the scratch buffer. */
  target(): Uint8Array | undefined;
  /** The bytes of one read (a view, valid during the call). */
  deliver(chunk: Uint8Array): void;
}
