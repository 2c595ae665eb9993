import { describe, expect, it } from 'vitest';
import {
  epochPermutation,
  partitionIndices,
  RandomSampler,
  SequentialSampler,
  SubsetSampler,
} from '../src/data/index.js';

describe('SequentialSampler', () => {
  it('visits 0..n-1 every epoch', () => {
    const sampler = new SequentialSampler(5);
    expect(sampler.length).toBe(5);
    expect(Array.from(sampler.indices(0))).toEqual([0, 1, 2, 3, 4]);
    expect(Array.from(sampler.indices(7))).toEqual([0, 1, 2, 3, 4]);
  });

  it('rejects a zero length and bad epochs', () => {
    expect(() => new SequentialSampler(0)).toThrow(/length/);
    expect(() => new SequentialSampler(3).indices(-1)).toThrow(/epoch/);
  });
});

describe('RandomSampler', () => {
  it('is the epoch permutation of (seed, epoch), seed 42 by default', () => {
    const sampler = new RandomSampler(10);
    expect(Array.from(sampler.indices(0))).toEqual([7, 4, 1, 9, 8, 0, 5, 6, 2, 3]);
    expect(Array.from(sampler.indices(1))).toEqual([9, 1, 3, 7, 6, 5, 0, 2, 8, 4]);
    expect(new RandomSampler(100, { seed: 3 }).indices(2)).toEqual(epochPermutation(100, 3, 2));
  });

  it('agrees across instances (what distributed ranks rely on)', () => {
    const a = new RandomSampler(1000, { seed: 9 });
    const b = new RandomSampler(1000, { seed: 9 });
    for (const epoch of [0, 1, 17]) expect(a.indices(epoch)).toEqual(b.indices(epoch));
  });

  it('rejects misspelled options and bad seeds', () => {
    expect(() => new RandomSampler(10, { sed: 1 } as never)).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: RandomSampler: unknown option 'sed'; did you mean \`seed\`?
        expected: one of seed
        got: sed]
    `);
    expect(() => new RandomSampler(10, { seed: -3 })).toThrow(/seed/);
  });
});

describe('SubsetSampler and epoch plans', () => {
  it('slices the epoch permutation; consecutive slices partition it', () => {
    const parts = [0, 4, 7].map(
      (offset, k) => new SubsetSampler({ datasetLength: 10, offset, size: [4, 3, 3][k]! }),
    );
    for (const epoch of [0, 1, 2]) {
      const joined = parts.flatMap((part) => Array.from(part.indices(epoch)));
      expect(joined).toEqual(Array.from(epochPermutation(10, 42, epoch)));
    }
    expect(Array.from(parts[0]!.indices(0))).toEqual([7, 4, 1, 9]);
  });

  it('matches partitionIndices for the same plan', () => {
    const plan = { epoch: 3, partitionOffset: 20, partitionSize: 30 };
    const sampler = SubsetSampler.fromPlan(plan, 100, 5);
    expect(sampler.length).toBe(30);
    expect(sampler.indices(3)).toEqual(partitionIndices(plan, 100, 5));
    expect(partitionIndices(plan, 100, 5)).toEqual(epochPermutation(100, 5, 3).slice(20, 50));
  });

  it('takes a contiguous range without shuffle', () => {
    const sampler = new SubsetSampler({ datasetLength: 10, offset: 3, size: 4, shuffle: false });
    expect(Array.from(sampler.indices(5))).toEqual([3, 4, 5, 6]);
  });

  it('rejects slices past the end', () => {
    expect(
      () => new SubsetSampler({ datasetLength: 10, offset: 8, size: 3 }),
    ).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: SubsetSampler: the partition runs past the end of the dataset
        expected: offset + size <= 10
        got: offset 8 + size 3 = 11]
    `);
    expect(() => partitionIndices({ epoch: 0, partitionOffset: -1, partitionSize: 2 }, 10)).toThrow(/offset/);
  });
});
