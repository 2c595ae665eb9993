// One pass over an epoch's batches: a bounded queue that prepares the next `prefetch` batches
// ahead of the consumer, delivers errors in order, and frees what it holds when the
// consumer stops early.
import { keep, type Tensor, tidy } from '@flodl/tensor-native';
import { Batch } from '../batch.js';
import type { BatchSource } from './batch-source.js';

/** @internal What one epoch pass needs to know. */
export interface EpochRunPlan {
  readonly source: BatchSource;
  readonly indices: Int32Array;
  readonly batchSize: number;
  readonly batchCount: number;
  readonly names: readonly string[] | undefined;
  readonly prefetch: number;
  /** Runs before the first batch is fetched (the debug purity check). */
  readonly beforeFirstBatch: (() => void) | undefined;
}

type Entry = { batch: Batch } | { error: unknown };

/** @internal The queue behind both epoch iterators. */
export class EpochRun {
  private produced = 0;
  private queue: Entry[] = [];
  private finished = false;

  constructor(private readonly plan: EpochRunPlan) {}

  /** Batches prepared and not yet taken. */
  get queued(): number {
    return this.queue.length;
  }

  /** Prepares batches until `target` wait in the queue (or the epoch runs out). */
  fill(target: number): void {
    while (!this.finished && this.queue.length < target && this.produced < this.plan.batchCount) {
      this.queue.push(this.produce());
    }
  }

  /** The next batch, or done; throws the error of a batch that failed, then is done. */
  take(): IteratorResult<Batch, undefined> {
    if (this.finished) return { value: undefined, done: true };
    if (this.queue.length === 0) this.fill(1);
    const entry = this.queue.shift();
    if (entry === undefined) {
      this.finish();
      return { value: undefined, done: true };
    }
    if ('error' in entry) {
      this.finish();
      throw entry.error;
    }
    return { value: entry.batch, done: false };
  }

  /** Stops the pass and frees every prepared batch the consumer has not taken. */
  finish(): void {
    this.finished = true;
    for (const entry of this.queue) if ('batch' in entry) entry.batch.dispose();
    this.queue = [];
  }

  private produce(): Entry {
    const { plan } = this;
    const number = this.produced++;
    const start = number * plan.batchSize;
    const indices = Array.from(
      plan.indices.subarray(start, Math.min(start + plan.batchSize, plan.indices.length)),
    );
    try {
      if (number === 0) plan.beforeFirstBatch?.();
      // Temporaries die with this scope; the batch's tensors are kept (the consumer owns them).
      const tensors = tidy(() => {
        const fetched = plan.source.fetch(indices);
        for (const tensor of fetched) keep(tensor);
        return fetched;
      });
      return { batch: newBatch(tensors, plan.names) };
    } catch (error) {
      this.produced = plan.batchCount; // nothing after a failed batch
      return { error };
    }
  }
}

function newBatch(tensors: Tensor[], names: readonly string[] | undefined): Batch {
  try {
    return new Batch(tensors, names);
  } catch (error) {
    for (const tensor of tensors) tensor.dispose();
    throw error;
  }
}

/**
 * Iterates an epoch's batches synchronously. `return()` (a `break` out of `for…of`) frees
 * the prepared batches.
 */
export class EpochIterator implements IterableIterator<Batch> {
  constructor(
    private readonly run: EpochRun,
    private readonly prefetch: number,
  ) {}

  next(): IteratorResult<Batch, undefined> {
    const result = this.run.take();
    if (!result.done) this.run.fill(this.prefetch);
    return result;
  }

  return(): IteratorResult<Batch, undefined> {
    this.run.finish();
    return { value: undefined, done: true };
  }

  [Symbol.iterator](): this {
    return this;
  }
}

/**
 * Iterates an epoch's batches asynchronously: after handing out a batch it prepares the next
 * ones on a later turn of the event loop, while the consumer awaits other work.
 * `return()` (a `break` out of `for await…of`) frees the prepared batches.
 */
export class AsyncEpochIterator implements AsyncIterableIterator<Batch> {
  private pending: ReturnType<typeof setImmediate> | null = null;

  constructor(
    private readonly run: EpochRun,
    private readonly prefetch: number,
  ) {}

  async next(): Promise<IteratorResult<Batch, undefined>> {
    const result = this.run.take();
    if (!result.done && this.pending === null && this.prefetch > 0) {
      this.pending = setImmediate(() => {
        this.pending = null;
        this.run.fill(this.prefetch);
      });
    }
    return result;
  }

  async return(): Promise<IteratorResult<Batch, undefined>> {
    if (this.pending !== null) clearImmediate(this.pending);
    this.pending = null;
    this.run.finish();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }
}
