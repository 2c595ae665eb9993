// Fashion-MNIST classified by an MLP and a small CNN, trained by a hand-written loop over the
// @flodl/trainer DataLoader on Debian's real data set (apt-get install dataset-fashion-mnist).
//
//   node --import tsx fashion-mnist/main.ts [--model mlp|cnn|both] [--epochs N] [--limit N]
//                                          [--batch-size N] [--lr X] [--threads N] [--root DIR]
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { crossEntropy, noGrad } from '@flodl/autograd';
import { Adam, type Sequential } from '@flodl/nn';
import { getNumThreads, liveTensorCount, manualSeed, setNumThreads, tidy } from '@flodl/tensor-native';
import { createProgress } from '@flodl/trainer';
import { DataLoader, FashionMnist, SubsetSampler } from '@flodl/trainer/data';
import { cnn, mlp } from './models.js';

const { values: args } = parseArgs({
  options: {
    model: { type: 'string', default: 'both' },
    epochs: { type: 'string' },
    limit: { type: 'string' },
    'batch-size': { type: 'string', default: '128' },
    lr: { type: 'string', default: '0.001' },
    threads: { type: 'string', default: String(availableParallelism()) },
    root: { type: 'string', default: FashionMnist.DEFAULT_ROOT },
  },
});
const models = args.model === 'both' ? ['mlp', 'cnn'] : [args.model!];
if (!models.every((name) => name === 'mlp' || name === 'cnn')) {
  console.error(`--model must be mlp, cnn or both, not ${args.model}`);
  process.exit(2);
}
const defaultEpochs: Record<string, number> = { mlp: 5, cnn: 4 };
const batchSize = Number(args['batch-size']);
const learningRate = Number(args.lr);
setNumThreads(Number(args.threads));

const loadStarted = performance.now();
const train = new FashionMnist({ root: args.root, split: 'train', normalize: true });
const test = new FashionMnist({ root: args.root, split: 'test', normalize: true });
const limit = args.limit === undefined ? train.length : Math.min(Number(args.limit), train.length);
console.log(
  `Fashion-MNIST: ${train.length} training and ${test.length} test images loaded in ${((performance.now() - loadStarted) / 1000).toFixed(1)} s` +
    ` (${limit < train.length ? `${limit} samples per epoch, ` : ''}batch ${batchSize}, Adam lr ${learningRate}, ${getNumThreads()} threads)`,
);

// A limit trains on a slice of each epoch's shuffled order: a different subset every epoch.
const trainLoader = new DataLoader(
  train,
  limit < train.length
    ? { batchSize, sampler: new SubsetSampler({ datasetLength: train.length, offset: 0, size: limit }) }
    : { batchSize },
);
const testLoader = new DataLoader(test, { batchSize: 1000, shuffle: false, dropLast: false });

/** Fraction of the test set the model classifies correctly. */
function testAccuracy(model: Sequential): number {
  model.eval();
  let correct = 0;
  noGrad(() => {
    for (using batch of testLoader.epoch(0)) {
      correct += tidy(() => model.forward(batch.get('image')).argmax(1).eq(batch.get('label')).sum().item());
    }
  });
  model.train();
  return correct / test.length;
}

const results: string[] = [];
for (const name of models) {
  manualSeed(42);
  const model = name === 'mlp' ? mlp() : cnn();
  const optimizer = new Adam(model.parameters(), { lr: learningRate });
  const epochs = args.epochs === undefined ? defaultEpochs[name]! : Number(args.epochs);
  console.log(`\n${name.toUpperCase()}, ${epochs} epoch${epochs === 1 ? '' : 's'}:\n${model}`);
  const started = performance.now();
  let accuracy = 0;
  // Epoch, batch, samples/s, smoothed loss and ETA: redrawn in place on a terminal, a plain line
  // every few seconds elsewhere (a log file, CI).
  const progress = createProgress();
  progress.start({ epochs });
  for (let epoch = 0; epoch < epochs; epoch++) {
    const epochStarted = performance.now();
    let lossSum = 0;
    let steps = 0;
    for (using batch of trainLoader.epoch(epoch)) {
      const loss = tidy(() => {
        const loss = crossEntropy(model.forward(batch.get('image')), batch.get('label'));
        optimizer.zeroGrad();
        loss.backward();
        optimizer.step();
        return loss.item() as number;
      });
      lossSum += loss;
      steps++;
      const seconds = (performance.now() - epochStarted) / 1000;
      progress.step({
        epoch,
        batch: steps,
        batches: trainLoader.length,
        samplesPerSec: (steps * batchSize) / seconds,
        loss,
      });
    }
    const trainSeconds = (performance.now() - epochStarted) / 1000;
    progress.epochEnd({
      epoch,
      loss: lossSum / steps,
      durationMs: trainSeconds * 1000,
      samplesPerSec: trainLoader.samplesPerEpoch / trainSeconds,
    });
    accuracy = testAccuracy(model);
    progress.eval({ epoch, metric: accuracy, name: 'test accuracy' });
  }
  progress.finish();
  const seconds = (performance.now() - started) / 1000;
  results.push(
    `${name.toUpperCase()}: test accuracy ${(accuracy * 100).toFixed(2)}% after ${epochs} epoch${epochs === 1 ? '' : 's'} in ${seconds.toFixed(1)} s`,
  );
  optimizer.dispose();
  model.dispose();
}

console.log(`\n${results.join('\n')}`);
trainLoader.dispose();
testLoader.dispose();
train.dispose();
test.dispose();
console.log(`live tensors left: ${liveTensorCount()}`);
