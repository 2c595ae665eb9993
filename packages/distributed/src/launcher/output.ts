import type { Readable } from 'node:stream';

const NEWLINE = 0x0a;

/** Options of {@link LineSplitter}. */
export interface LineSplitterOptions {
  /** Put before every line, e.g. `[rank 2] `. Default none. */
  prefix?: string;
  /**
   * A line longer than this many bytes is passed on in pieces of this size, each ended by a
   * newline, so a process that never writes one cannot make the launcher buffer without
   * bound. Default 1 MiB.
   */
  maxLineBytes?: number;
}

/**
 * Cuts a byte stream into whole lines and hands them on prefixed: `write` passes on every
 * line a chunk completes (all of them in one call, each line whole), `end` the unfinished
 * last line with a newline added. Splitting works on bytes, so a multi-byte character split
 * across chunks arrives intact.
 *
 * @example
 * ```ts
 * const lines = new LineSplitter((text) => process.stdout.write(text), { prefix: '[rank 0] ' });
 * child.stdout.on('data', (chunk) => lines.write(chunk)).on('end', () => lines.end());
 * ```
 */
export class LineSplitter {
  readonly #emit: (text: Buffer) => void;
  readonly #prefix: Buffer;
  readonly #maxLineBytes: number;
  #pending: Buffer[] = [];
  #pendingBytes = 0;

  constructor(emit: (text: Buffer) => void, options: LineSplitterOptions = {}) {
    this.#emit = emit;
    this.#prefix = Buffer.from(options.prefix ?? '');
    this.#maxLineBytes = options.maxLineBytes ?? 1 << 20;
    if (!(Number.isInteger(this.#maxLineBytes) && this.#maxLineBytes > 0)) {
      throw new RangeError(`maxLineBytes must be a positive integer, got ${options.maxLineBytes}`);
    }
  }

  /** Bytes held back until their line ends. */
  get pendingBytes(): number {
    return this.#pendingBytes;
  }

  /** Takes the next chunk and passes on the lines it completes. */
  write(chunk: Uint8Array | string): void {
    const bytes =
      typeof chunk === 'string'
        ? Buffer.from(chunk)
        : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    const out: Buffer[] = [];
    let start = 0;
    for (let end = bytes.indexOf(NEWLINE); end >= 0; end = bytes.indexOf(NEWLINE, start)) {
      out.push(this.#prefix, ...this.#pending, bytes.subarray(start, end + 1));
      this.#pending = [];
      this.#pendingBytes = 0;
      start = end + 1;
    }
    // Keep a copy: the caller may reuse its chunk.
    for (let offset = start; offset < bytes.length; ) {
      const room = this.#maxLineBytes - this.#pendingBytes;
      const piece = bytes.subarray(offset, offset + room);
      this.#pending.push(Buffer.from(piece));
      this.#pendingBytes += piece.length;
      offset += piece.length;
      if (this.#pendingBytes === this.#maxLineBytes) out.push(...this.#takePending());
    }
    if (out.length > 0) this.#emit(Buffer.concat(out));
  }

  /** Passes on the unfinished last line, if any, with a newline added. */
  end(): void {
    if (this.#pendingBytes > 0) this.#emit(Buffer.concat(this.#takePending()));
  }

  #takePending(): Buffer[] {
    const line = [this.#prefix, ...this.#pending, Buffer.from('\n')];
    this.#pending = [];
    this.#pendingBytes = 0;
    return line;
  }
}

/** Where prefixed lines go: anything with a `write(bytes)`, such as `process.stdout`. */
export interface LineSink {
  write(text: Uint8Array): unknown;
}

/**
 * Copies `source` to `sink` line by line with `prefix` before each line; the unfinished last
 * line is flushed when `source` ends. Resolves once `source` ended, closed or failed (a
 * failing source loses nothing already read).
 *
 * @example await prefixLines(child.stdout, process.stdout, '[rank 1] ');
 */
export function prefixLines(
  source: Readable,
  sink: LineSink,
  prefix: string,
  options: Omit<LineSplitterOptions, 'prefix'> = {},
): Promise<void> {
  const lines = new LineSplitter((text) => sink.write(text), { ...options, prefix });
  return new Promise((resolve) => {
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      lines.end();
      resolve();
    };
    source.on('data', (chunk: Uint8Array | string) => lines.write(chunk));
    source.once('end', finish);
    source.once('close', finish);
    source.once('error', finish);
  });
}

/** The prefix of a rank's output lines. */
export function rankPrefix(rank: number): string {
  return `[rank ${rank}] `;
}
