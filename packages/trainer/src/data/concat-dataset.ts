// Datasets one after another.
import { cat, invalidArgument, type Tensor, tidy } from '@flodl/tensor-native';
import { checkIndices } from './check-index.js';
import type { BatchDataset, Dataset } from './dataset.js';
import { type AnyDataset, readRows, readSample } from './dataset-reads.js';
import { checkSourceDataset } from './subset.js';

/**
 * Datasets one after another: indices `[0, a.length)` read `a`, the next `b.length` read `b`,
 * and so on (`cumulativeSizes` holds where each ends). Datasets of both shapes mix; `getBatch`
 * reads each run of consecutive indices from one dataset in one call and joins the runs in
 * the order asked. Their samples must agree position by position in shape and dtype.
 *
 * **Shape**: as the datasets' samples and batches.
 *
 * @param datasets the datasets, in order (at least one; empty ones are allowed)
 * @throws FlodlError ERR_INVALID_ARGUMENT for no datasets or an item that is not a dataset;
 *   `get`/`getBatch` throw it for an index outside [0, length)
 * @example
 * ```ts
 * const both = new ConcatDataset([trainSet, extraSet]);
 * both.length; // trainSet.length + extraSet.length
 * const [x, y] = both.get(trainSet.length); // the first sample of extraSet
 * ```
 * PyTorch: `torch.utils.data.ConcatDataset(datasets)` (`cumulative_sizes`); negative indices
 * are refused here, as every flodl dataset does.
 */
export class ConcatDataset implements Dataset, BatchDataset {
  /** The datasets, in order. */
  readonly datasets: readonly AnyDataset[];
  /** Where each dataset ends: the running sums of their lengths. PyTorch: `cumulative_sizes`. */
  readonly cumulativeSizes: readonly number[];
  readonly length: number;
  readonly names?: readonly string[];

  constructor(datasets: Iterable<AnyDataset>) {
    const op = 'ConcatDataset';
    if (
      datasets === null ||
      typeof (datasets as Partial<Iterable<AnyDataset>>)?.[Symbol.iterator] !== 'function'
    ) {
      throw invalidArgument(op, 'datasets', 'an array of datasets', datasets);
    }
    const list = [...datasets];
    if (list.length === 0) throw invalidArgument(op, 'datasets', 'at least one dataset', list);
    for (const [k, dataset] of list.entries()) checkSourceDataset(op, `datasets[${k}]`, dataset);
    let total = 0;
    this.cumulativeSizes = Object.freeze(list.map((dataset) => (total += dataset.length)));
    this.datasets = Object.freeze(list);
    this.length = total;
    const named = list.find((dataset) => dataset.names !== undefined);
    if (named?.names !== undefined) this.names = named.names;
  }

  /**
   * Which dataset holds `index`, and its index there.
   * @throws FlodlError ERR_INVALID_ARGUMENT when `index` is outside [0, length)
   */
  locate(index: number): { dataset: number; index: number } {
    checkIndices('ConcatDataset.locate', 'index', [index], this.length);
    return this.#locate(index);
  }

  /**
   * Sample `index`: the sample of the dataset that holds it.
   * @throws FlodlError ERR_INVALID_ARGUMENT when `index` is outside [0, length)
   */
  get(index: number): Tensor[] {
    checkIndices('ConcatDataset.get', 'index', [index], this.length);
    const place = this.#locate(index);
    return [...readSample(this.datasets[place.dataset]!, place.index)];
  }

  /**
   * The rows `indices`, in order (dim 0 = `indices.length`).
   * @throws FlodlError ERR_INVALID_ARGUMENT when an index is outside [0, length)
   */
  getBatch(indices: readonly number[]): Tensor[] {
    checkIndices('ConcatDataset.getBatch', 'indices', indices, this.length);
    // Runs of consecutive indices that one dataset holds, each read in one call.
    const runs: { dataset: number; indices: number[] }[] = [];
    for (const index of indices) {
      const place = this.#locate(index);
      const last = runs[runs.length - 1];
      if (last !== undefined && last.dataset === place.dataset) last.indices.push(place.index);
      else runs.push({ dataset: place.dataset, indices: [place.index] });
    }
    if (runs.length === 1) return readRows(this.datasets[runs[0]!.dataset]!, runs[0]!.indices);
    return tidy(() => {
      const parts = runs.map((run) => readRows(this.datasets[run.dataset]!, run.indices));
      return parts[0]!.map((_, position) => cat(parts.map((part) => part[position]!)));
    });
  }

  toString(): string {
    return `ConcatDataset(length=${this.length}, ${this.datasets.length} datasets)`;
  }

  #locate(index: number): { dataset: number; index: number } {
    // The first dataset whose end is past `index` (Python's bisect_right), by bisection.
    let low = 0;
    let high = this.cumulativeSizes.length - 1;
    while (low < high) {
      const middle = (low + high) >> 1;
      if (this.cumulativeSizes[middle]! <= index) low = middle + 1;
      else high = middle;
    }
    return { dataset: low, index: low === 0 ? index : index - this.cumulativeSizes[low - 1]! };
  }
}
