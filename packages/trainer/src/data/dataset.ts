// The two dataset shapes the loader reads, and the contract they share.
import type { Tensor } from '@flodl/tensor-native';

/** One sample: its tensors by position (for example `[image, label]`). */
export type Sample = readonly Tensor[];

/**
 * A dataset read one sample at a time. The loader stacks samples position-wise into batches
 * (or calls your `collate`).
 *
 * **Contract.**
 * - `get(index)` is a *pure function of the index*: the same index gives the same values,
 *   whenever and in whichever process it is read. Distributed ranks and caches rely on it;
 *   random augmentation belongs in a transform seeded from the index. With `FLODL_DEBUG=1`
 *   (or the loader's `debug: true`) the loader reads one sampled index twice per epoch and
 *   throws `ERR_INVALID_ARGUMENT` when the two reads differ.
 * - The returned tensors belong to the caller, which disposes them (views of the dataset's
 *   own storage are fine: disposing a view frees only the view).
 * - The loader calls `get` inside a scope: tensors the dataset keeps for itself (a lazily
 *   loaded file, a cache) must be marked with `keep()`.
 * - Every sample has the same number of tensors, and position by position the same shape
 *   and dtype (or give the loader a `collate` that copes).
 *
 * @example
 * ```ts
 * const squares: Dataset = {
 *   length: 100,
 *   get: (index) => [Tensor.from([index]), Tensor.from([index * index])],
 * };
 * ```
 * PyTorch: `torch.utils.data.Dataset` (`__len__`, `__getitem__`).
 */
export interface Dataset<T extends Sample = Sample> {
  /** The number of samples; indices run over `[0, length)`. */
  readonly length: number;
  /** The sample at `index`. */
  get(index: number): T;
  /** Names of the sample's positions, used for `batch.get(name)`. */
  readonly names?: readonly string[];
}

/**
 * A dataset read a batch at a time: `getBatch(indices)` returns tensors whose dim 0 has one
 * row per index, in the order given. The faster shape for in-memory data (one `indexSelect`
 * instead of N reads and a stack).
 *
 * The contract of {@link Dataset} holds per row: row k is a pure function of `indices[k]`,
 * the tensors belong to the caller, and kept state must be marked with `keep()`.
 *
 * PyTorch: a map-style `Dataset` with `__getitems__` (2.x), or a `BatchSampler` over one.
 */
export interface BatchDataset {
  /** The number of samples; indices run over `[0, length)`. */
  readonly length: number;
  /** The rows for `indices`, dim 0 = `indices.length`. */
  getBatch(indices: readonly number[]): Tensor[];
  /** Names of the batch's tensors, used for `batch.get(name)`. */
  readonly names?: readonly string[];
}

/**
 * A batch dataset whose whole data is a few tensors in memory: the loader may keep them on
 * the training device ("resident mode") and build every batch there with `indexSelect`.
 */
export interface ResidentDataset extends BatchDataset {
  /**
   * The stored tensors, dim 0 = sample (borrowed: the dataset still owns them). They may be
   * stored compactly (for example uint8 images) and finished by `batchFromRows`.
   */
  residentTensors(): readonly Tensor[];
  /**
   * Turns rows gathered from (device copies of) `residentTensors()` into the batch that
   * `getBatch(indices)` would return. Absent: the rows are the batch.
   */
  batchFromRows?(rows: Tensor[], indices: readonly number[]): Tensor[];
}

/** True when `value` has a numeric `length` and a `getBatch` method. */
export function isBatchDataset(value: unknown): value is BatchDataset {
  return hasLength(value) && typeof (value as { getBatch?: unknown }).getBatch === 'function';
}

/** True when `value` has a numeric `length` and a `get` method. */
export function isDataset(value: unknown): value is Dataset {
  return hasLength(value) && typeof (value as { get?: unknown }).get === 'function';
}

/** True when `value` is a batch dataset that can hand over its stored tensors. */
export function isResidentDataset(value: unknown): value is ResidentDataset {
  return (
    isBatchDataset(value) && typeof (value as { residentTensors?: unknown }).residentTensors === 'function'
  );
}

function hasLength(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && typeof (value as { length?: unknown }).length === 'number'
  );
}
