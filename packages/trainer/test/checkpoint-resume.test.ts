// Checkpoint bundles and exact resume on one device: a run stopped mid-epoch and resumed from
// its bundle equals the uninterrupted run bit for bit (weights, optimizer, scheduler, dropout's
// generator, the data cursor), and the bundle's model is a plain safetensors state dict.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { mseLoss } from '@flodl/autograd';
import { Adam, Dropout, Linear, ReLU, readSafetensors, Sequential, StepLR } from '@flodl/nn';
import { cuda, type Device, manualSeed, randn, type Tensor, toBytes } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { TensorDataset } from '../src/data/index.js';
import { readCheckpoint, recordScalar, Trainer, type TrainerHandle } from '../src/index.js';
import { temporaryFolder } from './helpers.js';

const folder = temporaryFolder('bundles');

function regression(n: number): TensorDataset {
  manualSeed(3);
  const x = randn([n, 4]);
  const y = x.matmul(randn([4, 2]));
  return new TensorDataset([x, y]);
}

const data = regression(96); // 12 batches of 8 per epoch
const EPOCHS = 3;
const hex = (tensors: Tensor[]) => tensors.map((tensor) => Buffer.from(toBytes(tensor)).toString('hex'));

/** Dropout draws from the CPU generator every step, Adam keeps moments, StepLR decays every 10 steps. */
function builder(epochs = EPOCHS, device: Device = 'cpu') {
  return Trainer.builder(
    () => new Sequential(new Linear(4, 16), new ReLU(), new Dropout(0.25), new Linear(16, 2)),
    (params) => new Adam(params, { lr: 0.01 }),
    (model, batch) => {
      recordScalar('target', batch.at(1).mean().item() as number);
      return mseLoss(model.forward(batch.at(0)), batch.at(1));
    },
  )
    .dataset(data)
    .batchSize(8)
    .numEpochs(epochs)
    .devices([device])
    .scheduler((optimizer) => new StepLR(optimizer, { stepSize: 10, gamma: 0.5 }));
}

/** Runs `configured` to its end; → the final params (hex) and each epoch's average loss. */
async function train(configured: ReturnType<typeof builder>): Promise<{
  params: string[];
  losses: Map<number, number>;
  scalars: Map<number, Record<string, number>>;
}> {
  const losses = new Map<number, number>();
  const scalars = new Map<number, Record<string, number>>();
  const run = await configured
    .metricsFn((metrics) => {
      losses.set(metrics.epoch, metrics.avgLoss);
      scalars.set(metrics.epoch, { ...metrics.scalars });
    })
    .run()
    .join();
  return { params: hex(run.params), losses, scalars };
}

