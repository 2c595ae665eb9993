// Subset, ConcatDataset and randomSplit: their index logic against PyTorch's
// (scripts/make-goldens-data.py), their reads of both dataset shapes, the DataLoader over them,
// and the Trainer with one as its dataset and PyTorch's newer LR schedulers.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mseLoss } from '@flodl/autograd';
import {
  Adam,
  CosineAnnealingWarmRestarts,
  Linear,
  LinearLR,
  ReLU,
  Sequential,
  SequentialLR,
} from '@flodl/nn';
import { arange, liveTensorCount, manualSeed, randn, type Tensor, tidy, toBytes } from '@flodl/tensor-native';
import { expectFlodlError, readFixture } from '@flodl/testing';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type BatchDataset,
  ConcatDataset,
  DataLoader,
  type Dataset,
  Random,
  randomSplit,
  Subset,
  TensorDataset,
} from '../src/data/index.js';
import { readCheckpoint, Trainer, type TrainerHandle } from '../src/index.js';
import { temporaryFolder } from './helpers.js';

const folder = temporaryFolder('wrappers');

interface WrappersFixture {
  splits: { total: number; lengths: number[]; expected?: number[]; error?: string }[];
  concat: { lengths: number[]; cumulativeSizes: number[]; locations: [number, number][] };
  subset: { total: number; indices: number[]; reads: number[] };
}

const fixture = readFixture(new URL('./fixtures/data-wrappers.json', import.meta.url)) as WrappersFixture;

const owned: { dispose(): void }[] = [];
afterAll(() => {
  for (const item of owned.splice(0)) item.dispose();
});

/** A batch dataset whose row i is [i, 10·i] (float32) and [i] (int64). */
function rows(length: number, offset = 0): TensorDataset {
  const data = tidy(() => {
    const index = arange(length).add(offset);
    return new TensorDataset([index.mul(10).unsqueeze(1).to({ dtype: 'float32' }), index], {
      names: ['x', 'id'],
    });
  });
  owned.push(data);
  return data;
}

/** The same rows through `get` only (a per-sample dataset). */
function perSample(length: number, offset = 0): Dataset {
  const source = rows(length, offset);
  return { length, get: (index) => source.get(index), names: source.names };
}

/** The ids of a batch (its second tensor). */
function ids(tensors: Tensor[]): number[] {
  const values = Array.from(tensors[1]!.toTypedArray() as BigInt64Array, Number);
  for (const tensor of tensors) tensor.dispose();
  return values;
}

describe('against PyTorch 1.13', () => {
  it.each(
    fixture.splits.map((split) => [`${split.total} into [${split.lengths.join(', ')}]`, split] as const),
  )('randomSplit %s', (_name, split) => {
    const data = rows(split.total);
    if (split.error !== undefined) {
      expectFlodlError(() => randomSplit(data, split.lengths), 'ERR_INVALID_ARGUMENT');
      return;
    }
    const parts = randomSplit(data, split.lengths, { seed: 5 });
    expect(parts.map((part) => part.length)).toEqual(split.expected);
    // Disjoint and covering: every index once.
    const all = parts.flatMap((part) => [...part.indices]).sort((a, b) => a - b);
    expect(all).toEqual(Array.from({ length: split.total }, (_, k) => k));
  });

  it('ConcatDataset: cumulative sizes and where each index reads', () => {
    const datasets = fixture.concat.lengths.map((length, d) =>
      d % 2 === 0 ? rows(length) : perSample(length),
    );
    const concat = new ConcatDataset(datasets);
    expect(concat.cumulativeSizes).toEqual(fixture.concat.cumulativeSizes);
    expect(concat.length).toBe(fixture.concat.cumulativeSizes.at(-1));
    const locations = Array.from({ length: concat.length }, (_, g) => concat.locate(g));
    expect(locations.map(({ dataset, index }) => [dataset, index])).toEqual(fixture.concat.locations);
  });

  it('Subset: which index of the wrapped dataset each of its indices reads', () => {
    const subset = new Subset(rows(fixture.subset.total), fixture.subset.indices);
    expect(ids(subset.getBatch(Array.from({ length: subset.length }, (_, k) => k)))).toEqual(
      fixture.subset.reads,
    );
    expect(fixture.subset.reads.map((_, k) => ids(subset.get(k).map((t) => t.unsqueeze(0)))[0])).toEqual(
      fixture.subset.reads,
    );
  });
});

