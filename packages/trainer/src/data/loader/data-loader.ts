// The DataLoader: seeded order per epoch, fixed-size batches, prefetch, resident mode.
import { FlodlError, invalidArgument, keep, tidy } from '@flodl/tensor-native';
import type { Batch } from '../batch.js';
import { checkIndices } from '../check-index.js';
import {
  type BatchDataset,
  type Dataset,
  isBatchDataset,
  isDataset,
  isResidentDataset,
  type Sample,
} from '../dataset.js';
import { epochKey, Random } from '../random.js';
import { RandomSampler } from '../samplers/random-sampler.js';
import { checkEpoch, type Sampler } from '../samplers/sampler.js';
import { SequentialSampler } from '../samplers/sequential-sampler.js';
import {
  BatchDatasetSource,
  type BatchSource,
  checkBatchTensors,
  ResidentSource,
  SampleDatasetSource,
} from './batch-source.js';
import { AsyncEpochIterator, EpochIterator, EpochRun } from './epoch-run.js';
import { type DataLoaderOptions, type ResolvedOptions, resolveOptions } from './options.js';
import { checkPurity } from './purity-check.js';
import { byteSize } from './staging.js';

const OP = 'DataLoader';
const PURITY_STREAM = 0x5eedn; // the purity check's sampled index uses its own random stream

/**
 * Batches of a dataset, epoch by epoch. Each epoch's order is a pure function of
 * `(seed, epoch)`, so any process can rebuild it; batches have `batchSize` rows (the last
 * partial batch is dropped by default).
 *
 * **Ownership.** Each batch belongs to the consumer: dispose it (`using`, `dispose()`).
 * The loader frees the batches it prepared ahead when a loop stops early (`break`, `return`,
 * an exception), so an abandoned epoch leaks nothing.
 *
 * **Sources.** A {@link BatchDataset} is read with `getBatch`; a per-sample {@link Dataset}
 * with `get` per index, then `collate` (stacking by default). When resident (see
 * `resident`), the data set is uploaded to the device once and each batch is an `indexSelect`
 * there.
 *
 * **Errors.** A failing read is rethrown when the consumer reaches that batch, as a
 * FlodlError naming the index (the dataset's error is the `cause`); the epoch ends there and
 * the loader stays usable for the next one.
 *
 * @example
 * ```ts
 * const loader = new DataLoader(new FashionMnist(), { batchSize: 128 });
 * for (let epoch = 0; epoch < 10; epoch++) {
 *   for (using batch of loader.epoch(epoch)) {
 *     tidy(() => step(batch.get('image'), batch.get('label')));
 *   }
 * }
 * ```
 * @throws FlodlError ERR_INVALID_ARGUMENT for an empty dataset, a batchSize below 1 or above
 *   the data with dropLast, unknown options, or a sampler with shuffle/seed; ERR_DEVICE for a
 *   CUDA device without CUDA
 * PyTorch: `torch.utils.data.DataLoader(dataset, batch_size, shuffle, sampler, collate_fn,
 * pin_memory=True, drop_last, generator)`, plus `sampler.set_epoch(epoch)`.
 */
export class DataLoader<T extends Sample = Sample> {
  /** The dataset the loader reads. */
  readonly dataset: Dataset<T> | BatchDataset;
  /** Samples per batch. */
  readonly batchSize: number;
  /** Whether the last, smaller batch is dropped. */
  readonly dropLast: boolean;
  /** The sampler that orders each epoch. */
  readonly sampler: Sampler;
  /** Where batches are delivered. */
  readonly device: ResolvedOptions<T>['device'];
  /** Batches prepared ahead of the consumer. */
  readonly prefetch: number;
  /** True when the data set is held on the device and batches are gathered there. */
  readonly isResident: boolean;
  /** Whether each epoch checks the dataset contract (see `debug`). */
  readonly debug: boolean;
  private readonly names: readonly string[] | undefined;
  private readonly useBatchReads: boolean;
  private readonly source: BatchSource;
  private disposed = false;

  constructor(dataset: Dataset<T> | BatchDataset, options: DataLoaderOptions<T>) {
    const resolved = resolveOptions(options);
    checkDataset(dataset);
    this.dataset = dataset;
    this.batchSize = resolved.batchSize;
    this.dropLast = resolved.dropLast;
    this.device = resolved.device;
    this.prefetch = resolved.prefetch;
    this.debug = resolved.debug;
    this.names = resolved.names ?? dataset.names;
    this.sampler =
      resolved.sampler ??
      (resolved.shuffle
        ? new RandomSampler(dataset.length, { seed: resolved.seed })
        : new SequentialSampler(dataset.length));
    checkBatchCount(this.sampler.length, this.batchSize, this.dropLast);
    if (resolved.collate !== undefined && !isDataset(dataset)) {
      throw invalidArgument(OP, 'collate', 'a per-sample Dataset (with get(index)) to collate', dataset);
    }
    this.useBatchReads = resolved.collate === undefined && isBatchDataset(dataset);
    const { source, resident } = this.chooseSource(dataset, resolved);
    this.source = source;
    this.isResident = resident;
  }

  /** Batches per epoch. PyTorch: `len(loader)`. */
  get length(): number {
    const samples = this.sampler.length;
    return this.dropLast ? Math.floor(samples / this.batchSize) : Math.ceil(samples / this.batchSize);
  }

  /** Samples per epoch (after dropping the last partial batch). */
  get samplesPerEpoch(): number {
    return this.dropLast ? this.length * this.batchSize : this.sampler.length;
  }

