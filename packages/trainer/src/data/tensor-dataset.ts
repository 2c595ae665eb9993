// A dataset over tensors already in memory.
import { FlodlError, invalidArgument, keep, Tensor, tidy } from '@flodl/tensor-native';
import { checkIndices } from './check-index.js';
import type { Dataset, ResidentDataset } from './dataset.js';
import { checkNames, checkOptions } from './validate.js';

/** Options of {@link TensorDataset}. */
export interface TensorDatasetOptions {
  /** Names of the tensors (for `batch.get(name)`). Default: the record's keys, or `'0'`, `'1'`, … */
  names?: readonly string[];
}

/**
 * Rows of in-memory tensors that share their first dimension: sample `i` is
 * `[t0[i], t1[i], …]`. Serves single samples (`get`, views) and batches (`getBatch`, one
 * `indexSelect` per tensor), and lets the loader keep the data resident on the device.
 *
 * The dataset holds its own handles to the tensors' memory (no copy): disposing the tensors
 * you passed does not break it, and `dispose()` releases only its handles.
 *
 * **Shape**: each tensor `(N, *)`; `get(i)` gives `(*)` per tensor; `getBatch(idx)` gives `(B, *)`.
 *
 * @example
 * ```ts
 * const data = new TensorDataset({ x: randn([100, 3]), y: randint(0, 2, [100]) });
 * const [x, y] = data.getBatch([0, 5, 7]); // x: [3, 3], y: [3]
 * ```
 * @throws FlodlError ERR_INVALID_ARGUMENT when there are no tensors, an item is not a Tensor
 *   or a tensor is 0-d; ERR_SHAPE when the first dimensions differ
 * PyTorch: `torch.utils.data.TensorDataset(*tensors)`.
 */
export class TensorDataset implements Dataset, ResidentDataset {
  readonly length: number;
  readonly names: readonly string[];
  private readonly stored: readonly Tensor[];

  constructor(
    tensors: readonly Tensor[] | Readonly<Record<string, Tensor>>,
    options: TensorDatasetOptions = {},
  ) {
    const op = 'TensorDataset';
    checkOptions(op, options, ['names']);
    const isList = Array.isArray(tensors);
    if (tensors === null || typeof tensors !== 'object') {
      throw invalidArgument(op, 'tensors', 'an array or a record of Tensors', tensors);
    }
    const entries: [string, unknown][] = isList
      ? (tensors as readonly unknown[]).map((tensor, k) => [String(k), tensor])
      : Object.entries(tensors);
    if (entries.length === 0) throw invalidArgument(op, 'tensors', 'at least one Tensor', tensors);
    for (const [name, tensor] of entries) {
      const label = isList ? `tensors[${name}]` : `tensors.${name}`;
      if (!(tensor instanceof Tensor)) throw invalidArgument(op, label, 'a Tensor', tensor);
      if (tensor.ndim === 0)
        throw invalidArgument(op, label, 'a tensor with a first (sample) dimension', tensor);
    }
    const list = entries.map(([, tensor]) => tensor as Tensor);
    const length = list[0]!.shape[0]!;
    list.forEach((tensor, k) => {
      if (tensor.shape[0] !== length) {
        throw new FlodlError(
          'ERR_SHAPE',
          'every tensor needs the same size in dim 0 (the sample dimension)',
          {
            op,
            expected: `${length} rows, as ${entries[0]![0]} has`,
            got: `${tensor.shape[0]} rows in ${entries[k]![0]} ([${tensor.shape.join(', ')}])`,
          },
        );
      }
    });
    this.length = length;
    this.names =
      options.names === undefined
        ? Object.freeze(entries.map(([name]) => name))
        : checkNames(op, options.names, list.length);
    // Own handles to the same memory, outside every scope.
    this.stored = Object.freeze(list.map((tensor) => keep(tensor.detach())));
  }

  /**
   * Sample `index`: a view of row `index` of each tensor (the caller disposes the views).
   * @throws FlodlError ERR_INVALID_ARGUMENT when `index` is outside [0, length)
   */
  get(index: number): Tensor[] {
    checkIndices('TensorDataset.get', 'index', [index], this.length);
    return this.live().map((tensor) => tensor.select(0, index));
  }

  /**
   * The rows `indices`, in order, as new tensors (dim 0 = `indices.length`).
   * @throws FlodlError ERR_INVALID_ARGUMENT when an index is outside [0, length)
   */
  getBatch(indices: readonly number[]): Tensor[] {
    checkIndices('TensorDataset.getBatch', 'indices', indices, this.length);
    const stored = this.live();
    return tidy(() => {
      const index = Tensor.from(Int32Array.from(indices), [indices.length], { dtype: 'int64' });
      return stored.map((tensor) =>
        tensor.device === 'cpu'
          ? tensor.indexSelect(0, index)
          : tensor.indexSelect(0, index.to(tensor.device)),
      );
    });
  }

  /** The stored tensors (borrowed; the dataset keeps them). */
  residentTensors(): readonly Tensor[] {
    return this.live();
  }

  /** Releases the dataset's handles (the memory lives on while other tensors view it). */
  dispose(): void {
    for (const tensor of this.stored) tensor.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    return `TensorDataset(length=${this.length}, ${this.stored.map((tensor, k) => `${this.names[k]}: ${tensor.describe()}`).join(', ')})`;
  }

  private live(): readonly Tensor[] {
    if (this.stored.some((tensor) => !tensor.isLive)) {
      throw new FlodlError('ERR_DISPOSED', 'the dataset was disposed', { op: 'TensorDataset' });
    }
    return this.stored;
  }
}