describe('Subset, ConcatDataset and randomSplit', () => {
  it('read both dataset shapes the same way, views and stacks alike', () => {
    const sources: (Dataset | BatchDataset)[] = [rows(6), perSample(6)];
    const parts = [rows(3), perSample(2, 100), new Subset(rows(4, 200), [3, 2])];
    const live = liveTensorCount(); // the datasets' own tensors counted
    for (const source of sources) {
      const subset = new Subset(source, [5, 0, 3]);
      expect(subset.names).toEqual(['x', 'id']);
      const [x, id] = subset.getBatch([2, 0, 0]);
      expect([x!.shape, id!.shape]).toEqual([[3, 1], [3]]);
      expect(ids([x!, id!])).toEqual([3, 5, 5]);
      const sample = subset.get(1);
      expect(sample.map((tensor) => tensor.shape)).toEqual([[1], []]);
      for (const tensor of sample) tensor.dispose();
    }
    const concat = new ConcatDataset(parts);
    expect(ids(concat.getBatch([4, 0, 3, 5, 6, 1]))).toEqual([101, 0, 100, 203, 202, 1]);
    const single = concat.get(6);
    expect(Number(single[1]!.item())).toBe(202);
    for (const tensor of single) tensor.dispose();
    expect(liveTensorCount()).toBe(live);
  });

  it('randomSplit permutes with the pipeline’s own generator: the same seed, the same split', () => {
    const data = rows(20);
    const [a, b] = randomSplit(data, [0.75, 0.25], { seed: 11 });
    const [c] = randomSplit(data, [15, 5], { seed: 11 });
    const [d] = randomSplit(data, [15, 5], { seed: 12 });
    expect(a!.indices).toEqual(c!.indices);
    expect(a!.indices).not.toEqual(d!.indices);
    const order = Random.fromSeed(11).shuffle(Array.from({ length: 20 }, (_, k) => k));
    expect([...a!.indices, ...b!.indices]).toEqual(order);
    expect(randomSplit(data, [10, 10])[0]!.indices).toEqual(
      randomSplit(data, [10, 10], { seed: 42 })[0]!.indices,
    );
  });

  it('feed the DataLoader like any dataset, shuffled or not', () => {
    const [train] = randomSplit(rows(40), [30, 10], { seed: 3 });
    const concat = new ConcatDataset([train!, perSample(6, 1000)]);
    const loader = new DataLoader(concat, { batchSize: 4, dropLast: false, seed: 9 });
    const seen: number[] = [];
    for (const batch of loader.epoch(0)) {
      seen.push(...Array.from(batch.get('id').toTypedArray() as BigInt64Array, Number));
      batch.dispose();
    }
    const expected = [...train!.indices, ...Array.from({ length: 6 }, (_, k) => 1000 + k)];
    expect(seen.sort((x, y) => x - y)).toEqual(expected.sort((x, y) => x - y));
  });

  it('refuse bad indices, lengths and fractions, naming them', () => {
    const data = rows(10);
    expect(
      expectFlodlError(() => new Subset(data, [0, 10]), 'ERR_INVALID_ARGUMENT').message,
    ).toMatchInlineSnapshot(`
      "Subset: indices[1] is out of range
        expected: an integer index in [0, 10)
        got: 10"
    `);
    expectFlodlError(() => new Subset(data, [1.5]), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new Subset({ length: 3 } as never, [0]), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new Subset(data, [1, 2]).get(2), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new Subset(data, [1, 2]).getBatch([0, -1]), 'ERR_INVALID_ARGUMENT');
    expect(
      expectFlodlError(() => randomSplit(data, [3, 6]), 'ERR_INVALID_ARGUMENT').message,
    ).toMatchInlineSnapshot(`
      "randomSplit: the lengths do not sum to the length of the dataset
        expected: lengths summing to 10 (or fractions summing to 1)
        got: [3, 6], summing to 9"
    `);
    expect(
      expectFlodlError(() => randomSplit(data, [-0.5, 1.5]), 'ERR_INVALID_ARGUMENT').message,
    ).toMatchInlineSnapshot(`
      "randomSplit: invalid lengths[0]
        expected: a fraction in [0, 1] (the fractions sum to 1)
        got: -0.5"
    `);
    expectFlodlError(() => randomSplit(data, [-1, 11]), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => randomSplit(data, [2.5, 7.5]), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => randomSplit(data, []), 'ERR_INVALID_ARGUMENT');
    expect(
      expectFlodlError(() => randomSplit(data, [5, 5], { sede: 1 } as never), 'ERR_INVALID_ARGUMENT').message,
    ).toMatchInlineSnapshot(`
      "randomSplit: unknown option 'sede'; did you mean \`seed\`?
        expected: one of seed
        got: sede"
    `);
    expectFlodlError(() => new ConcatDataset([]), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new ConcatDataset([data, 3 as never]), 'ERR_INVALID_ARGUMENT');
    expect(
      expectFlodlError(() => new ConcatDataset([data, data]).get(20), 'ERR_INVALID_ARGUMENT').message,
    ).toMatchInlineSnapshot(`
      "ConcatDataset.get: index[0] is out of range
        expected: an integer index in [0, 20)
        got: 20"
    `);
  });
});

