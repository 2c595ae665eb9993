// `pnpm bench:managed`: what the managed Trainer costs over a hand-written loop on one device.
// The same MLP (784-256-256-10, ReLU, Adam lr 1e-3, batch 128) trains on the same Fashion-MNIST
// samples in the same order for `--epochs` epochs, once by a hand-written loop over the
// DataLoader (tidy, zeroGrad, backward, step) and once by `Trainer.builder(...).run()`,
// alternating, `--rounds` times. The managed side is timed from run() to join(): its set-up
// (the model, the loader, the monitor) and the returned copies count against it.
// Prints the samples/s of each (median and best), the ratio managed / hand-written, and JSON.
//
//   node --import tsx bench/managed.ts [--samples 12800] [--epochs 3] [--rounds 5] [--threads N] [--device cpu|cuda]
//     [--root DIR] [--split train|test] [--json out.json]
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import { crossEntropy } from '@flodl/autograd';
import { Adam } from '@flodl/nn';
import { cuda, type Device, manualSeed, setNumThreads } from '@flodl/tensor-native';
import { type BatchDataset, DataLoader, FashionMnist } from '../src/data/index.js';
import { Trainer } from '../src/index.js';
import { benchArgs } from './cli-args.js';
import { mlp } from './fashion-models.js';
import { handWrittenEpoch } from './hand-loop.js';

const { values: args } = parseArgs({
  args: benchArgs(),
  options: {
    samples: { type: 'string', default: '12800' },
    rounds: { type: 'string', default: '5' },
    epochs: { type: 'string', default: '3' },
    threads: { type: 'string', default: String(availableParallelism()) },
    device: { type: 'string', default: 'cpu' },
    json: { type: 'string' },
    root: { type: 'string', default: FashionMnist.DEFAULT_ROOT },
    split: { type: 'string', default: 'train' },
  },
});
const batchSize = 128;
if (args.device !== 'cpu' && args.device !== 'cuda') {
  console.error(`--device must be cpu or cuda, got ${args.device}`);
  process.exit(2);
}
if (args.device === 'cuda' && !cuda.isAvailable()) {
  console.error('--device cuda: no CUDA device is visible');
  process.exit(2);
}
const device: Device = args.device;
const rounds = Number(args.rounds);
const epochs = Number(args.epochs);
if (!(Number.isInteger(epochs) && epochs >= 1)) {
  console.error(`--epochs must be an integer >= 1, got ${args.epochs}`);
  process.exit(2);
}
setNumThreads(Number(args.threads));
if (args.split !== 'train' && args.split !== 'test') {
  console.error(`--split must be train or test, got ${args.split}`);
  process.exit(2);
}
const train = new FashionMnist({ root: args.root, split: args.split, normalize: true });
const samples = Math.min(Number(args.samples), train.length);
const data: BatchDataset = {
  length: samples,
  names: train.names,
  getBatch: (indices) => train.getBatch(indices),
};
const model = mlp;

/** `epochs` epochs by hand; samples per second. */
function handWritten(): number {
  manualSeed(42);
  const net = model().to(device);
  const optimizer = new Adam(net.parameters(), { lr: 1e-3 });
  const loader = new DataLoader(data, { batchSize, seed: 42, device });
  const started = performance.now();
  let trained = 0;
  for (let epoch = 0; epoch < epochs; epoch++)
    trained += batchSize * handWrittenEpoch(net, optimizer, loader, epoch);
  const rate = trained / ((performance.now() - started) / 1000);
  loader.dispose();
  optimizer.dispose();
  net.dispose();
  return rate;
}

/** `epochs` epochs by the managed Trainer; samples per second (from the start of run() to join()). */
async function managed(): Promise<number> {
  const started = performance.now();
  const handle = Trainer.builder(
    () => model(),
    (params) => new Adam(params, { lr: 1e-3 }),
    (net, batch) => crossEntropy(net.forward(batch.get('image')), batch.get('label')),
  )
    .dataset(data)
    .batchSize(batchSize)
    .numEpochs(epochs)
    .devices([device])
    .run();
  const state = await handle.join();
  const rate =
    (epochs * Math.floor(samples / batchSize) * batchSize) / ((performance.now() - started) / 1000);
  for (const tensor of state.params) tensor.dispose();
  return rate;
}

handWritten(); // warm-up: page in the data and the kernels
await managed();
const hand: number[] = [];
const man: number[] = [];
for (let round = 0; round < rounds; round++) {
  // Alternate which side goes first, so neither always runs on a warmer machine.
  if (round % 2 === 0) {
    hand.push(handWritten());
    man.push(await managed());
  } else {
    man.push(await managed());
    hand.push(handWritten());
  }
}
const median = (values: number[]) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;
const result = {
  machine: `${availableParallelism()} cores, ${args.threads} threads, ${device}`,
  samples,
  epochs,
  rounds,
  handWritten: { median: median(hand), best: Math.max(...hand) },
  managed: { median: median(man), best: Math.max(...man) },
  ratio: { median: median(man) / median(hand), best: Math.max(...man) / Math.max(...hand) },
};
console.log(`samples/s over ${epochs} epochs of ${samples} samples, ${rounds} rounds (median, best):`);
console.log(
  `  hand-written loop  ${result.handWritten.median.toFixed(0)}  ${result.handWritten.best.toFixed(0)}`,
);
console.log(`  managed Trainer    ${result.managed.median.toFixed(0)}  ${result.managed.best.toFixed(0)}`);
console.log(
  `  ratio managed / hand-written: ${result.ratio.median.toFixed(3)} (median), ${result.ratio.best.toFixed(3)} (best)`,
);
if (args.json) writeFileSync(args.json, `${JSON.stringify(result, null, 2)}\n`);
train.dispose();
