// Reading one sample or a batch of rows from either dataset shape, for the datasets that wrap
// others (Subset, ConcatDataset).
import { type Tensor, tidy } from '@flodl/tensor-native';
import { defaultCollate } from './collate.js';
import { type BatchDataset, type Dataset, isBatchDataset, isDataset } from './dataset.js';

/** A dataset of either shape. */
export type AnyDataset = Dataset | BatchDataset;

/** @internal Sample `index` of `dataset`: `get(index)`, or row 0 of `getBatch([index])`. */
export function readSample(dataset: AnyDataset, index: number): readonly Tensor[] {
  if (isDataset(dataset)) return dataset.get(index);
  return tidy(() => (dataset as BatchDataset).getBatch([index]).map((rows) => rows.select(0, 0)));
}

/** @internal The rows `indices` of `dataset`: `getBatch(indices)`, or its samples stacked. */
export function readRows(dataset: AnyDataset, indices: readonly number[]): Tensor[] {
  if (isBatchDataset(dataset)) return dataset.getBatch(indices);
  return tidy(() =>
    defaultCollate(
      indices.map((index) => (dataset as Dataset).get(index)),
      indices,
    ),
  );
}