describe('the Trainer over a Subset, with a SequentialLR', () => {
  it('equals a hand-written loop that sets each step’s rate from lrAt, bit for bit', async () => {
    manualSeed(3);
    const x = randn([60, 4]);
    const data = new TensorDataset([x, x.matmul(randn([4, 2]))]);
    owned.push(data);
    const [train] = randomSplit(data, [0.8, 0.2], { seed: 1 });
    const mlp = () => new Sequential(new Linear(4, 8), new ReLU(), new Linear(8, 2));
    const schedule = (optimizer: ConstructorParameters<typeof LinearLR>[0]) =>
      new SequentialLR(optimizer, {
        schedulers: [
          new LinearLR(optimizer, { totalIters: 4 }),
          new CosineAnnealingWarmRestarts(optimizer, { t0: 5 }),
        ],
        milestones: [4],
      });
    const trained = await Trainer.builder(
      () => mlp(),
      (params) => new Adam(params, { lr: 0.01 }),
      (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
    )
      .dataset(train!)
      .batchSize(8)
      .numEpochs(2)
      .devices(['cpu'])
      .scheduler((optimizer) => schedule(optimizer))
      .run()
      .join();

    manualSeed(42);
    const model = mlp();
    const optimizer = new Adam(model.parameters(), { lr: 0.01 });
    const scheduler = schedule(optimizer);
    const loader = new DataLoader(train!, { batchSize: 8, seed: 42 });
    let step = 0;
    for (let epoch = 0; epoch < 2; epoch++) {
      for (const batch of loader.epoch(epoch)) {
        tidy(() => {
          const loss = mseLoss(model.forward(batch.at(0)), batch.at(1));
          loss.backward();
          optimizer.setLr(scheduler.lrAt(step)[0]!);
          optimizer.step();
          optimizer.zeroGrad();
        });
        step += 1;
        batch.dispose();
      }
    }
    const hex = (tensors: Tensor[]) => tensors.map((tensor) => Buffer.from(toBytes(tensor)).toString('hex'));
    expect(step).toBe(12);
    expect(hex(trained.params)).toEqual(hex(model.parameters()));
    model.dispose();
    optimizer.dispose();
  });

  it('stops mid-run and resumes from its bundle to the same weights, bit for bit', async () => {
    manualSeed(4);
    const x = randn([80, 4]);
    const data = new TensorDataset([x, x.matmul(randn([4, 2]))]);
    owned.push(data);
    const [train] = randomSplit(data, [0.8, 0.2], { seed: 2 });
    const build = (onStep: () => void = () => {}) =>
      Trainer.builder(
        () => new Sequential(new Linear(4, 8), new ReLU(), new Linear(8, 2)),
        (params) => new Adam(params, { lr: 0.02 }),
        (model, batch) => {
          onStep();
          return mseLoss(model.forward(batch.at(0)), batch.at(1));
        },
      )
        .dataset(train!)
        .batchSize(8)
        .numEpochs(3)
        .devices(['cpu'])
        .scheduler(
          (optimizer) =>
            new SequentialLR(optimizer, {
              schedulers: [
                new LinearLR(optimizer),
                new CosineAnnealingWarmRestarts(optimizer, { t0: 4, tMult: 2 }),
              ],
              milestones: [5],
            }),
        );
    const hex = (tensors: Tensor[]) => tensors.map((tensor) => Buffer.from(toBytes(tensor)).toString('hex'));
    const straight = await build().run().join();
    const stem = join(folder, 'sequential');
    let steps = 0;
    const first: TrainerHandle = build(() => {
      steps += 1;
      if (steps === 11) first.stop(); // mid-epoch 1
    })
      .savePath(stem)
      .run();
    await first.join();
    expect(steps).toBe(11);
    expect(readCheckpoint(stem).meta.localStep).toBe(11);
    const saved = JSON.parse(readFileSync(`${stem}.scheduler.json`, 'utf8')).state;
    expect(saved.schedulers.map((state: { tI?: number }) => state.tI)).toEqual([undefined, 4]);
    const epochs: number[] = [];
    const resumed = await build()
      .resumeFrom(stem)
      .metricsFn((metrics) => {
        epochs.push(metrics.epoch);
      })
      .run()
      .join();
    expect(epochs).toEqual([1, 2]); // it went on from the stop, in epoch 1
    expect(hex(resumed.params)).toEqual(hex(straight.params));
  });
});
