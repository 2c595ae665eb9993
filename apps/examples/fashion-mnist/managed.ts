// Fashion-MNIST with the managed Trainer: the framework owns the loop (backward, the optimizer
// step, averaging); on several devices this process becomes the launcher of one rank per device.
//
//   node --import tsx fashion-mnist/managed.ts [--nproc N] [--mode MODE] [--model mlp|cnn]
//                                             [--epochs N] [--limit N] [--batch-size N] [--lr X]
import { parseArgs } from 'node:util';
import { crossEntropy } from '@flodl/autograd';
import type { LaunchMode } from '@flodl/distributed';
import { Adam, type Sequential } from '@flodl/nn';
import { cuda, type Device, setNumThreads, tidy } from '@flodl/tensor-native';
import { type BatchDataset, FashionMnist, Trainer } from '@flodl/trainer';
import { cnn, mlp } from './models.js';

const { values: args } = parseArgs({
  options: {
    nproc: { type: 'string', default: '1' },
    mode: { type: 'string' },
    model: { type: 'string', default: 'mlp' },
    epochs: { type: 'string', default: '3' },
    limit: { type: 'string' },
    'batch-size': { type: 'string', default: '128' },
    lr: { type: 'string', default: '0.001' },
  },
});
const nproc = Number(args.nproc);
// One CPU thread per rank when several ranks share this machine's cores.
if (nproc > 1 && !cuda.isAvailable()) setNumThreads(1);
const devices: Device[] = Array.from({ length: nproc }, (_, index) =>
  cuda.isAvailable() && cuda.deviceCount() >= nproc ? (`cuda:${index}` as Device) : 'cpu',
);

const train = new FashionMnist({ split: 'train', normalize: true });
const test = new FashionMnist({ split: 'test', normalize: true });
const limit = args.limit === undefined ? train.length : Math.min(Number(args.limit), train.length);
// --limit trains on the first N images (the same ones in every process).
const data: BatchDataset = {
  length: limit,
  names: train.names,
  getBatch: (indices) => train.getBatch(indices),
};

/** Fraction of the test set the model classifies correctly (the framework runs it in eval mode, without grad). */
function accuracy(model: Sequential): number {
  let correct = 0;
  for (let start = 0; start < test.length; start += 1000) {
    const indices = Array.from({ length: Math.min(1000, test.length - start) }, (_, index) => start + index);
    correct += tidy(() => {
      const [images, labels] = test.getBatch(indices);
      return model.forward(images!).argmax(1).eq(labels!).sum().item() as number;
    });
  }
  return correct / test.length;
}

const builder = Trainer.builder(
  (device) => (args.model === 'cnn' ? cnn() : mlp()).to(device),
  (params) => new Adam(params, { lr: Number(args.lr) }),
  (model, batch) => crossEntropy(model.forward(batch.get('image')), batch.get('label')),
)
  .dataset(data)
  .batchSize(Number(args['batch-size']))
  .numEpochs(Number(args.epochs))
  .devices(devices)
  .evalFn((model) => accuracy(model));
if (args.mode) builder.mode(args.mode as LaunchMode);

const started = performance.now();
const handle = builder.run();
// Rank processes run this script too: the launching process reports.
if (handle.isRank) await handle.join();
console.log(
  `${args.model} on ${handle.worldSize} ${handle.worldSize === 1 ? 'device' : 'ranks'}: ${devices.join(', ')}`,
);
for await (const epoch of handle.metrics()) {
  const samples = epoch.perRankSamples.reduce((sum, count) => sum + count, 0);
  const evals = handle.pollEval().map(([, metric]) => `, test accuracy ${(metric * 100).toFixed(1)}%`);
  const shares = epoch.perRankSamples.map((count) => `${((count / samples) * 100).toFixed(0)}%`).join('/');
  console.log(
    `epoch ${epoch.epoch + 1}: loss ${epoch.avgLoss.toFixed(4)}, ${samples} samples in ${(epoch.epochMs / 1000).toFixed(1)} s` +
      `${handle.worldSize > 1 ? ` (shares ${shares})` : ''}${evals.join('')}`,
  );
}
const state = await handle.join();
for (const [epoch, metric] of handle.pollEval())
  console.log(`final eval (epoch ${epoch}): ${(metric * 100).toFixed(1)}%`);
console.log(
  `trained ${state.params.length} tensors in ${((performance.now() - started) / 1000).toFixed(1)} s`,
);
train.dispose();
test.dispose();
