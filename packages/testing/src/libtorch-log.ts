// libtorch's log lines in a test worker's stderr: libtorch writes them straight to file
// descriptor 2 (past vitest's console capture), in glog's format. The filter below holds back
// the lines a suite expects and passes every other byte through unchanged.
import { Transform, type TransformCallback } from 'node:stream';

// glog's line prefix: severity, date, time, thread id, file:line, then "] " and the message.
const LOG_LINE = /^[IWEF]\d{8} \d{2}:\d{2}:\d{2}\.\d+ +\d+ [^\]]+\] /;
// glog's one-time notice when the program never called InitGoogleLogging (libtorch does not).
const BEFORE_INIT = 'WARNING: Logging before InitGoogleLogging() is written to STDERR';

/** What {@link LibtorchLogFilter} did with a worker's stderr. */
export interface LibtorchLogCounts {
  /** The expected log lines held back. */
  held: number;
  /** The log lines passed through because no expected pattern matched them. */
  passed: number;
}

/**
 * A stream filter for a process's stderr: a libtorch log line whose message matches one of
 * `expected` is held back, and so is glog's "Logging before InitGoogleLogging()" notice when the
 * line after it is; everything else (unexpected log lines, any other output) passes through in
 * order. Output is split at newlines; a trailing partial line waits for its end (or the stream's).
 *
 * @example worker.stderr.pipe(new LibtorchLogFilter([/scatter_reduce\(\) is in beta/])).pipe(process.stderr);
 */
export class LibtorchLogFilter extends Transform {
  readonly counts: LibtorchLogCounts = { held: 0, passed: 0 };
  private readonly expected: readonly RegExp[];
  private partial = '';
  private notice: string | undefined;

  constructor(expected: readonly RegExp[]) {
    super({ decodeStrings: true });
    this.expected = expected;
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    const lines = (this.partial + chunk.toString('utf8')).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) this.line(line);
    done();
  }

  override _flush(done: TransformCallback): void {
    if (this.partial !== '') this.line(this.partial, false);
    this.partial = '';
    if (this.notice !== undefined) this.push(this.notice);
    this.notice = undefined;
    done();
  }

  private line(line: string, newline = true): void {
    const text = newline ? `${line}\n` : line;
    if (line === BEFORE_INIT) {
      if (this.notice !== undefined) this.push(this.notice);
      this.notice = text; // kept or dropped with the log line that follows it
      return;
    }
    const notice = this.notice;
    this.notice = undefined;
    if (LOG_LINE.test(line)) {
      const message = line.replace(LOG_LINE, '');
      if (this.expected.some((pattern) => pattern.test(message))) {
        this.counts.held += 1;
        return;
      }
      this.counts.passed += 1;
    }
    if (notice !== undefined) this.push(notice);
    this.push(text);
  }
}
