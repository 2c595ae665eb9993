// Where the loader's batches come from: a batch dataset, a per-sample dataset with a
// collate, or tensors resident on the device. Each `fetch` runs inside the loader's scope, so
// temporaries are freed and only the returned tensors survive.
import { type Device, FlodlError, fromData, invalidArgument, keep, Tensor, tidy } from '@flodl/tensor-native';
import { type Collate, defaultCollate } from '../collate.js';
import type { BatchDataset, Dataset, ResidentDataset, Sample } from '../dataset.js';
import { datasetError, describeIndices } from '../errors.js';
import { stageToDevice } from './staging.js';

/** @internal Produces the tensors of one batch on the loader's device. */
export interface BatchSource {
  fetch(indices: readonly number[]): Tensor[];
  dispose(): void;
}

const OP = 'DataLoader';

/** @internal Checks a dataset's or collate's result: a non-empty array of tensors, dim 0 = rows. */
export function checkBatchTensors(what: string, tensors: unknown, rows: number | null): Tensor[] {
  if (!Array.isArray(tensors) || tensors.length === 0) {
    throw invalidArgument(OP, `the result of ${what}`, 'a non-empty array of Tensors', tensors);
  }
  tensors.forEach((tensor, position) => {
    if (!(tensor instanceof Tensor)) throw invalidArgument(OP, `${what}[${position}]`, 'a Tensor', tensor);
    if (rows !== null && tensor.shape[0] !== rows) {
      throw new FlodlError('ERR_SHAPE', `${what}[${position}] does not have one row per index`, {
        op: OP,
        expected: `dim 0 = ${rows}`,
        got: `shape [${tensor.shape.join(', ')}]`,
      });
    }
  });
  return tensors as Tensor[];
}

/** Batches from `dataset.getBatch`, staged to the device. */
export class BatchDatasetSource implements BatchSource {
  constructor(
    private readonly dataset: BatchDataset,
    private readonly device: Device,
  ) {}

  fetch(indices: readonly number[]): Tensor[] {
    const what = `dataset.getBatch(${describeIndices(indices)})`;
    let tensors: Tensor[];
    try {
      tensors = this.dataset.getBatch(indices);
    } catch (error) {
      throw datasetError(OP, what, error);
    }
    return stageToDevice(checkBatchTensors(what, tensors, indices.length), this.device);
  }

  dispose(): void {}
}

/** Batches from `dataset.get` per index, collated, staged to the device. */
export class SampleDatasetSource<T extends Sample> implements BatchSource {
  constructor(
    private readonly dataset: Dataset<T>,
    private readonly collate: Collate<T> | undefined,
    private readonly device: Device,
  ) {}

  fetch(indices: readonly number[]): Tensor[] {
    const samples: T[] = [];
    try {
      for (const index of indices) {
        try {
          samples.push(this.dataset.get(index));
        } catch (error) {
          throw datasetError(OP, `dataset.get(${index})`, error);
        }
      }
      const tensors = this.collateSamples(samples, indices);
      // Samples belong to the loader: free every one the collate did not pass through.
      const kept = new Set(tensors);
      for (const sample of samples) {
        if (Array.isArray(sample)) for (const tensor of sample) if (!kept.has(tensor)) tensor?.dispose?.();
      }
      return stageToDevice(tensors, this.device);
    } catch (error) {
      for (const sample of samples)
        if (Array.isArray(sample)) for (const tensor of sample) tensor?.dispose?.();
      throw error;
    }
  }

  private collateSamples(samples: T[], indices: readonly number[]): Tensor[] {
    if (this.collate === undefined) return defaultCollate(samples, indices);
    const what = `collate(samples of ${describeIndices(indices)})`;
    let tensors: Tensor[];
    try {
      tensors = this.collate(samples, indices);
    } catch (error) {
      throw datasetError(OP, what, error);
    }
    return checkBatchTensors(what, tensors, null);
  }

  dispose(): void {}
}

/**
 * Batches gathered with `indexSelect` from the whole data set held on the device (uploaded
 * once), then finished by the dataset's `batchFromRows`.
 */
export class ResidentSource implements BatchSource {
  private readonly tensors: readonly Tensor[];
  /** The tensors this source frees on dispose: its device copies, or everything it adopted. */
  private readonly owned: readonly Tensor[];

  /**
   * @param stored the whole data set, dim 0 = sample; copied to `device` when it is elsewhere
   * @param adopt the source owns `stored` (the loader built it) and frees it on dispose
   */
  constructor(
    private readonly dataset: Pick<ResidentDataset, 'batchFromRows'>,
    stored: readonly Tensor[],
    private readonly device: Device,
    adopt: boolean,
  ) {
    // Uploaded once and kept outside every scope (freed by dispose()); kept only once every
    // copy exists, so a failed upload (out of memory) frees the copies already made.
    this.tensors = tidy(() => stageToDevice(stored, device));
    const copies = this.tensors.filter((tensor) => !stored.includes(tensor));
    for (const copy of copies) keep(copy);
    if (adopt) for (const tensor of stored) if (!this.tensors.includes(tensor)) tensor.dispose();
    this.owned = adopt ? this.tensors : copies;
  }

  fetch(indices: readonly number[]): Tensor[] {
    const index = fromData(Int32Array.from(indices), [indices.length], {
      dtype: 'int64',
      device: this.device,
    });
    const rows = this.tensors.map((tensor) => tensor.indexSelect(0, index));
    if (this.dataset.batchFromRows === undefined) return rows;
    const what = `dataset.batchFromRows(rows of ${describeIndices(indices)})`;
    let tensors: Tensor[];
    try {
      tensors = this.dataset.batchFromRows(rows, indices);
    } catch (error) {
      throw datasetError(OP, what, error);
    }
    return checkBatchTensors(what, tensors, indices.length);
  }

  dispose(): void {
    for (const tensor of this.owned) tensor.dispose();
  }
}
