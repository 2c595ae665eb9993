#!/usr/bin/env node
// `pnpm bench:kernels`: what the GPU does in one training step of bench:train's models, on each
// side. Both sides (flodl: bench/flodl-side.mjs; PyTorch eager: bench/train.py, each at its
// Adam default) train the same model in their own process under a CUPTI counter
// (bench/kernel-census.cc, built here with g++, loaded by the CUDA driver through
// CUDA_INJECTION64_PATH), once for `--steps` and once for three times as many steps; the
// difference of the two tallies over the difference of the steps is one step's kernels,
// memcpys and memsets, with their summed GPU time (set-up and warm-up cancel out). Uncounted runs
// of each side then give the wall time of a step, so the report says how much of a step the GPU
// is busy: a step whose GPU time is a small part of its wall time is bound by the host (the
// launches and what precedes them), not by the kernels.
//
//   node packages/trainer/bench/kernels.mjs [--model NAME[,NAME...]] [--steps N] [--rounds N]
//                                           [--python PATH] [--json FILE]
//
// Needs CUDA, g++ and CUPTI (found under $CUPTI_HOME, $CUDA_HOME or /usr/local/cuda*); without
// CUDA it says so and exits 0. Runs on the GPU machine as `gpu-run.sh kernels`.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cuda } from '@flodl/tensor-native';
import { trainFlodl } from './flodl-side.mjs';
import { MODELS } from './models.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const WARMUP = 20;

const USAGE = `usage: pnpm bench:kernels [-- options]   (or: node packages/trainer/bench/kernels.mjs [options])
  --model NAME[,NAME...]  ${MODELS.map((spec) => spec.name).join('|')}; default cnn-small,lstm
  --steps N               counted steps of the shorter counted run (the longer has 3N); default 100
  --rounds N              uncounted timing runs per side (the median is kept); default 3
  --timed N               steps of each uncounted run; default 1000
  --python PATH           the PyTorch interpreter; default $PYTHON, python3, then /usr/bin/python3
  --json FILE             also write the results (every name's count and time per step) as JSON`;

function fail(message) {
  console.error(`bench:kernels: ${message}`);
  process.exit(1);
}

/** A positive integer option, or `fallback` when absent. */
function countOption(value, name, fallback) {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (!Number.isSafeInteger(number) || number < 1) fail(`--${name} must be an integer >= 1, got ${value}`);
  return number;
}

/** Where a CUPTI with headers and a library is, or null. */
function findCupti() {
  const roots = [
    process.env.CUPTI_HOME,
    process.env.CUDA_HOME && join(process.env.CUDA_HOME, 'extras', 'CUPTI'),
  ];
  for (const base of ['/usr/local']) {
    if (!existsSync(base)) continue;
    for (const name of readdirSync(base)
      .filter((entry) => entry.startsWith('cuda'))
      .sort()
      .reverse()) {
      roots.push(
        join(base, name, 'extras', 'CUPTI'),
        join(base, name, 'targets', `${process.arch === 'arm64' ? 'sbsa' : 'x86_64'}-linux`),
        join(base, name),
      );
    }
  }
  for (const root of roots.filter(Boolean)) {
    const include = join(root, 'include');
    if (!existsSync(join(include, 'cupti.h'))) continue;
    for (const libDir of ['lib64', 'lib']) {
      const dir = join(root, libDir);
      if (!existsSync(dir)) continue;
      const library = readdirSync(dir).find((entry) => /^libcupti\.so(\.|$)/.test(entry));
      if (library !== undefined) return { include, library: join(dir, library) };
    }
  }
  return null;
}

/** Builds the counter into `dir`; returns its path. */
function buildCounter(cupti, dir) {
  const header = readFileSync(join(cupti.include, 'cupti_activity.h'), 'utf8');
  const versions = [...header.matchAll(/\bCUpti_ActivityKernel(\d+)\b/g)].map((match) => Number(match[1]));
  if (versions.length === 0) fail(`no CUpti_ActivityKernel record in ${cupti.include}/cupti_activity.h`);
  const record = `CUpti_ActivityKernel${Math.max(...versions)}`;
  const output = join(dir, 'libkernel-census.so');
  const build = spawnSync(
    'g++',
    [
      '-O2',
      '-shared',
      '-fPIC',
      '-std=c++17',
      `-DKERNEL_RECORD=${record}`,
      `-I${cupti.include}`,
      join(here, 'kernel-census.cc'),
      '-o',
      output,
      cupti.library,
      `-Wl,-rpath,${dirname(cupti.library)}`,
    ],
    { encoding: 'utf8' },
  );
  if (build.status !== 0) fail(`building the counter failed:\n${build.stderr || build.error}`);
  return { path: output, record };
}

