// CUDA graphs (PyTorch: torch.cuda.CUDAGraph, torch.cuda.graph): the kernels a function queues
// are recorded once into a graph and replayed with one launch, on the same memory.

import { shareClassIdentity } from './class-identity.js';
import { CudaEvent, CudaStream, deviceIndex } from './cuda-streams.js';
import { FlodlError, invalidArgument } from './errors.js';
import { cudaDeviceCount, graphs, streams } from './internal/cuda-runtime.js';
import { beginScope, collectTensors, type Disposable, endScope } from './scope.js';

/**
 * What CUDA refuses from other threads while a capture runs (PyTorch: `capture_error_mode`):
 * `'global'` (the default) refuses unsafe calls from every thread, `'threadLocal'` only from
 * the capturing thread, `'relaxed'` from none.
 */
export type CaptureErrorMode = 'global' | 'threadLocal' | 'relaxed';

const MODES: Record<CaptureErrorMode, number> = { global: 0, threadLocal: 1, relaxed: 2 };

export interface CudaGraphCaptureOptions {
  /** Share the private memory pool of this (already captured) graph. PyTorch: `pool=other.pool()`. */
  pool?: CudaGraph;
  /** The stream to capture on (default: a fresh stream of the graph's device; never the default stream). */
  stream?: CudaStream;
  /** Default `'global'`. */
  captureErrorMode?: CaptureErrorMode;
}

/**
 * A CUDA graph: `capture(fn)` runs `fn` with a side stream in capture mode, so the kernels it
 * queues are recorded rather than run; `replay()` runs them all again with one launch, reading
 * and writing the same memory (tensors created inside the capture live in the graph's private
 * pool). What `fn` does on the host (its JS, its branches, the scalars it passes) happens once,
 * at capture: replay repeats only the GPU work. To feed new data, copy it into tensors made
 * before the capture (`staticInput.copy_(batch)`), then replay.
 *
 * Inside the capture, anything that waits for the GPU (`item()`, `toArray()`, printing a CUDA
 * tensor, copies to the CPU) is refused by CUDA and the capture fails with ERR_CUDA_GRAPH.
 * Run `fn` a few times eagerly first, on a side stream (warm-up), so that lazy initialisation
 * (cuBLAS handles, optimizer state) is not captured.
 *
 * PyTorch: `g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): ...; g.replay()`.
 * @example
 * ```ts
 * const x = keep(randn([64, 128], { device: 'cuda' }));
 * const graph = new CudaGraph();
 * const y = graph.capture(() => keep(model.forward(x)));
 * x.copy_(nextInput); graph.replay(); // y now holds model(nextInput)
 * ```
 */
export class CudaGraph {
  /** The CUDA device index the graph captures and replays on. */
  readonly device: number;
  #id: number;
  #captured = false;
  #disposed = false;

  /** @throws FlodlError ERR_DEVICE without CUDA or for a device that does not exist */
  constructor(options: { device?: number } = {}) {
    if (options === null || typeof options !== 'object')
      throw invalidArgument('CudaGraph', 'options', 'an options object', options);
    this.device = deviceIndex('CudaGraph', options.device);
    this.#id = graphs.create();
  }

  /** True once a capture succeeded (the graph can be replayed). */
  get captured(): boolean {
    return this.#captured;
  }

