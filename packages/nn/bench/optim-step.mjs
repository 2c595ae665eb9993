#!/usr/bin/env node
// `pnpm bench:optim`: the time of one optimizer.step() for SGD (momentum 0.9), Adam, RMSprop,
// Adagrad, NAdam and RAdam, each with its per-parameter update (`foreach: false`) and its one-call-per-group one
// (`foreach: true`), on the parameter shapes of a small MLP with fixed gradients, and the same
// with PyTorch's torch.optim (foreach=False / True) from python3 in the same run. Both sides take
// the best of --rounds rounds of --steps steps after --warmup untimed ones; the two modes of a
// side take turns within each round. Plain JavaScript so it runs where only node and the built
// dist/ folders exist:
//
//   node packages/nn/bench/optim-step.mjs [--model mlp64|mlp] [--steps 2000] [--warmup 200]
//       [--rounds 7] [--threads 1] [--python PATH] [--json FILE]
//
// The PyTorch interpreter: --python, else $PYTHON, python3, then /usr/bin/python3 (the first with torch).
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Adagrad, Adam, NAdam, RAdam, RMSprop, SGD } from '@flodl/nn';
import { buildInfo, keep, manualSeed, randn, setNumThreads, tidy } from '@flodl/tensor-native';

/** Weight and bias shapes of the MLPs bench:train trains (784 → hidden → hidden → 10). */
const MODELS = { mlp64: 64, mlp: 256 };

const OPTIMIZERS = {
  SGD: (params, foreach) => new SGD(params, { lr: 0.01, momentum: 0.9, foreach }),
  Adam: (params, foreach) => new Adam(params, { lr: 1e-3, foreach }),
  RMSprop: (params, foreach) => new RMSprop(params, { lr: 1e-3, foreach }),
  Adagrad: (params, foreach) => new Adagrad(params, { lr: 1e-2, foreach }),
  NAdam: (params, foreach) => new NAdam(params, { lr: 2e-3, foreach }),
  RAdam: (params, foreach) => new RAdam(params, { lr: 1e-3, foreach }),
};

function fail(message) {
  console.error(`bench:optim: ${message}`);
  process.exit(2);
}

const { values: args } = parseArgs({
  args: process.argv.slice(2).filter((arg) => arg !== '--'),
  options: {
    model: { type: 'string', default: 'mlp64' },
    steps: { type: 'string', default: '2000' },
    warmup: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '7' },
    threads: { type: 'string', default: '1' },
    python: { type: 'string' },
    json: { type: 'string' },
  },
});

function count(name, min) {
  const value = Number(args[name]);
  if (!(Number.isInteger(value) && value >= min))
    fail(`--${name} must be an integer >= ${min}, got ${args[name]}`);
  return value;
}

const hidden = MODELS[args.model];
if (hidden === undefined) fail(`--model must be ${Object.keys(MODELS).join(' or ')}, got ${args.model}`);
const settings = {
  shapes: [[hidden, 784], [hidden], [hidden, hidden], [hidden], [10, hidden], [10]],
  steps: count('steps', 1),
  warmup: count('warmup', 0),
  rounds: count('rounds', 1),
  threads: count('threads', 1),
  optimizers: Object.keys(OPTIMIZERS),
};
setNumThreads(settings.threads);

/** µs per step of `name` in one mode: a fresh optimizer, fixed gradients. */
function timed(name, foreach) {
  manualSeed(0);
  const params = settings.shapes.map((shape) => keep(tidy(() => randn(shape).requiresGrad_())));
  for (const param of params) tidy(() => param.setGrad(randn(param.shape).mul(1e-3)));
  const optimizer = OPTIMIZERS[name](params, foreach);
  for (let step = 0; step < settings.warmup; step++) optimizer.step();
  const started = performance.now();
  for (let step = 0; step < settings.steps; step++) optimizer.step();
  const us = ((performance.now() - started) / settings.steps) * 1000;
  optimizer.dispose();
  for (const param of params) param.dispose();
  return us;
}

const flodl = new Map();
for (let round = 0; round < settings.rounds; round++) {
  for (const name of settings.optimizers) {
    // The modes take turns, in an order that changes by round.
    const modes = round % 2 === 0 ? ['single', 'foreach'] : ['foreach', 'single'];
    for (const mode of modes) {
      const key = `${name} ${mode}`;
      flodl.set(key, Math.min(flodl.get(key) ?? Number.POSITIVE_INFINITY, timed(name, mode === 'foreach')));
    }
  }
}

const script = fileURLToPath(new URL('./optim_step.py', import.meta.url));
const pythons = args.python
  ? [args.python]
  : [process.env.PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean);
let pytorch;
let failure = `no interpreter with torch among ${pythons.join(', ')}: the PyTorch columns are left out`;
for (const interpreter of pythons) {
  const python = spawnSync(interpreter, [script, JSON.stringify(settings)], { encoding: 'utf8' });
  if (python.status === 0) {
    pytorch = JSON.parse(python.stdout.trim().split('\n').at(-1));
    break;
  }
  if (python.status !== 3 && python.error?.code !== 'ENOENT') {
    failure = `the PyTorch side failed in ${interpreter} (${python.error?.message ?? `exit ${python.status}`}): ${python.stderr.trim()}`;
    break;
  }
}
if (!pytorch) console.log(failure);
const torchUs = (name, mode) => pytorch?.rows.find((row) => row.optimizer === name && row.mode === mode)?.us;

const info = buildInfo();
console.log(
  `bench:optim: optimizer.step() on ${args.model}'s ${settings.shapes.length} parameters, ` +
    `${settings.threads} thread(s), best of ${settings.rounds} rounds of ${settings.steps} steps; ` +
    `flodl on libtorch ${info.torchVersion}${pytorch ? `, PyTorch ${pytorch.torch}` : ''}`,
);
const header = ['optimizer', 'flodl single µs', 'flodl foreach µs', 'single / foreach'];
if (pytorch)
  header.push(
    'PyTorch single µs',
    'PyTorch foreach µs',
    'single / foreach',
    'flodl foreach / PyTorch single',
  );
const rows = settings.optimizers.map((name) => {
  const single = flodl.get(`${name} single`);
  const foreach = flodl.get(`${name} foreach`);
  const row = [name, single.toFixed(1), foreach.toFixed(1), (single / foreach).toFixed(2)];
  if (pytorch) {
    const torchSingle = torchUs(name, 'single');
    const torchForeach = torchUs(name, 'foreach');
    row.push(torchSingle.toFixed(1), torchForeach.toFixed(1), (torchSingle / torchForeach).toFixed(2));
    row.push((torchSingle / foreach).toFixed(2));
  }
  return row;
});
const widths = header.map((cell, i) => Math.max(cell.length, ...rows.map((row) => row[i].length)));
for (const row of [header, ...rows])
  console.log(row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  '));
console.log('single / foreach: above 1 means the one-call-per-group update is faster');
if (args.json)
  writeFileSync(
    args.json,
    `${JSON.stringify({ settings, flodl: Object.fromEntries(flodl), pytorch: pytorch ?? null }, null, 2)}\n`,
  );
