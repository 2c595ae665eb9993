// A dataset of chosen rows of another.
import { invalidArgument, type Tensor } from '@flodl/tensor-native';
import { checkIndices } from './check-index.js';
import { type BatchDataset, type Dataset, isBatchDataset, isDataset } from './dataset.js';
import { type AnyDataset, readRows, readSample } from './dataset-reads.js';

/** @internal Throws unless `dataset` is a Dataset (length, get) or a BatchDataset (length, getBatch). */
export function checkSourceDataset(op: string, name: string, dataset: unknown): AnyDataset {
  if (!isDataset(dataset) && !isBatchDataset(dataset)) {
    throw invalidArgument(op, name, 'a Dataset (length, get) or a BatchDataset (length, getBatch)', dataset);
  }
  return dataset;
}

/**
 * The rows `indices` of another dataset, in that order: sample `k` is `dataset`'s sample
 * `indices[k]`. It reads through the dataset it wraps (no copy) and serves both shapes:
 * `get(k)` and `getBatch(ks)` (one `getBatch` of the mapped indices when the dataset has it,
 * else its samples read one by one and stacked), so the DataLoader and the Trainer's
 * `.dataset(...)` take it like any dataset. An index may repeat.
 *
 * **Shape**: as the wrapped dataset's samples and batches.
 *
 * @param dataset the dataset to take rows from (a Dataset or a BatchDataset)
 * @param indices its rows, each an integer in [0, dataset.length)
 * @throws FlodlError ERR_INVALID_ARGUMENT for something that is not a dataset, or an index
 *   that is not an integer in [0, dataset.length) (named by its position); `get`/`getBatch`
 *   throw it for an index outside [0, length)
 * @example
 * ```ts
 * const data = new TensorDataset([randn([100, 3]), randint(0, 2, [100])]);
 * const firstTen = new Subset(data, Array.from({ length: 10 }, (_, k) => k));
 * const [x, y] = firstTen.getBatch([0, 1, 2]); // x: [3, 3]
 * ```
 * PyTorch: `torch.utils.data.Subset(dataset, indices)`.
 */
export class Subset implements Dataset, BatchDataset {
  /** The dataset the rows come from. */
  readonly dataset: AnyDataset;
  /** Its rows, in this subset's order. */
  readonly indices: readonly number[];
  readonly length: number;
  readonly names?: readonly string[];

  constructor(dataset: AnyDataset, indices: ArrayLike<number> | Iterable<number>) {
    const op = 'Subset';
    this.dataset = checkSourceDataset(op, 'dataset', dataset);
    if (indices === null || typeof indices !== 'object') {
      throw invalidArgument(op, 'indices', 'an array of integer indices', indices);
    }
    const list = Array.from(indices as ArrayLike<number>);
    checkIndices(op, 'indices', list, dataset.length);
    this.indices = Object.freeze(list);
    this.length = list.length;
    if (dataset.names !== undefined) this.names = dataset.names;
  }

  /**
   * Sample `index` of the subset: the wrapped dataset's sample `indices[index]`.
   * @throws FlodlError ERR_INVALID_ARGUMENT when `index` is outside [0, length)
   */
  get(index: number): Tensor[] {
    checkIndices('Subset.get', 'index', [index], this.length);
    return [...readSample(this.dataset, this.indices[index]!)];
  }

  /**
   * The rows `indices` of the subset, in order (dim 0 = `indices.length`).
   * @throws FlodlError ERR_INVALID_ARGUMENT when an index is outside [0, length)
   */
  getBatch(indices: readonly number[]): Tensor[] {
    checkIndices('Subset.getBatch', 'indices', indices, this.length);
    return readRows(
      this.dataset,
      indices.map((index) => this.indices[index]!),
    );
  }

  toString(): string {
    return `Subset(length=${this.length} of ${this.dataset.length})`;
  }
}
