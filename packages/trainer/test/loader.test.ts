import { arange, FlodlError, liveTensorCount, Tensor, zeros } from '@flodl/tensor-native';
import { afterEach, describe, expect, it } from 'vitest';
import {
  type Batch,
  type BatchDataset,
  DataLoader,
  type Dataset,
  epochPermutation,
  SubsetSampler,
  TensorDataset,
} from '../src/data/index.js';
import { expectNoLeaks } from './helpers.js';

/** x = [[0], [1], …] float32 and y = 0..n-1 int64: a batch's labels are its dataset indices. */
function indexDataset(length: number): TensorDataset {
  const x = arange(length, { dtype: 'float32' }).reshape(length, 1);
  const y = arange(length, { dtype: 'int64' });
  const data = new TensorDataset({ x, y });
  x.dispose();
  y.dispose();
  return data;
}

/** A per-sample dataset whose sample i is [[i, i], i]. */
function sampleDataset(length: number, fail?: (index: number) => unknown): Dataset {
  return {
    length,
    get(index) {
      const problem = fail?.(index);
      if (problem !== undefined) throw problem;
      return [Tensor.from([index, index], [2], { dtype: 'float32' }), Tensor.from(index)];
    },
  };
}

/** Labels of every batch (consumed and disposed). */
function epochLabels(loader: DataLoader, epoch: number, name = 'y'): number[][] {
  const labels: number[][] = [];
  for (const batch of loader.epoch(epoch)) {
    labels.push(batch.get(name).toArray() as number[]);
    batch.dispose();
  }
  return labels;
}

const datasets: { dispose(): void }[] = [];
function track<T extends { dispose(): void }>(value: T): T {
  datasets.push(value);
  return value;
}
afterEach(() => {
  for (const value of datasets.splice(0)) value.dispose();
});