/** The interpreter of the PyTorch side: the first candidate that imports torch. */
function findPython(explicit) {
  const candidates = explicit
    ? [explicit]
    : [...new Set([process.env.PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean))];
  for (const python of candidates) {
    if (spawnSync(python, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0) return python;
  }
  fail(`no interpreter with torch among ${candidates.join(', ')}`);
}

/** Runs a child to its end; resolves with its last stdout line parsed as JSON. */
function runChild(command, args, env, input) {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, ...env },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      out += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const last = out.trim().split('\n').pop();
      if (code !== 0 || !last) reject(new Error(`${command} ${args.join(' ')} exited with ${code}`));
      else resolveRun(JSON.parse(last));
    });
    child.stdin.end(input ?? '');
  });
}

/** One training run of `side` in a fresh process; `census` names the tally file prefix when counted. */
function trainSide(side, spec, steps, python, census) {
  const env = census ? { CUDA_INJECTION64_PATH: census.library, FLODL_KERNEL_CENSUS: census.prefix } : {};
  if (side === 'flodl') {
    return runChild(
      process.execPath,
      ['--expose-gc', fileURLToPath(import.meta.url), '--child', spec.name, String(steps)],
      env,
    );
  }
  const request = {
    name: spec.name,
    batch: spec.batch,
    inputShape: spec.inputShape,
    classes: spec.classes,
    steps,
    warmup: WARMUP,
  };
  return runChild(
    python,
    [join(here, 'train.py'), '--device', 'cuda', '--threads', '1'],
    env,
    `${JSON.stringify(request)}\n`,
  );
}

/** The tally a counted process left under `prefix`, by name. */
function readTally(prefix) {
  const dir = dirname(prefix);
  const file = readdirSync(dir).find((entry) => entry.startsWith(`${prefix.slice(dir.length + 1)}.`));
  if (file === undefined) fail(`the counter wrote no tally for ${prefix} (is CUPTI usable here?)`);
  const tally = new Map();
  for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
    if (line === '') continue;
    const [count, nanoseconds, ...name] = line.split('\t');
    tally.set(name.join('\t'), { count: Number(count), nanoseconds: Number(nanoseconds) });
  }
  return tally;
}

/** Per-step counts and GPU time: the longer run's tally less the shorter's, over the steps between. */
function perStep(short, long, steps) {
  const rows = [];
  for (const name of new Set([...short.keys(), ...long.keys()])) {
    const a = short.get(name) ?? { count: 0, nanoseconds: 0 };
    const b = long.get(name) ?? { count: 0, nanoseconds: 0 };
    const count = (b.count - a.count) / steps;
    if (count > 0) rows.push({ name, count, microseconds: (b.nanoseconds - a.nanoseconds) / steps / 1000 });
  }
  return rows.sort((x, y) => y.microseconds - x.microseconds);
}

