// Type-level tests (checked by `tsc --noEmit`): the public generics infer what users expect.
import type { Tensor } from '@flodl/tensor-native';
import { describe, expectTypeOf, it } from 'vitest';
import * as subpath from '../src/data/index.js';
import {
  type Batch,
  type BatchDataset,
  type Collate,
  DataLoader,
  type Dataset,
  type EpochBatches,
  type FashionMnist,
  type Sampler,
  type TensorDataset,
} from '../src/data/index.js';
import * as root from '../src/index.js';

declare const pair: Dataset<[Tensor, Tensor]>;

describe('public types', () => {
  it('types the collate of a typed per-sample dataset', () => {
    const collate: Collate<[Tensor, Tensor]> = (samples, indices) => {
      expectTypeOf(samples).toEqualTypeOf<readonly [Tensor, Tensor][]>();
      expectTypeOf(indices).toEqualTypeOf<readonly number[]>();
      return [samples[0]![0]];
    };
    const loader = new DataLoader(pair, { batchSize: 4, collate });
    expectTypeOf(loader.epoch(0)).toEqualTypeOf<EpochBatches>();
    expectTypeOf<ReturnType<EpochBatches[typeof Symbol.iterator]>['next']>().returns.toEqualTypeOf<
      IteratorResult<Batch, undefined>
    >();
  });

  it('accepts the built-in datasets and any sampler', () => {
    expectTypeOf<TensorDataset>().toMatchTypeOf<Dataset>();
    expectTypeOf<TensorDataset>().toMatchTypeOf<BatchDataset>();
    expectTypeOf<FashionMnist>().toMatchTypeOf<BatchDataset>();
    expectTypeOf<{ length: number; indices(epoch: number): Int32Array }>().toMatchTypeOf<Sampler>();
    expectTypeOf<Batch>().toMatchTypeOf<Iterable<Tensor>>();
    expectTypeOf<Batch[0]>().toEqualTypeOf<Tensor>();
  });

  it('exports the same API from the root and from /data', () => {
    expectTypeOf(root.DataLoader).toEqualTypeOf(subpath.DataLoader);
    expectTypeOf(root.readIdx).toEqualTypeOf(subpath.readIdx);
  });
});