describe('DataLoader semantics', () => {
  it('drops the last partial batch by default, keeps it with dropLast: false', () => {
    const data = track(indexDataset(10));
    const dropping = new DataLoader(data, { batchSize: 3 });
    expect(dropping.length).toBe(3);
    expect(dropping.samplesPerEpoch).toBe(9);
    expect(epochLabels(dropping, 0).map((labels) => labels.length)).toEqual([3, 3, 3]);
    const keeping = new DataLoader(data, { batchSize: 3, dropLast: false });
    expect(keeping.length).toBe(4);
    expect(epochLabels(keeping, 0).map((labels) => labels.length)).toEqual([3, 3, 3, 1]);
  });

  it('shuffles with seed 42 by default: each epoch is the (seed, epoch) permutation', () => {
    const data = track(indexDataset(10));
    const loader = new DataLoader(data, { batchSize: 2, dropLast: false });
    for (const epoch of [0, 1, 2]) {
      expect(epochLabels(loader, epoch).flat()).toEqual(Array.from(epochPermutation(10, 42, epoch)));
    }
    expect(epochLabels(loader, 0)).not.toEqual(epochLabels(loader, 1));
  });

  it('gives the same order in another loader, and when an epoch is iterated again', () => {
    const data = track(indexDataset(50));
    const a = new DataLoader(data, { batchSize: 8, seed: 7 });
    const b = new DataLoader(data, { batchSize: 8, seed: 7 });
    expect(epochLabels(a, 3)).toEqual(epochLabels(b, 3));
    const epoch = a.epoch(4);
    const read = () =>
      [...epoch].map((batch) => {
        using owned = batch;
        return owned.get('y').toArray();
      });
    expect(read()).toEqual(read());
    expect(epochLabels(new DataLoader(data, { batchSize: 8, seed: 8 }), 3)).not.toEqual(epochLabels(a, 3));
  });

  it('visits the data in order with shuffle: false', () => {
    const data = track(indexDataset(6));
    const loader = new DataLoader(data, { batchSize: 4, shuffle: false, dropLast: false });
    expect(epochLabels(loader, 5)).toEqual([
      [0, 1, 2, 3],
      [4, 5],
    ]);
  });

  it('serves a rank its subset: two partitions cover the epoch without overlap', () => {
    const data = track(indexDataset(40));
    const rank0 = new DataLoader(data, {
      batchSize: 5,
      sampler: new SubsetSampler({ datasetLength: 40, offset: 0, size: 20 }),
    });
    const rank1 = new DataLoader(data, {
      batchSize: 5,
      sampler: new SubsetSampler({ datasetLength: 40, offset: 20, size: 20 }),
    });
    const seen = [...epochLabels(rank0, 2).flat(), ...epochLabels(rank1, 2).flat()];
    expect(seen).toEqual(Array.from(epochPermutation(40, 42, 2)));
  });

  it('stacks per-sample datasets (default collate) and names the positions', () => {
    const loader = new DataLoader(sampleDataset(7), { batchSize: 3, shuffle: false, names: ['x', 'y'] });
    const [first] = loader.epoch(0);
    expect(first!.get('x').shape).toEqual([3, 2]);
    expect(first!.get('y').toArray()).toEqual([0, 1, 2]);
    first!.dispose();
  });

  it('calls a custom collate with the samples and their indices, and frees the samples', async () => {
    const seen: number[][] = [];
    const loader = new DataLoader(sampleDataset(6), {
      batchSize: 3,
      shuffle: false,
      collate: (samples, indices) => {
        seen.push([...indices]);
        return [samples.map((sample) => sample[0]!).reduce((sum, tensor) => sum.add(tensor))];
      },
    });
    await expectNoLeaks(() => {
      const sums = epochLabels(loader, 0, '0');
      expect(sums).toEqual([
        [3, 3],
        [12, 12],
      ]);
    });
    expect(seen).toEqual([
      [0, 1, 2],
      [3, 4, 5],
    ]);
  });

  it('iterates asynchronously in the same order', async () => {
    const data = track(indexDataset(20));
    const loader = new DataLoader(data, { batchSize: 4 });
    const labels: number[][] = [];
    for await (const batch of loader.epoch(1)) {
      labels.push(batch.get('y').toArray() as number[]);
      batch.dispose();
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(labels).toEqual(epochLabels(loader, 1));
  });
});

describe('DataLoader memory', () => {
  it('holds at most prefetch batches ahead of the consumer', () => {
    const data = track(indexDataset(64));
    for (const prefetch of [0, 1, 3]) {
      const loader = new DataLoader(data, { batchSize: 8, prefetch });
      const before = liveTensorCount();
      const held: number[] = [];
      for (const batch of loader.epoch(0)) {
        held.push(liveTensorCount() - before);
        batch.dispose();
      }
      // Two tensors per batch: the consumer's batch plus up to `prefetch` prepared ones.
      expect(Math.max(...held)).toBe(2 * (1 + prefetch));
      expect(held.at(-1)).toBe(2);
      expect(liveTensorCount()).toBe(before);
    }
  });

  it('prepares the next batches on a later turn when iterated asynchronously', async () => {
    const data = track(indexDataset(64));
    const loader = new DataLoader(data, { batchSize: 8, prefetch: 2 });
    const before = liveTensorCount();
    const held: number[] = [];
    for await (const batch of loader.epoch(0)) {
      held.push(liveTensorCount() - before);
      await new Promise((resolve) => setImmediate(resolve));
      held.push(liveTensorCount() - before);
      batch.dispose();
    }
    // Handed out alone, then joined by two prepared batches once the event loop turns.
    expect(held.slice(0, 2)).toEqual([2, 6]);
    expect(Math.max(...held)).toBe(6);
    expect(liveTensorCount()).toBe(before);
  });

  it('leaks nothing when a loop breaks early, sync or async', async () => {
    const data = track(indexDataset(64));
    const loader = new DataLoader(data, { batchSize: 4, prefetch: 3 });
    await expectNoLeaks(() => {
      for (using batch of loader.epoch(0)) {
        if (batch.get('y').shape[0] === 4) break;
      }
    });
    await expectNoLeaks(async () => {
      let count = 0;
      for await (using _batch of loader.epoch(1)) {
        await new Promise((resolve) => setImmediate(resolve));
        if (++count === 3) break;
      }
    });
    await expectNoLeaks(() => {
      try {
        for (using _batch of loader.epoch(2)) throw new Error('step failed');
      } catch {
        // the loop's exception closes the iterator
      }
    });
  });

  it('leaks nothing over full epochs of every source', async () => {
    const data = track(indexDataset(30));
    await expectNoLeaks(() => {
      for (const resident of [true, false] as const) {
        const loader = new DataLoader(data, { batchSize: 7, resident });
        for (let epoch = 0; epoch < 2; epoch++) for (using _batch of loader.epoch(epoch));
        loader.dispose();
      }
      const perSample = new DataLoader(sampleDataset(30), { batchSize: 7, resident: true });
      for (using _batch of perSample.epoch(0));
      perSample.dispose();
    });
  });
});

describe('DataLoader resident mode', () => {
  it('is automatic for tensor datasets within the budget and gives the streaming batches', () => {
    const data = track(indexDataset(25));
    const resident = new DataLoader(data, { batchSize: 5 });
    const streaming = new DataLoader(data, { batchSize: 5, resident: false });
    const overBudget = new DataLoader(data, { batchSize: 5, residentMaxBytes: 16 });
    expect([resident.isResident, streaming.isResident, overBudget.isResident]).toEqual([true, false, false]);
    expect(epochLabels(resident, 3)).toEqual(epochLabels(streaming, 3));
    expect(epochLabels(overBudget, 3)).toEqual(epochLabels(streaming, 3));
  });

  it('reads and collates a per-sample dataset once when forced', () => {
    let reads = 0;
    const counting: Dataset = {
      length: 12,
      get(index) {
        reads++;
        return [Tensor.from(index)];
      },
    };
    const loader = new DataLoader(counting, { batchSize: 4, resident: true });
    expect(loader.isResident).toBe(true);
    expect(reads).toBe(12);
    expect(epochLabels(loader, 0, '0').flat()).toEqual(Array.from(epochPermutation(12, 42, 0)));
    expect(reads).toBe(12);
    loader.dispose();
    expect(() => loader.epoch(1)).toThrow(/disposed/);
  });
});

describe('DataLoader errors', () => {
  it('rejects an empty dataset, bad batch sizes and unknown options', () => {
    const data = track(indexDataset(10));
    expect(() => new DataLoader(sampleDataset(0), { batchSize: 1 })).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: DataLoader: the dataset is empty
        expected: at least one sample
        got: dataset.length = 0]
    `);
    expect(() => new DataLoader(data, { batchSize: 0 })).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: DataLoader: invalid batchSize
        expected: a positive integer
        got: 0]
    `);
    expect(() => new DataLoader(data, { batchSize: 11 })).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: DataLoader: batchSize is larger than the data, so dropLast would drop every batch
        expected: batchSize <= 10 samples per epoch, or dropLast: false
        got: batchSize 11]
    `);
    expect(new DataLoader(data, { batchSize: 11, dropLast: false }).length).toBe(1);
    expect(() => new DataLoader(data, { batchsize: 2 } as never)).toThrow(/unknown option 'batchsize'/);
    expect(() => new DataLoader({ length: 3 } as never, { batchSize: 1 })).toThrow(/a Dataset/);
    expect(() => new DataLoader(data, { batchSize: 2, prefetch: -1 })).toThrow(/prefetch/);
    expect(
      () =>
        new DataLoader(data, {
          batchSize: 2,
          shuffle: true,
          sampler: new SubsetSampler({ datasetLength: 10, offset: 0, size: 4 }),
        }),
    ).toThrow(/sampler is exclusive with shuffle and seed/);
    expect(() => new DataLoader(data, { batchSize: 2 }).epoch(-1)).toThrow(/epoch/);
  });

  it('refuses a CUDA device without CUDA', () => {
    const data = track(indexDataset(4));
    try {
      new DataLoader(data, { batchSize: 2, device: 'cuda' }).dispose();
    } catch (error) {
      expect(error).toMatchObject({ code: 'ERR_DEVICE' });
    }
  });

  it('rejects sampler indices outside the dataset', () => {
    const data = track(indexDataset(4));
    const sampler = { length: 2, indices: () => Int32Array.from([0, 9]) };
    expect(() =>
      new DataLoader(data, { batchSize: 2, sampler }).epoch(0),
    ).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: DataLoader.epoch: sampler.indices(0)[1] is out of range
        expected: an integer index in [0, 4)
        got: 9]
    `);
  });

  it('reports inconsistent sample shapes when the consumer reaches the batch', async () => {
    const ragged: Dataset = { length: 6, get: (index) => [zeros([index === 4 ? 3 : 2])] };
    const loader = new DataLoader(ragged, { batchSize: 3, shuffle: false });
    await expectNoLeaks(() => {
      const iterator = loader.epoch(0)[Symbol.iterator]();
      iterator.next().value!.dispose();
      expect(() => iterator.next()).toThrowErrorMatchingInlineSnapshot(`
        [FlodlError: defaultCollate: samples differ in shape at position 0
          expected: [2], as at index 3
          got: [3] at index 4]
      `);
      expect(iterator.next().done).toBe(true);
    });
  });

  it('checks what a batch dataset returns', () => {
    const wrong: BatchDataset = { length: 8, getBatch: (indices) => [zeros([indices.length + 1])] };
    const loader = new DataLoader(wrong, { batchSize: 4 });
    expect(() => [...loader.epoch(0)]).toThrow(
      expect.objectContaining({ code: 'ERR_SHAPE', message: expect.stringContaining('one row per index') }),
    );
  });

  it('wraps a dataset that throws mid-epoch with the index, and stays usable', async () => {
    let broken = true;
    const cause = new Error('disk read failed');
    const data = sampleDataset(12, (index) => (broken && index === 7 ? cause : undefined));
    const loader = new DataLoader(data, { batchSize: 2, shuffle: false });
    const delivered: number[][] = [];
    let caught: unknown;
    await expectNoLeaks(() => {
      try {
        for (using batch of loader.epoch(0)) delivered.push(batch[1]!.toArray() as number[]);
      } catch (error) {
        caught = error;
      }
    });
    expect(delivered).toEqual([
      [0, 1],
      [2, 3],
      [4, 5],
    ]);
    expect(FlodlError.isInstance(caught)).toBe(true);
    expect(caught).toMatchObject({ code: 'ERR_IO', cause });
    expect((caught as Error).message).toMatchInlineSnapshot(
      `"DataLoader: dataset.get(7) failed: disk read failed"`,
    );
    broken = false;
    expect(epochLabels(loader, 1, '1').flat()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
  });

  it('keeps the code of a FlodlError the dataset throws', () => {
    const data = sampleDataset(4, (index) =>
      index === 2 ? new FlodlError('ERR_SHAPE', 'bad record', { op: 'MyDataset' }) : undefined,
    );
    const loader = new DataLoader(data, { batchSize: 4, shuffle: false });
    expect(() => [...loader.epoch(0)]).toThrow(
      expect.objectContaining({
        code: 'ERR_SHAPE',
        message: expect.stringContaining('dataset.get(2) failed'),
      }),
    );
  });
});

describe('DataLoader debug mode (dataset purity)', () => {
  it('catches a dataset that is not a pure function of the index', () => {
    const impure: Dataset = {
      length: 8,
      get: () => [Tensor.from([Math.random()], [1], { dtype: 'float32' })],
    };
    const loader = new DataLoader(impure, { batchSize: 4, debug: true });
    expect(() => [...loader.epoch(0)]).toThrow(
      /not a pure function of the index: dataset.get\(\d\) returned different values/,
    );
  });

  it('passes pure datasets, and is on with FLODL_DEBUG=1', () => {
    const previous = process.env.FLODL_DEBUG;
    process.env.FLODL_DEBUG = '1';
    try {
      const data = track(indexDataset(8));
      const loader = new DataLoader(data, { batchSize: 4 });
      expect(loader.debug).toBe(true);
      const batches: Batch[] = [...loader.epoch(0)];
      expect(batches).toHaveLength(2);
      for (const batch of batches) batch.dispose();
    } finally {
      if (previous === undefined) delete process.env.FLODL_DEBUG;
      else process.env.FLODL_DEBUG = previous;
    }
  });
});