  /**
   * Captures the GPU work of `fn` (synchronous) into this graph and returns what `fn` returns.
   * Like `tidy`, the tensors `fn` makes are freed when the capture ends, except those it returns
   * or `keep`s (their memory stays reserved by the graph's pool; replays write into it).
   * Work already queued on the current stream is ordered before the capture, and work queued
   * after it waits for it. PyTorch: `with torch.cuda.graph(g, pool, stream):`.
   * @throws FlodlError ERR_CUDA_GRAPH when `fn` did something a graph cannot hold (a host
   *   synchronisation, a CPU copy) or the graph was already captured; ERR_INVALID_ARGUMENT for
   *   an async `fn` or bad options. Whatever `fn` threw is rethrown after the capture is
   *   closed; the graph is then left uncaptured.
   */
  capture<T>(fn: () => T, options: CudaGraphCaptureOptions = {}): T {
    const op = 'CudaGraph.capture';
    this.#live(op);
    if (typeof fn !== 'function') throw invalidArgument(op, 'fn', 'a function', fn);
    if (options === null || typeof options !== 'object')
      throw invalidArgument(op, 'options', 'an options object', options);
    for (const key of Object.keys(options)) {
      if (key !== 'pool' && key !== 'stream' && key !== 'captureErrorMode')
        throw invalidArgument(op, 'options', 'pool, stream or captureErrorMode', key);
    }
    if (this.#captured) {
      throw new FlodlError('ERR_CUDA_GRAPH', 'the graph was already captured', {
        op,
        expected: 'an uncaptured graph',
        got: 'a captured one (dispose it and capture a new CudaGraph)',
      });
    }
    const mode = MODES[options.captureErrorMode ?? 'global'];
    if (mode === undefined)
      throw invalidArgument(
        op,
        'captureErrorMode',
        "'global', 'threadLocal' or 'relaxed'",
        options.captureErrorMode,
      );
    let poolOf = -1;
    if (options.pool !== undefined) {
      if (!(options.pool instanceof CudaGraph))
        throw invalidArgument(op, 'pool', 'a CudaGraph', options.pool);
      poolOf = options.pool.#poolId(op);
    }
    const stream = options.stream ?? new CudaStream(this.device);
    if (!(stream instanceof CudaStream)) throw invalidArgument(op, 'stream', 'a CudaStream', stream);
    if (stream.device !== this.device) {
      throw new FlodlError('ERR_DEVICE', 'the capture stream is on another device', {
        op,
        expected: `a stream of cuda:${this.device}`,
        got: `cuda:${stream.device}`,
      });
    }
    const outer = CudaStream.current(this.device);
    using before = new CudaEvent();
    before.record(outer);
    before.wait(stream);
    const previous = streams.setCurrent(stream.id);
    let failure: unknown;
    let result: T | undefined;
    let began = false;
    // fn runs in a tidy scope: its temporaries die with the capture (their memory stays
    // reserved by the graph's pool), and a failed capture leaves none of its tensors behind.
    const scope = beginScope('CudaGraph.capture');
    let survivors: Iterable<Disposable> = [];
    try {
      graphs.captureBegin(this.#id, poolOf, mode);
      began = true;
      result = fn();
      if (!(result instanceof Promise)) survivors = collectTensors(result);
      if (result instanceof Promise) {
        failure = new FlodlError('ERR_INVALID_ARGUMENT', 'a CUDA graph cannot capture an async function', {
          op,
          expected: 'a synchronous function',
          got: 'a function returning a Promise',
        });
      }
    } catch (error) {
      failure = error;
    }
    if (began) {
      try {
        graphs.captureEnd(this.#id);
      } catch (error) {
        failure ??= error;
      }
    }
    streams.setCurrent(previous);
    endScope(scope, failure === undefined ? survivors : []);
    using after = new CudaEvent();
    after.record(stream);
    after.wait(outer);
    if (failure !== undefined) {
      // A failed capture leaves the native graph unusable: start over with a fresh one.
      graphs.destroy(this.#id);
      this.#id = graphs.create();
      throw explainCaptureFailure(op, failure);
    }
    this.#captured = true;
    return result as T;
  }

  /**
   * Runs the captured work again (queued on the current stream's device). PyTorch: `g.replay()`.
   * @throws FlodlError ERR_CUDA_GRAPH before a capture; ERR_DISPOSED after `dispose()`
   */
  replay(): void {
    this.#live('CudaGraph.replay');
    if (!this.#captured) {
      throw new FlodlError('ERR_CUDA_GRAPH', 'nothing was captured', {
        op: 'CudaGraph.replay',
        expected: 'a graph after a successful capture(fn)',
        got: 'an uncaptured graph',
      });
    }
    graphs.replay(this.#id);
  }

  /** Frees the graph; its memory pool is released once no tensor made inside the capture lives. */
  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#captured = false;
    graphs.destroy(this.#id);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  #poolId(op: string): number {
    this.#live(op);
    if (!this.#captured) {
      throw new FlodlError('ERR_CUDA_GRAPH', 'a shared pool must come from a captured graph', {
        op,
        expected: 'options.pool: a graph after its capture',
        got: 'an uncaptured graph',
      });
    }
    return this.#id;
  }

  #live(op: string): void {
    if (this.#disposed) throw new FlodlError('ERR_DISPOSED', 'the CUDA graph was disposed', { op });
  }
}

function explainCaptureFailure(op: string, failure: unknown): unknown {
  if (!FlodlError.isInstance(failure) || failure.code !== 'ERR_CUDA_GRAPH') return failure;
  return new FlodlError('ERR_CUDA_GRAPH', 'the function cannot be captured into a CUDA graph', {
    op,
    expected:
      'GPU work only: no host synchronisation (item(), toArray(), printing), no copies to or from the CPU, static shapes',
    got: failure.nativeMessage ?? failure.message,
    nativeMessage: failure.nativeMessage,
    cause: failure,
  });
}

/**
 * Whether the current stream of `device` (default 0) is being captured into a CUDA graph;
 * false without CUDA. PyTorch: `torch.cuda.is_current_stream_capturing()`.
 */
export function isCurrentStreamCapturing(device?: number): boolean {
  if (cudaDeviceCount() === 0) return false;
  return graphs.capturing(deviceIndex('isCurrentStreamCapturing', device));
}

shareClassIdentity(CudaGraph, 'flodl.CudaGraph');
