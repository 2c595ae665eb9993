// The managed Trainer on one device: it learns, and equals a hand-written loop bit for bit.
import { crossEntropy, mseLoss } from '@flodl/autograd';
import { Adam, Linear, ReLU, Sequential, SGD } from '@flodl/nn';
import {
  type Device,
  FlodlError,
  liveTensorCount,
  manualSeed,
  randn,
  type Tensor,
  tidy,
  toBytes,
} from '@flodl/tensor-native';
import { testDevice } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { type Batch, DataLoader, epochPermutation, FashionMnist, TensorDataset } from '../src/data/index.js';
import { RankRuntime, recordScalar, Trainer } from '../src/index.js';

const hasFashionMnist = (() => {
  try {
    new FashionMnist({ split: 'test' });
    return true;
  } catch {
    return false;
  }
})();

function regression(n: number): TensorDataset {
  manualSeed(3);
  const x = randn([n, 4]);
  const y = x.matmul(randn([4, 2]));
  return new TensorDataset([x, y]);
}

const mlp = () => new Sequential(new Linear(4, 16), new ReLU(), new Linear(16, 2));
const bytesOf = (tensors: Tensor[]) => tensors.map((tensor) => Buffer.from(toBytes(tensor)).toString('hex'));

describe('Trainer on one device', () => {
  it('equals a hand-written loop over the same seed, data and order, bit for bit', async () => {
    const data = regression(96);
    const handle = Trainer.builder(
      () => mlp(),
      (params) => new Adam(params, { lr: 0.01 }),
      (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
    )
      .dataset(data)
      .batchSize(8)
      .numEpochs(3)
      .devices([testDevice as Device])
      .run();
    const trained = await handle.join();

    manualSeed(42);
    const model = mlp().to(testDevice as Device);
    const optimizer = new Adam(model.parameters(), { lr: 0.01 });
    const loader = new DataLoader(data, { batchSize: 8, seed: 42, device: testDevice as Device });
    for (let epoch = 0; epoch < 3; epoch++) {
      for (const batch of loader.epoch(epoch)) {
        tidy(() => {
          const loss = mseLoss(model.forward(batch.at(0)), batch.at(1));
          optimizer.zeroGrad();
          loss.backward();
          optimizer.step();
        });
        batch.dispose();
      }
    }
    expect(bytesOf(trained.params)).toEqual(bytesOf(model.parameters()));
    expect(trained.params.every((tensor) => tensor.device === 'cpu')).toBe(true);
    expect(trained.lost).toEqual([]);
  });

  it('delivers every epoch once, with scalars, eval and callbacks in order', async () => {
    const events: string[] = [];
    const handle = Trainer.builder(
      () => mlp(),
      (params) => new SGD(params, { lr: 0.05 }),
      (model, batch) => {
        const loss = mseLoss(model.forward(batch.at(0)), batch.at(1));
        recordScalar('batchMean', batch.at(1).mean().item() as number);
        return loss;
      },
    )
      .dataset(regression(64))
      .batchSize(16)
      .numEpochs(4)
      .devices(['cpu'])
      .epochFn((epoch) => {
        events.push(`epoch ${epoch}`);
      })
      .evalFn((model) => {
        events.push('eval');
        expect(model.isTraining).toBe(false);
        return 0.5;
      })
      .evalEvery(2)
      .checkpointEvery(3)
      .checkpointFn((version) => {
        events.push(`checkpoint ${version}`);
      })
      .run();
    const seen: number[] = [];
    for await (const metrics of handle.metrics()) {
      seen.push(metrics.epoch);
      expect(metrics.perRankSamples).toEqual([64]);
      expect(Object.keys(metrics.scalars)).toEqual(['batchMean']);
    }
    await handle.join();
    expect(seen).toEqual([0, 1, 2, 3]);
    expect(handle.pollEval()).toEqual([
      [2, 0.5],
      [4, 0.5],
    ]);
    expect(events).toEqual(['epoch 0', 'epoch 1', 'eval', 'epoch 2', 'checkpoint 3', 'epoch 3', 'eval']);
  });

  it.skipIf(!hasFashionMnist)(
    'learns Fashion-MNIST (a 6 000-image subset) above 70% test accuracy',
    async () => {
      const train = new FashionMnist({ split: 'train', normalize: true });
      const test = new FashionMnist({ split: 'test', normalize: true });
      const subset = new TensorDataset(
        tidy(() => {
          const [images, labels] = train.getBatch(Array.from({ length: 6000 }, (_, index) => index));
          return [images!.flatten(1), labels!];
        }),
      );
      const handle = Trainer.builder(
        () => new Sequential(new Linear(784, 64), new ReLU(), new Linear(64, 10)),
        (params) => new Adam(params, { lr: 2e-3 }),
        (model, batch) => crossEntropy(model.forward(batch.at(0)), batch.at(1)),
      )
        .dataset(subset)
        .batchSize(64)
        .numEpochs(2)
        .devices(['cpu'])
        .evalDataset(test)
        .evalFn((model) =>
          tidy(() => {
            const [images, labels] = test.getBatch(Array.from({ length: 2000 }, (_, index) => index));
            const predicted = model.forward(images!.flatten(1)).argmax(1);
            return predicted.eq(labels!).float().mean().item() as number;
          }),
        )
        .run();
      const losses = [];
      for await (const metrics of handle.metrics()) losses.push(metrics.avgLoss);
      await handle.join();
      const evals = handle.pollEval();
      expect(losses[1]!).toBeLessThan(losses[0]!);
      expect(evals.at(-1)![1]).toBeGreaterThan(0.7);
      train.dispose();
      test.dispose();
    },
  );

  it('names every missing option, refuses unknown and contradictory ones before anything starts', () => {
    const builder = () =>
      Trainer.builder(
        () => mlp(),
        (params) => new SGD(params, { lr: 0.1 }),
        (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
      );
    const caught = (fn: () => unknown): FlodlError => {
      try {
        fn();
      } catch (error) {
        if (FlodlError.isInstance(error)) return error;
        throw error;
      }
      throw new Error('no error');
    };
    const missing = caught(() => builder().batchSize(4).run());
    expect(missing.code).toBe('ERR_INVALID_ARGUMENT');
    expect(missing.message).toContain('the Trainer needs dataset, numEpochs');
    expect(caught(() => builder().options({ bogus: 1 } as never)).message).toMatch(/bogus/);
    expect(
      caught(() => builder().dataset(regression(8)).batchSize(4).numEpochs(1).checkpointEvery(2).run())
        .message,
    ).toContain('checkpointEvery needs a savePath or a checkpointFn');
    expect(
      caught(() =>
        builder()
          .dataset(regression(8))
          .batchSize(4)
          .numEpochs(1)
          .devices(['cpu', 'cuda:0'])
          .mode('NcclSync')
          .run(),
      ).message,
    ).toMatch(/same kind of device/);
    expect(caught(() => builder().dataset(regression(8)).batchSize(16).numEpochs(1).run()).message).toContain(
      'the dataset holds less than one batch',
    );
    expect(
      caught(() => builder().dataset(regression(8)).batchSize(4).numEpochs(1).livenessMs(100).run()).message,
    ).toMatch(/livenessMs[\s\S]*≥ 500/);
    const ready = () => builder().dataset(regression(8)).batchSize(4).numEpochs(1);
    expect(caught(() => ready().lookaheadBatches(-1).run()).message).toMatch(
      /lookaheadBatches[\s\S]*an integer >= 0/,
    );
    expect(caught(() => ready().mode('CpuSync').lookaheadBatches(2).run()).message).toMatch(
      /0 in CpuSync, which hands out no chunks/,
    );
    expect(caught(() => Trainer.builder(null as never, null as never, null as never)).code).toBe(
      'ERR_INVALID_ARGUMENT',
    );
  });

  it('a trainStep that throws rejects join with an error that names it', async () => {
    const handle = Trainer.builder(
      () => mlp(),
      (params) => new SGD(params, { lr: 0.1 }),
      () => {
        throw new Error('boom');
      },
    )
      .dataset(regression(16))
      .batchSize(4)
      .numEpochs(1)
      .devices(['cpu'])
      .run();
    await expect(handle.join()).rejects.toThrow('trainStep threw at epoch 0, batch 0: boom');
  });

  it('a FlodlError from trainStep keeps its code, with where it threw and the original as cause', async () => {
    const handle = Trainer.builder(
      () => mlp(),
      (params) => new SGD(params, { lr: 0.1 }),
      (model, batch) => mseLoss(model.forward(batch.at(0).narrow(1, 0, 3)), batch.at(1)),
    )
      .dataset(regression(16))
      .batchSize(4)
      .numEpochs(1)
      .devices([testDevice as Device])
      .run();
    const error = await handle.join().catch((caught: unknown) => caught);
    expect(FlodlError.isInstance(error) && error.code).toBe('ERR_SHAPE');
    expect((error as Error).message).toMatch(/^trainStep threw at epoch 0, batch 0: linear: /);
    expect(FlodlError.isInstance((error as Error).cause)).toBe(true);
  });

  it('a trainStep returning a non-scalar or a non-tensor is a typed error naming what it returned', async () => {
    const run = (trainStep: (model: Sequential, batch: Batch) => unknown) =>
      Trainer.builder(
        () => mlp(),
        (params) => new SGD(params, { lr: 0.1 }),
        trainStep as never,
      )
        .dataset(regression(16))
        .batchSize(4)
        .numEpochs(1)
        .devices(['cpu'])
        .progress(false)
        .run()
        .join()
        .catch((caught: unknown) => caught);
    const nonScalar = await run((model, batch) => model.forward(batch.at(0)));
    expect(FlodlError.isInstance(nonScalar) && nonScalar.code).toBe('ERR_SHAPE');
    expect((nonScalar as FlodlError).message).toMatch(/must return a scalar loss/);
    expect((nonScalar as FlodlError).got).toBe('shape [4, 2]');
    const notTensor = await run(() => 0.5);
    expect(FlodlError.isInstance(notTensor) && notTensor.code).toBe('ERR_INVALID_ARGUMENT');
    expect((notTensor as FlodlError).got).toBe('number');
  });

  it('leaks no tensors across a run', async () => {
    const data = regression(64);
    const run = async () => {
      const handle = Trainer.builder(
        () => mlp(),
        (params) => new SGD(params, { lr: 0.05 }),
        (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
      )
        .dataset(data)
        .batchSize(8)
        .numEpochs(2)
        .devices(['cpu'])
        .run();
      const state = await handle.join();
      for (const tensor of [...state.params, ...state.buffers]) tensor.dispose();
    };
    expect(RankRuntime).toBeDefined();
    await run();
    // Tensors earlier tests dropped for the garbage-collection safety net are reclaimed first:
    // reclaimed during the runs, they made the count fall (79 to 2 once, in the CUDA tier).
    for (let turn = 0; turn < 2; turn++) {
      globalThis.gc?.();
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    const before = liveTensorCount();
    await run();
    await run();
    expect(liveTensorCount()).toBe(before);
  });
});

describe('RankRuntime plans', () => {
  it("slices each epoch's permutation, chunk by chunk, whatever the order of epochs", () => {
    const data = regression(40);
    const model = mlp();
    const optimizer = new SGD(model.parameters(), { lr: 0.1 });
    const runtime = new RankRuntime({
      model,
      optimizer,
      dataset: data,
      batchSize: 4,
      seed: 9,
      device: 'cpu',
    });
    // Chunks as a streaming cluster hands them out: two epochs open at once, then an older one again.
    const chunks = [
      [0, 0, 8],
      [0, 8, 12],
      [1, 0, 8],
      [0, 20, 8],
      [1, 8, 16],
      [2, 0, 4],
      [0, 28, 12],
      [1, 24, 16],
    ] as const;
    for (const [epoch, offset, size] of chunks) {
      const state = runtime.beginEpoch({ epoch, partitionOffset: offset, partitionSize: size });
      expect(state.picks, `epoch ${epoch} at ${offset}`).toEqual(
        Array.from(epochPermutation(40, 9, epoch).subarray(offset, offset + size)),
      );
      runtime.endEpoch(state);
    }
    runtime.dispose();
    optimizer.dispose();
  });
});