/** A kernel's name without its mangling's noise, short enough for a table. */
function shortName(name) {
  return name
    .replace(/^kernel /, '')
    .replace(/_GLOBAL__N__[0-9a-f]+_\d+_/g, '')
    .slice(0, 90);
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function child(name, stepsText) {
  const spec = MODELS.find((candidate) => candidate.name === name);
  const result = trainFlodl(spec, { steps: Number(stepsText), warmup: WARMUP }, 'cuda', 'defaults');
  console.log(JSON.stringify(result));
}

async function main() {
  const { values: args } = parseArgs({
    options: {
      model: { type: 'string', default: 'cnn-small,lstm' },
      steps: { type: 'string' },
      rounds: { type: 'string' },
      timed: { type: 'string' },
      python: { type: 'string' },
      json: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (args.help) {
    console.log(USAGE);
    return;
  }
  const models = args.model
    .split(',')
    .map((name) => MODELS.find((spec) => spec.name === name) ?? fail(`unknown --model ${name}`));
  const steps = countOption(args.steps, 'steps', 100);
  const rounds = countOption(args.rounds, 'rounds', 3);
  const timed = countOption(args.timed, 'timed', 1000);
  if (!cuda.isAvailable()) {
    console.log('bench:kernels: skipped, no CUDA device (it counts what the GPU runs per step)');
    return;
  }
  const cupti = findCupti();
  if (cupti === null)
    fail('no CUPTI found (set CUPTI_HOME to a folder with include/cupti.h and lib64/libcupti.so)');
  const python = findPython(args.python);
  const dir = mkdtempSync(join(tmpdir(), 'flodl-kernels-'));
  try {
    const counter = buildCounter(cupti, dir);
    console.log(
      `bench:kernels: ${cuda.deviceName()}, CUPTI ${cupti.library} (${counter.record}), PyTorch from ${python}`,
    );
    const results = [];
    for (const spec of models) {
      const sides = {};
      for (const side of ['flodl', 'pytorch']) {
        const tallies = [];
        for (const count of [steps, 3 * steps]) {
          const prefix = join(dir, `${side}-${spec.name}-${count}`);
          await trainSide(side, spec, count, python, { library: counter.path, prefix });
          tallies.push(readTally(prefix));
        }
        sides[side] = { rows: perStep(tallies[0], tallies[1], 2 * steps), wall: [] };
      }
      // Uncounted runs, the sides alternating, for the wall time of a step.
      for (let round = 0; round < rounds; round++) {
        for (const side of round % 2 === 0 ? ['flodl', 'pytorch'] : ['pytorch', 'flodl']) {
          const run = await trainSide(side, spec, timed, python, null);
          sides[side].wall.push((run.seconds / timed) * 1e6);
        }
      }
      results.push({ model: spec.name, batch: spec.batch, sides });
    }
    report(results, steps, timed);
    if (args.json !== undefined) {
      const file = resolve(process.env.INIT_CWD ?? process.cwd(), args.json);
      writeFileSync(
        file,
        `${JSON.stringify({ date: new Date().toISOString(), device: cuda.deviceName(), steps, results }, null, 2)}\n`,
      );
      console.log(`wrote ${file}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function report(results, steps, timed) {
  console.log(
    `\nper step (tallies of ${steps} and ${3 * steps} steps after ${WARMUP} warm-up, differenced); wall: median of uncounted runs of ${timed} steps\n`,
  );
  console.log('| model | side | kernels | memcpy + memset | GPU µs | wall µs | GPU busy |');
  console.log('| ----- | ---- | ------: | --------------: | -----: | ------: | -------: |');
  for (const { model, sides } of results) {
    for (const [side, { rows, wall }] of Object.entries(sides)) {
      const kernels = rows.filter((row) => row.name.startsWith('kernel '));
      const others = rows.filter((row) => !row.name.startsWith('kernel '));
      const gpu = rows.reduce((sum, row) => sum + row.microseconds, 0);
      const wallStep = median(wall);
      const sum = (list) => list.reduce((total, row) => total + row.count, 0);
      console.log(
        `| ${model} | ${side} | ${sum(kernels).toFixed(1)} | ${sum(others).toFixed(1)} | ${gpu.toFixed(0)} | ${wallStep.toFixed(0)} | ${((100 * gpu) / wallStep).toFixed(0)}% |`,
      );
    }
  }
  for (const { model, sides } of results) {
    const counts = (side) => new Map(sides[side].rows.map((row) => [row.name, row.count]));
    const ours = counts('flodl');
    const theirs = counts('pytorch');
    const differing = [...new Set([...ours.keys(), ...theirs.keys()])].filter(
      (name) => (ours.get(name) ?? 0) !== (theirs.get(name) ?? 0),
    );
    console.log(
      `\n${model}: ${differing.length === 0 ? 'the same kernels on both sides' : 'launched per step by one side more than the other (flodl / PyTorch):'}`,
    );
    for (const name of differing)
      console.log(`  ${ours.get(name) ?? 0} / ${theirs.get(name) ?? 0}  ${shortName(name)}`);
  }
}

if (process.argv[2] === '--child') await child(process.argv[3], process.argv[4]);
else await main();
