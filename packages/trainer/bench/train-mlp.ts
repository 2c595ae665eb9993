// `pnpm bench:train`: the same MLP (784-256-256-10, ReLU, Adam lr 1e-3, batch 128) trained
// for a fixed number of steps on Fashion-MNIST by flodl (this DataLoader, @flodl/nn) and by
// PyTorch (bench/train-mlp.py, Debian's python3-torch), with the same thread count, one after
// the other, best of `--rounds`. Prints samples/s of each, the ratio flodl / PyTorch, and
// where a step's time goes on each side (data, forward + loss, backward, optimizer).
//
//   node --import tsx bench/train-mlp.ts [--steps 200] [--warmup 20] [--threads N] [--rounds 5]
import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { crossEntropy } from '@flodl/autograd';
import { Adam } from '@flodl/nn';
import { getNumThreads, liveTensorCount, manualSeed, setNumThreads, tidy } from '@flodl/tensor-native';
import { type Batch, DataLoader, FashionMnist } from '../src/data/index.js';
import { benchArgs } from './cli-args.js';
import { mlp } from './fashion-models.js';

const { values: args } = parseArgs({
  args: benchArgs(),
  options: {
    steps: { type: 'string', default: '200' },
    warmup: { type: 'string', default: '20' },
    threads: { type: 'string', default: String(availableParallelism()) },
    rounds: { type: 'string', default: '5' },
    root: { type: 'string', default: FashionMnist.DEFAULT_ROOT },
  },
});
const steps = Number(args.steps);
const warmup = Number(args.warmup);
const threads = Number(args.threads);
const rounds = Number(args.rounds);
const batchSize = 128;
setNumThreads(threads);

/** Timings of one run: wall and CPU seconds of the timed steps, wall seconds per phase. */
interface Timing {
  steps: number;
  seconds: number;
  cpuSeconds: number;
  phases: { data: number; forward: number; backward: number; optimizer: number };
}

const cpuSecondsNow = () => {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
};

/** Trains `warmup` untimed steps, then times `steps` steps phase by phase. */
function trainFlodl(loader: DataLoader): Timing {
  manualSeed(0);
  const model = mlp();
  const optimizer = new Adam(model.parameters(), { lr: 1e-3 });
  let epoch = 0;
  let iterator = loader.epoch(epoch)[Symbol.iterator]();
  const nextBatch = (): Batch => {
    let result = iterator.next();
    if (result.done) {
      iterator = loader.epoch(++epoch)[Symbol.iterator]();
      result = iterator.next();
    }
    return result.value!;
  };
  const phases = { data: 0, forward: 0, backward: 0, optimizer: 0 };
  let started = 0;
  let cpuStarted = 0;
  for (let step = 0; step < warmup + steps; step++) {
    if (step === warmup) {
      for (const name of Object.keys(phases) as (keyof typeof phases)[]) phases[name] = 0;
      started = performance.now();
      cpuStarted = cpuSecondsNow();
    }
    const t0 = performance.now();
    using batch = nextBatch();
    const t1 = performance.now();
    const [t2, t3, t4] = tidy(() => {
      const loss = crossEntropy(model.forward(batch.get('image')), batch.get('label'));
      loss.item();
      const forwardDone = performance.now();
      optimizer.zeroGrad();
      loss.backward();
      const backwardDone = performance.now();
      optimizer.step();
      return [forwardDone, backwardDone, performance.now()];
    });
    phases.data += (t1 - t0) / 1000;
    phases.forward += (t2 - t1) / 1000;
    phases.backward += (t3 - t2) / 1000;
    phases.optimizer += (t4 - t3) / 1000;
  }
  const timing = {
    steps,
    seconds: (performance.now() - started) / 1000,
    cpuSeconds: cpuSecondsNow() - cpuStarted,
    phases,
  };
  iterator.return?.();
  optimizer.dispose();
  model.dispose();
  return timing;
}

interface TorchTiming {
  torch: string;
  threads: number;
  tensorIndex: Timing;
  dataloader: Timing;
}

function trainTorch(): TorchTiming {
  const script = fileURLToPath(new URL('./train-mlp.py', import.meta.url));
  const result = spawnSync(
    '/usr/bin/python3',
    [
      script,
      '--steps',
      String(steps),
      '--warmup',
      String(warmup),
      '--threads',
      String(threads),
      '--root',
      args.root!,
    ],
    { encoding: 'utf8' },
  );
  if (result.status !== 0) {
    throw new Error(
      `PyTorch side failed (needs /usr/bin/python3 with torch):\n${result.stderr || result.error}`,
    );
  }
  return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as TorchTiming;
}

const rate = (timing: Timing) => (timing.steps * batchSize) / timing.seconds;
const perStep = (seconds: number, timing: Timing) => ((seconds * 1000) / timing.steps).toFixed(2);

const train = new FashionMnist({ root: args.root, split: 'train', normalize: true });
const loader = new DataLoader(train, { batchSize });
console.log(
  `bench:train: MLP 784-256-256-10, batch ${batchSize}, Adam lr 1e-3, ${steps} steps after ${warmup} warm-up, ` +
    `${getNumThreads()} threads, Fashion-MNIST, best of ${rounds} rounds`,
);
let flodl: Timing | null = null;
let torch: TorchTiming | null = null;
for (let round = 0; round < rounds; round++) {
  const ours = trainFlodl(loader);
  const theirs = trainTorch();
  if (flodl === null || ours.seconds < flodl.seconds) flodl = ours;
  if (torch === null || theirs.tensorIndex.seconds < torch.tensorIndex.seconds) torch = theirs;
  console.log(
    `  round ${round + 1}: flodl ${perStep(ours.seconds, ours)} ms/step, PyTorch ${perStep(theirs.tensorIndex.seconds, theirs.tensorIndex)} ms/step`,
  );
}
const reference = torch!.tensorIndex;
const columns: [string, Timing][] = [
  ['flodl (resident loader)', flodl!],
  [`PyTorch ${torch!.torch} (indexing)`, reference],
  ['PyTorch DataLoader', torch!.dataloader],
];
const line = (label: string, cells: string[]) =>
  console.log(`${label.padEnd(22)}${cells.map((cell) => cell.padStart(28)).join('')}`);
console.log('');
line(
  '',
  columns.map(([name]) => name),
);
line(
  'samples/s',
  columns.map(([, timing]) => String(Math.round(rate(timing)))),
);
line(
  'samples per CPU-second',
  columns.map(([, timing]) => String(Math.round((timing.steps * batchSize) / timing.cpuSeconds))),
);
line(
  'ms per step',
  columns.map(([, timing]) => perStep(timing.seconds, timing)),
);
for (const phase of ['data', 'forward', 'backward', 'optimizer'] as const) {
  const label = {
    data: '  data',
    forward: '  forward + loss',
    backward: '  backward',
    optimizer: '  Adam step',
  }[phase];
  line(
    label,
    columns.map(([, timing]) => perStep(timing.phases[phase], timing)),
  );
}
console.log(
  `\nratio flodl / PyTorch (indexing): ${(rate(flodl!) / rate(reference)).toFixed(3)} by wall clock, ` +
    `${(reference.cpuSeconds / flodl!.cpuSeconds).toFixed(3)} by CPU time`,
);
loader.dispose();
train.dispose();
if (liveTensorCount() !== 0) console.log(`warning: ${liveTensorCount()} tensors left alive`);