describe('checkpoint bundles, one device', () => {
  it('N steps straight equal N/2 + stop + resume + N/2, bit for bit (managed Trainer)', async () => {
    const straight = await train(builder());
    const stem = join(folder, 'managed');
    let steps = 0;
    const firstLosses = new Map<number, number>();
    const first: TrainerHandle = Trainer.builder(
      () => new Sequential(new Linear(4, 16), new ReLU(), new Dropout(0.25), new Linear(16, 2)),
      (params) => new Adam(params, { lr: 0.01 }),
      (model, batch) => {
        steps += 1;
        if (steps === 17) first.stop(); // mid-epoch 1: batch 5 of 12
        recordScalar('target', batch.at(1).mean().item() as number);
        return mseLoss(model.forward(batch.at(0)), batch.at(1));
      },
    )
      .dataset(data)
      .batchSize(8)
      .numEpochs(EPOCHS)
      .devices(['cpu'])
      .scheduler((optimizer) => new StepLR(optimizer, { stepSize: 10, gamma: 0.5 }))
      .savePath(stem)
      .metricsFn((metrics) => {
        firstLosses.set(metrics.epoch, metrics.avgLoss);
      })
      .run();
    await first.join();
    expect(steps).toBe(17);
    const saved = readCheckpoint(stem);
    expect(saved.meta.reason).toBe('stop');
    expect(saved.meta.cursor).toMatchObject({ epoch: 1, batch: 5 });
    expect(saved.meta.localStep).toBe(17);
    expect(saved.meta.coverage.covered).toEqual([[0, 40]]);
    expect(Object.keys(saved.meta.rng)).toEqual(['cpu']);

    const resumed = await train(builder().resumeFrom(stem));
    expect(resumed.params).toEqual(straight.params);
    // The resumed epoch's metrics count its batches from before the stop too.
    expect(resumed.losses.get(1)).toBe(straight.losses.get(1));
    expect(resumed.losses.get(2)).toBe(straight.losses.get(2));
    // ... and its scalars recorded before the stop (carried in the bundle's cursor).
    expect(saved.meta.cursor.scalars?.target?.count).toBe(5);
    expect(resumed.scalars.get(1)).toEqual(straight.scalars.get(1));
    expect(firstLosses.get(0)).toBe(straight.losses.get(0));
    expect([...resumed.losses.keys()]).toEqual([1, 2]);
  });

  it('writes a PyTorch-readable model, rotates periodic bundles (keepLast) and resumes from the newest', async () => {
    const savePath = join(folder, 'periodic');
    const straight = await train(builder(4));
    await train(builder(2).savePath(savePath).checkpointEvery(1).keepLast(2).checkpointAtEpoch(1));
    // Epoch 1's atEpoch and every bundle share step 12; epoch 2's is step 24.
    const names = readdirSync(folder).filter(
      (name) => name.startsWith('periodic.step-') && name.endsWith('.meta.json'),
    );
    expect(names.sort()).toEqual(['periodic.step-12.meta.json', 'periodic.step-24.meta.json']);
    const final = readCheckpoint(savePath);
    expect(final.stem).toBe(savePath);
    expect(final.meta.reason).toBe('final');
    expect(final.meta.cursor).toMatchObject({ epoch: 2, batch: 0 });
    // The model file: qualified state-dict names, as safetensors.torch.load_file reads them.
    const { tensors, metadata } = readSafetensors(`${savePath}.safetensors`);
    expect(Object.keys(tensors).sort()).toEqual(['0.bias', '0.weight', '3.bias', '3.weight']);
    expect(metadata['flodl.bundle']).toBe(final.meta.bundleId);
    for (const tensor of Object.values(tensors)) tensor.dispose();
    expect(existsSync(`${savePath}.optim.safetensors`)).toBe(true);
    expect(JSON.parse(readFileSync(`${savePath}.scheduler.json`, 'utf8')).state.lastEpoch).toBe(0);

    // Resume from an epoch boundary (the newest periodic bundle), on to 4 epochs.
    const resumed = await train(builder(4).resumeFrom(`${savePath}.step-24`));
    expect(resumed.params).toEqual(straight.params);
    expect([...resumed.losses.keys()]).toEqual([2, 3]);
  });

  it.skipIf(!cuda.isAvailable())(
    'on a CUDA device: resumes from an epoch bundle bit for bit, the device generator included',
    async () => {
      const savePath = join(folder, 'cuda');
      const straight = await train(builder(3, 'cuda:0'));
      await train(builder(2, 'cuda:0').savePath(savePath));
      const saved = readCheckpoint(savePath);
      expect(Object.keys(saved.meta.rng).sort()).toEqual(['cpu', 'cuda:0']);
      const resumed = await train(builder(3, 'cuda:0').resumeFrom(savePath));
      expect(resumed.params).toEqual(straight.params);
    },
  );

  it('requestCheckpoint writes a bundle after the step in flight; without a savePath it is refused', async () => {
    const savePath = join(folder, 'not-yet', 'requested'); // the folder is created
    let steps = 0;
    const handle: TrainerHandle = Trainer.builder(
      () => new Linear(4, 2),
      (params) => new Adam(params, { lr: 0.01 }),
      (model, batch) => {
        steps += 1;
        if (steps === 3) handle.requestCheckpoint();
        return mseLoss(model.forward(batch.at(0)), batch.at(1));
      },
    )
      .dataset(data)
      .batchSize(8)
      .numEpochs(1)
      .devices(['cpu'])
      .savePath(savePath)
      .run();
    await handle.join();
    const requested = readCheckpoint(`${savePath}.step-3`);
    expect(requested.meta).toMatchObject({ reason: 'request', localStep: 3, cursor: { epoch: 0, batch: 3 } });
    const plain = builder(1).run();
    expect(() => plain.requestCheckpoint()).toThrow(/savePath/);
    await plain.join();
  });

  it('refuses contradictory bundle options before anything starts', () => {
    expect(() => builder().checkpointAtEpoch(1).run()).toThrow(/checkpointAtEpoch needs a savePath/);
    expect(() => builder().checkpointEvery(1).run()).toThrow(/savePath or a checkpointFn/);
    expect(() => builder().savePath('x').checkpointAtEpoch(9).run()).toThrow(/checkpointAtEpoch/);
    expect(() => builder().savePath('x').keepLast(0).run()).toThrow(/keepLast/);
  });
});
