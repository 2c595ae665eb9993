// CUDA streams and events (PyTorch: torch.cuda.Stream, torch.cuda.Event, torch.cuda.stream).
// Without CUDA every constructor throws ERR_DEVICE; check `cuda.isAvailable()` first.

import { shareClassIdentity } from './class-identity.js';
import { FlodlError, invalidArgument } from './errors.js';
import { cudaDeviceCount, events, streams } from './internal/cuda-runtime.js';
import { Tensor } from './tensor.js';

/** @internal The CUDA device index `device` names (default 0), checked; ERR_DEVICE without CUDA. */
export function deviceIndex(op: string, device: number | undefined): number {
  const count = cudaDeviceCount();
  if (count === 0)
    throw new FlodlError('ERR_DEVICE', 'CUDA is not available', {
      op,
      expected: 'a CUDA device',
      got: 'none',
    });
  const index = device ?? 0;
  if (!Number.isSafeInteger(index) || index < 0 || index >= count) {
    throw new FlodlError('ERR_DEVICE', `cuda:${index} does not exist`, {
      op,
      expected: `a device in [0, ${count - 1}]`,
      got: String(index),
    });
  }
  return index;
}

/**
 * A CUDA stream from libtorch's pool: kernels queued on different streams may run
 * concurrently. PyTorch: `torch.cuda.Stream(device, priority)`.
 * @example const copies = new CudaStream(); withStream(copies, () => batch.to({ device: 'cuda', nonBlocking: true }));
 */
export class CudaStream {
  /** @internal */
  readonly id: number;
  readonly device: number;

  constructor(device?: number, options: { highPriority?: boolean } = {}) {
    this.device = deviceIndex('CudaStream', device);
    this.id = streams.create(this.device, options.highPriority === true);
  }

  /** The stream ops on `device` run on now. PyTorch: `torch.cuda.current_stream()`. */
  static current(device?: number): CudaStream {
    const index = deviceIndex('CudaStream.current', device);
    return CudaStream.fromId(streams.current(index), index);
  }

  /** @internal */
  static fromId(id: number, device: number): CudaStream {
    const stream = Object.create(CudaStream.prototype) as { id: number; device: number };
    stream.id = id;
    stream.device = device;
    return stream as CudaStream;
  }

  /** Waits until all work queued on this stream is done. */
  synchronize(): void {
    streams.synchronize(this.id);
  }

  /** True when all work queued on this stream is done. */
  query(): boolean {
    return streams.query(this.id);
  }

  /** Makes work queued on this stream from now on wait for `event`. PyTorch: `stream.wait_event(event)`. */
  waitEvent(event: CudaEvent): void {
    event.wait(this);
  }
}

/**
 * Runs `fn` with `stream` as the current stream of its device (ops inside are queued on it),
 * restoring the previous stream afterwards, also on throw. PyTorch: `with torch.cuda.stream(s):`.
 * @throws FlodlError ERR_INVALID_ARGUMENT for an async fn (the switch would leak into other work)
 */
export function withStream<T>(stream: CudaStream, fn: () => T): T {
  if (!(stream instanceof CudaStream)) throw invalidArgument('withStream', 'stream', 'a CudaStream', stream);
  const previous = streams.setCurrent(stream.id);
  try {
    const result = fn();
    if (result instanceof Promise) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'withStream cannot follow async functions', {
        op: 'withStream',
      });
    }
    return result;
  } finally {
    streams.setCurrent(previous);
  }
}

/**
 * A CUDA event: a marker in a stream, to order work across streams, to wait for it from
 * the host, or to time it. PyTorch: `torch.cuda.Event(enable_timing=False)`.
 * @example
 * ```ts
 * const start = new CudaEvent({ enableTiming: true }); const end = new CudaEvent({ enableTiming: true });
 * start.record(); run(); end.record(); end.synchronize(); start.elapsedTime(end); // ms
 * ```
 */
export class CudaEvent {
  /** @internal */
  readonly id: number;
  private disposed = false;

  constructor(options: { enableTiming?: boolean } = {}) {
    deviceIndex('CudaEvent', undefined);
    this.id = events.create(options.enableTiming === true);
  }

  /** Records the event on `stream` (default: the current stream of device 0). */
  record(stream?: CudaStream): void {
    events.record(this.live('record'), (stream ?? CudaStream.current()).id);
  }

  /** Makes work queued on `stream` (default: current) from now on wait for this event. */
  wait(stream?: CudaStream): void {
    events.wait(this.live('wait'), (stream ?? CudaStream.current()).id);
  }

  /** Blocks the host until the event has happened. */
  synchronize(): void {
    events.synchronize(this.live('synchronize'));
  }

  /** True once the event has happened. */
  query(): boolean {
    return events.query(this.live('query'));
  }

  /** Milliseconds from this event to `end` (both recorded, with enableTiming). */
  elapsedTime(end: CudaEvent): number {
    return events.elapsed(this.live('elapsedTime'), end.live('elapsedTime'));
  }

  /** Frees the event. */
  dispose(): void {
    if (!this.disposed) events.destroy(this.id);
    this.disposed = true;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  private live(op: string): number {
    if (this.disposed)
      throw new FlodlError('ERR_DISPOSED', 'the event was disposed', { op: `CudaEvent.${op}` });
    return this.id;
  }
}

declare module './tensor.js' {
  interface Tensor {
    /**
     * Tells the caching allocator that `stream` uses this tensor, so its memory is not reused
     * before that stream's queued work is done. PyTorch: `t.record_stream(stream)`.
     */
    recordStream(stream: CudaStream): void;
  }
}

Tensor.prototype.recordStream = function recordStream(this: Tensor, stream: CudaStream): void {
  if (!(stream instanceof CudaStream))
    throw invalidArgument('recordStream', 'stream', 'a CudaStream', stream);
  streams.recordTensor(this._h, stream.id);
};

shareClassIdentity(CudaStream, 'flodl.CudaStream');
shareClassIdentity(CudaEvent, 'flodl.CudaEvent');
