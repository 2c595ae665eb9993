// The debug check of the dataset contract: one sampled index, read twice, must give the same
// values (datasets must be pure functions of the index).
import { FlodlError, type Tensor, tidy, toBytes } from '@flodl/tensor-native';
import type { BatchDataset, Dataset } from '../dataset.js';
import { datasetError } from '../errors.js';

/** True when `FLODL_DEBUG` is set to `1` or `true`. */
export function debugFromEnvironment(): boolean {
  const value = process.env.FLODL_DEBUG;
  return value === '1' || value === 'true';
}

/**
 * Reads `index` twice through the dataset (`getBatch([index])` when it has one, else `get`)
 * and compares shapes, dtypes and bytes.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT when the reads differ, naming the index and position
 */
export function checkPurity(dataset: Dataset | BatchDataset, index: number, useBatch: boolean): void {
  const what = useBatch ? `dataset.getBatch([${index}])` : `dataset.get(${index})`;
  const read = (): readonly Tensor[] => {
    try {
      return useBatch ? (dataset as BatchDataset).getBatch([index]) : (dataset as Dataset).get(index);
    } catch (error) {
      throw datasetError('DataLoader', what, error);
    }
  };
  tidy(() => {
    const first = read();
    const second = read();
    const difference = describeDifference(first, second);
    if (difference !== null) {
      throw new FlodlError(
        'ERR_INVALID_ARGUMENT',
        `the dataset is not a pure function of the index: ${what} ${difference}`,
        {
          op: 'DataLoader (FLODL_DEBUG)',
          expected:
            'the same values on every read of an index (put random augmentation in a transform keyed by the index)',
          got: 'different values on a second read',
        },
      );
    }
  });
}

function describeDifference(first: readonly Tensor[], second: readonly Tensor[]): string | null {
  if (first.length !== second.length) return `returned ${first.length} then ${second.length} tensors`;
  for (let position = 0; position < first.length; position++) {
    const a = first[position]!;
    const b = second[position]!;
    if (a.dtype !== b.dtype || a.shape.join() !== b.shape.join()) {
      return `returned ${a.describe()} then ${b.describe()} at position ${position}`;
    }
    const bytesA = toBytes(a);
    const bytesB = toBytes(b);
    for (let k = 0; k < bytesA.length; k++) {
      if (bytesA[k] !== bytesB[k]) return `returned different values at position ${position}`;
    }
  }
  return null;
}