  /**
   * The batches of epoch `epoch`, iterable with `for…of` (prefetching synchronously) or
   * `for await…of` (prefetching on later turns of the event loop). Each iteration starts the
   * epoch over, in the same order.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for a negative or fractional epoch, or a sampler
   *   index outside the dataset; ERR_DISPOSED after `dispose()`
   */
  epoch(epoch: number): EpochBatches {
    if (this.disposed)
      throw new FlodlError('ERR_DISPOSED', 'the loader was disposed', { op: 'DataLoader.epoch' });
    checkEpoch('DataLoader.epoch', epoch);
    const indices = this.sampler.indices(epoch);
    if (!(indices instanceof Int32Array)) {
      throw invalidArgument('DataLoader.epoch', `sampler.indices(${epoch})`, 'an Int32Array', indices);
    }
    checkIndices('DataLoader.epoch', `sampler.indices(${epoch})`, indices, this.dataset.length);
    const usable = this.dropLast
      ? Math.floor(indices.length / this.batchSize) * this.batchSize
      : indices.length;
    const batchCount = Math.ceil(usable / this.batchSize);
    const beforeFirstBatch = this.debug ? () => this.checkContract(indices, epoch) : undefined;
    const plan = {
      source: this.source,
      indices: indices.subarray(0, usable),
      batchSize: this.batchSize,
      batchCount,
      names: this.names,
      prefetch: this.prefetch,
      beforeFirstBatch,
    };
    return new EpochBatches(epoch, batchCount, () => new EpochRun(plan), this.prefetch);
  }

  /** Frees the device copy of a resident data set; the loader cannot be used afterwards. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.source.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `DataLoader(batches=${this.length}, batchSize=${this.batchSize}, dropLast=${this.dropLast}, device=${this.device}, prefetch=${this.prefetch}, resident=${this.isResident})`;
  }

  private checkContract(indices: Int32Array, epoch: number): void {
    const pick = Random.fromSeed(epochKey(PURITY_STREAM, epoch)).uniformInt(indices.length);
    checkPurity(this.dataset, indices[pick]!, this.useBatchReads);
  }

  private chooseSource(
    dataset: Dataset<T> | BatchDataset,
    options: ResolvedOptions<T>,
  ): { source: BatchSource; resident: boolean } {
    const streaming: BatchSource = this.useBatchReads
      ? new BatchDatasetSource(dataset as BatchDataset, options.device)
      : new SampleDatasetSource(dataset as Dataset<T>, options.collate, options.device);
    if (options.resident === false) return { source: streaming, resident: false };
    if (this.useBatchReads && isResidentDataset(dataset)) {
      const stored = checkBatchTensors(
        'dataset.residentTensors()',
        dataset.residentTensors(),
        dataset.length,
      );
      const fits = byteSize(stored) <= options.residentMaxBytes;
      if (options.resident === true) {
        return { source: new ResidentSource(dataset, stored, options.device, false), resident: true };
      }
      if (!fits) return { source: streaming, resident: false };
      try {
        return { source: new ResidentSource(dataset, stored, options.device, false), resident: true };
      } catch (error) {
        // Automatic mode falls back to streaming when the device cannot hold the data.
        if (isOutOfMemory(error)) return { source: streaming, resident: false };
        throw error;
      }
    }
    if (options.resident === 'auto') return { source: streaming, resident: false };
    // Forced resident for a dataset without stored tensors: read and collate everything once.
    const all = Array.from({ length: dataset.length }, (_, index) => index);
    const stored = tidy(() => {
      const tensors = checkBatchTensors('the collated data set', streaming.fetch(all), dataset.length);
      for (const tensor of tensors) keep(tensor);
      return tensors;
    });
    return { source: new ResidentSource({}, stored, options.device, true), resident: true };
  }
}

/**
 * One epoch's batches. Every `for…of` / `for await…of` over it starts the epoch from its
 * first batch, in the same order.
 */
export class EpochBatches implements Iterable<Batch>, AsyncIterable<Batch> {
  constructor(
    /** The epoch number. */
    readonly epoch: number,
    /** How many batches the epoch yields. */
    readonly length: number,
    private readonly newRun: () => EpochRun,
    private readonly prefetch: number,
  ) {}

  [Symbol.iterator](): EpochIterator {
    return new EpochIterator(this.newRun(), this.prefetch);
  }

  [Symbol.asyncIterator](): AsyncEpochIterator {
    return new AsyncEpochIterator(this.newRun(), this.prefetch);
  }
}

function checkDataset(dataset: unknown): void {
  if (!isDataset(dataset) && !isBatchDataset(dataset)) {
    throw invalidArgument(
      OP,
      'dataset',
      'a Dataset (length, get) or a BatchDataset (length, getBatch)',
      dataset,
    );
  }
  const { length } = dataset as { length: number };
  if (!Number.isSafeInteger(length) || length < 0) {
    throw invalidArgument(OP, 'dataset.length', 'a non-negative integer', length);
  }
  if (length === 0) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the dataset is empty', {
      op: OP,
      expected: 'at least one sample',
      got: 'dataset.length = 0',
    });
  }
}

function checkBatchCount(samples: number, batchSize: number, dropLast: boolean): void {
  if (samples === 0) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the sampler yields no indices', {
      op: OP,
      expected: 'a sampler with length >= 1',
      got: 'sampler.length = 0',
    });
  }
  if (dropLast && batchSize > samples) {
    throw new FlodlError(
      'ERR_INVALID_ARGUMENT',
      'batchSize is larger than the data, so dropLast would drop every batch',
      {
        op: OP,
        expected: `batchSize <= ${samples} samples per epoch, or dropLast: false`,
        got: `batchSize ${batchSize}`,
      },
    );
  }
}

function isOutOfMemory(error: unknown): boolean {
  if (!FlodlError.isInstance(error)) return false;
  return /out of memory/i.test(`${error.nativeMessage ?? ''} ${error.message}`);
}
