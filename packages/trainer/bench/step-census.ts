// `pnpm bench:census`: what one managed single-device step costs over a hand-written one,
// counted rather than timed (a loaded machine moves timings, not counts): the native (addon)
// calls per step, by name. The same MLP, batch and data as `bench:managed` (the Fashion-MNIST
// test split), one thread. Each side runs a short and a long epoch; the per-step figure is
// (long − short) / (the steps between them), so set-up cancels out.
//
//   node --import tsx bench/step-census.ts [--short 20] [--long 70] [--root DIR] [--json out.json]
import { writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { parseArgs } from 'node:util';
import type { BatchDataset } from '../src/data/index.js';
import { benchArgs } from './cli-args.js';

const { values: args } = parseArgs({
  args: benchArgs(),
  options: {
    short: { type: 'string', default: '20' },
    long: { type: 'string', default: '70' },
    root: { type: 'string' },
    json: { type: 'string' },
  },
});

// Count every call into the addon: wrap its functions before the package binds them.
const counts = new Map<string, number>();
const require = createRequire(import.meta.url);
const Module = require('node:module') as { _load: (request: string, ...rest: unknown[]) => unknown };
const load = Module._load;
Module._load = function (request: string, ...rest: unknown[]) {
  const exports = load.call(this, request, ...rest);
  if (!request.endsWith('flodl_tensor_native.node')) return exports;
  const wrapped: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(exports as Record<string, unknown>)) {
    if (typeof value !== 'function' || /^[A-Z]/.test(name)) {
      wrapped[name] = value;
      continue;
    }
    const fn = value as (...a: unknown[]) => unknown;
    wrapped[name] = function (this: unknown, ...a: unknown[]) {
      counts.set(name, (counts.get(name) ?? 0) + 1);
      return fn.apply(this, a);
    };
  }
  return wrapped;
};

const { crossEntropy } = await import('@flodl/autograd');
const { Adam } = await import('@flodl/nn');
const { manualSeed, setNumThreads } = await import('@flodl/tensor-native');
const { DataLoader, FashionMnist } = await import('../src/data/index.js');
const { Trainer } = await import('../src/index.js');
const { mlp } = await import('./fashion-models.js');
const { handWrittenEpoch } = await import('./hand-loop.js');

setNumThreads(1);
const batchSize = 128;
const full = new FashionMnist({
  root: args.root ?? FashionMnist.DEFAULT_ROOT,
  split: 'test',
  normalize: true,
});

function subset(steps: number): BatchDataset {
  return { length: steps * batchSize, names: full.names, getBatch: (indices) => full.getBatch(indices) };
}

function handWritten(steps: number): void {
  manualSeed(42);
  const net = mlp();
  const optimizer = new Adam(net.parameters(), { lr: 1e-3 });
  const loader = new DataLoader(subset(steps), { batchSize, seed: 42, device: 'cpu' });
  handWrittenEpoch(net, optimizer, loader, 0);
  loader.dispose();
  optimizer.dispose();
  net.dispose();
}

async function managed(steps: number): Promise<void> {
  const handle = Trainer.builder(
    () => mlp(),
    (params) => new Adam(params, { lr: 1e-3 }),
    (net, batch) => crossEntropy(net.forward(batch.get('image')), batch.get('label')),
  )
    .dataset(subset(steps))
    .batchSize(batchSize)
    .numEpochs(1)
    .devices(['cpu'])
    .progress(process.env.CENSUS_PROGRESS !== '0')
    .run();
  const state = await handle.join();
  for (const tensor of [...state.params, ...state.buffers]) tensor.dispose();
}

/** Native calls by name of one run of `steps` steps. */
async function census(run: (steps: number) => void | Promise<void>, steps: number) {
  counts.clear();
  await run(steps);
  return new Map(counts);
}

/** Native calls per step: (long − short) / (long − short steps). */
async function perStep(run: (steps: number) => void | Promise<void>) {
  const short = Number(args.short);
  const long = Number(args.long);
  await run(long); // warm-up
  const a = await census(run, short);
  const b = await census(run, long);
  const calls = new Map<string, number>();
  for (const name of new Set([...a.keys(), ...b.keys()])) {
    const value = ((b.get(name) ?? 0) - (a.get(name) ?? 0)) / (long - short);
    if (value !== 0) calls.set(name, value);
  }
  return calls;
}

const hand = await perStep(handWritten);
const man = await perStep(managed);
// `reclaim` is the garbage collector's safety net freeing dropped handles: it follows GC timing, not the step.
const counted = (calls: Map<string, number>) =>
  [...calls.entries()].filter(([name]) => name !== 'reclaim').reduce((sum, [, n]) => sum + n, 0);
const result = {
  nativeCallsPerStep: {
    handWritten: counted(hand),
    managed: counted(man),
    ratio: counted(man) / counted(hand),
  },
  differences: Object.fromEntries(
    [...new Set([...hand.keys(), ...man.keys()])]
      .filter((name) => name !== 'reclaim' && Math.abs((hand.get(name) ?? 0) - (man.get(name) ?? 0)) > 1e-9)
      .map((name) => [name, { handWritten: hand.get(name) ?? 0, managed: man.get(name) ?? 0 }]),
  ),
};
const { handWritten: h, managed: m, ratio } = result.nativeCallsPerStep;
console.log(
  `native calls per step (reclaim aside): hand-written ${h.toFixed(2)}, managed ${m.toFixed(2)}, ratio ${ratio.toFixed(3)}`,
);
for (const [name, both] of Object.entries(result.differences)) {
  console.log(`  ${name}: hand-written ${both.handWritten.toFixed(2)}, managed ${both.managed.toFixed(2)}`);
}
if (args.json) writeFileSync(args.json, `${JSON.stringify(result, null, 2)}\n`);
