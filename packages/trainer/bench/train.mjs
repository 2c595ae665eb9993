#!/usr/bin/env node
// `pnpm bench:train`: trains the same models (bench/models.mjs: an MLP, a CNN, an LSTM, a
// transformer encoder) with flodl and with PyTorch eager (bench/train.py, run by python3 as a
// worker), on synthetic data resident on the device, with Adam (lr 1e-3) for a fixed number
// of steps, the two sides taking turns model by model, and prints samples/s of each side and
// the ratio flodl / PyTorch (higher is better). With several --adam modes each model trains
// with each on both sides in the same run (`pnpm bench:foreach`: per-parameter against
// multi-tensor Adam). Plain JavaScript so it runs where only node and the built dist/ folders
// exist:
//
//   node packages/trainer/bench/train.mjs [--device cpu|cuda] [--model mlp|cnn|lstm|transformer|all] ...
//
// The Fashion-MNIST MLP with this package's DataLoader is bench/train-mlp.ts (`bench:train-mlp`).
import { readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  backends,
  buildInfo,
  cuda,
  getNumThreads,
  liveTensorCount,
  setNumThreads,
} from '@flodl/tensor-native';
import { trainFlodl, trainFlodlGraph } from './flodl-side.mjs';
import { MODELS } from './models.mjs';
import { PytorchWorker } from './pytorch-side.mjs';
import { formatRate, printReport } from './train-report.mjs';

const ADAM_MODES = ['single', 'foreach', 'fused', 'defaults'];

const USAGE = `usage: pnpm bench:train [-- options]   (or: node packages/trainer/bench/train.mjs [options])
  --device cpu|cuda          default cpu
  --model NAME|all           ${MODELS.map((spec) => spec.name).join('|')}|all, or a comma list; default all
  --steps N                  timed steps per model (default: per model and device)
  --warmup N                 untimed steps before them, at least 1 (default: per model and device)
  --rounds N                 rounds of both sides, best kept; default 1 on cpu, 3 on cuda
  --threads N                intra-op CPU threads of both sides; default ${availableParallelism()}
  --adam MODE[,MODE...]      how Adam updates, on both sides; several: each in turn
                             defaults: each library's own default (default; on cuda flodl
                               takes the fused kernel, PyTorch the foreach multi-tensor step;
                               on the cpu flodl takes the foreach step and PyTorch keeps the
                               single-tensor one);
                             single: the single-tensor update;
                             foreach: the multi-tensor (foreach) update;
                             fused: libtorch's fused CUDA kernel (cuda only)
  --cuda-graph               also train each model with its whole step captured into a CUDA
                               graph (CapturedStep, fused Adam): the rows marked graph, against
                               PyTorch eager with its defaults (cuda only)
  --python PATH              the PyTorch interpreter; default $PYTHON, python3, then /usr/bin/python3
  --json FILE                also write the results as JSON`;

/** Prints `message` (and the usage when asked) and exits non-zero. */
function fail(message, showUsage = false) {
  console.error(`bench:train: ${message}`);
  if (showUsage) console.error(USAGE);
  process.exit(1);
}

/** A positive integer option, or `fallback` when absent. */
function countOption(args, name, fallback, minimum = 1) {
  if (args[name] === undefined) return fallback;
  const value = Number(args[name]);
  if (!Number.isSafeInteger(value) || value < minimum) {
    fail(`--${name} must be an integer >= ${minimum}, got ${JSON.stringify(args[name])}`, true);
  }
  return value;
}

function readOptions() {
  // pnpm forwards a literal `--` before the script's arguments (after the script's own, as
  // bench:foreach's --adam); parseArgs would stop there.
  const given = process.argv.slice(2);
  const argv = given.filter((argument, index) => !(argument === '--' && index === given.indexOf('--')));
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        device: { type: 'string', default: 'cpu' },
        model: { type: 'string', default: 'all' },
        steps: { type: 'string' },
        warmup: { type: 'string' },
        rounds: { type: 'string' },
        threads: { type: 'string' },
        adam: { type: 'string', default: 'defaults' },
        'cuda-graph': { type: 'boolean', default: false },
        python: { type: 'string' },
        json: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error), true);
  }
  const args = parsed.values;
  if (args.help) {
    console.log(USAGE);
    process.exit(0);
  }
  if (args.device !== 'cpu' && args.device !== 'cuda') {
    fail(`--device must be cpu or cuda, got ${args.device}`);
  }
  const device = /** @type {'cpu' | 'cuda'} */ (args.device);
  const adams = [...new Set(args.adam.split(','))];
  for (const adam of adams) {
    if (!ADAM_MODES.includes(adam))
      fail(`--adam takes ${ADAM_MODES.join(', ')} (or a comma list), got ${adam}`);
  }
  if (adams.includes('fused') && device !== 'cuda') fail('--adam fused needs --device cuda');
  if (args['cuda-graph']) {
    if (device !== 'cuda') fail('--cuda-graph needs --device cuda');
    adams.push('graph');
  }
  const names = args.model === 'all' ? MODELS.map((spec) => spec.name) : args.model.split(',');
  const models = names.map((name) => {
    const spec = MODELS.find((candidate) => candidate.name === name);
    if (spec === undefined) {
      fail(`unknown --model ${name}; expected one of ${MODELS.map((m) => m.name).join(', ')} or all`);
    }
    return spec;
  });
  return {
    device,
    models,
    explicitModels: args.model !== 'all',
    steps: countOption(args, 'steps', undefined),
    warmup: countOption(args, 'warmup', undefined),
    rounds: countOption(args, 'rounds', device === 'cuda' ? 3 : 1),
    threads: countOption(args, 'threads', availableParallelism()),
    adams: /** @type {('single' | 'foreach' | 'fused' | 'defaults' | 'graph')[]} */ (adams),
    python: args.python,
    json: args.json,
  };
}

/** The interpreters to try for the PyTorch side, without repeats. */
function pythonCandidates(explicit) {
  if (explicit !== undefined) return [explicit];
  return [...new Set([process.env.PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean))];
}

/**
 * The models to run with their step counts; a model this @flodl/nn cannot build is skipped
 * under `--model all` and an error when named.
 */
function planRuns(options) {
  const plan = [];
  for (const spec of options.models) {
    const reason = spec.missing?.() ?? null;
    if (reason !== null) {
      if (options.explicitModels) fail(`--model ${spec.name}: ${reason}`);
      console.log(`skipping ${spec.name}: ${reason}`);
      continue;
    }
    const defaults = spec.defaults[options.device];
    plan.push({
      spec,
      counts: { steps: options.steps ?? defaults.steps, warmup: options.warmup ?? defaults.warmup },
    });
  }
  if (plan.length === 0) fail('no model left to run');
  return plan;
}

/** The best of `runs` by samples/s. */
function best(runs) {
  return runs.reduce((a, b) => (b.samplesPerSecond > a.samplesPerSecond ? b : a));
}

/** The BLAS libraries mapped into this process (libtorch's matrix products run on them). */
function blasLibraries() {
  try {
    const paths = readFileSync('/proc/self/maps', 'utf8')
      .split('\n')
      .map((line) => line.trim().split(/\s+/)[5])
      .filter((path) => path !== undefined && /^lib(open)?blas|^libmkl|^libblis/.test(basename(path)));
    return [...new Set(paths)].sort();
  } catch {
    return [];
  }
}

/** What the summary keeps of one side's rounds: the best samples/s, the shortest update time. */
function bestOf(runs) {
  const { samplesPerSecond, finalLoss } = best(runs);
  return { samplesPerSecond, updateSeconds: Math.min(...runs.map((run) => run.updateSeconds)), finalLoss };
}

async function main() {
  const options = readOptions();
  const { device } = options;
  const libtorch = buildInfo();
  if (device === 'cuda' && !cuda.isAvailable()) {
    fail(
      `--device cuda: no CUDA device visible to this addon (libtorch ${libtorch.torchVersion}, ` +
        `${libtorch.cuda ? 'built with CUDA' : 'a CPU-only build'})`,
    );
  }
  setNumThreads(options.threads);
  const plan = planRuns(options);
  const liveBefore = liveTensorCount();
  let worker;
  try {
    worker = await PytorchWorker.start(pythonCandidates(options.python), {
      device,
      threads: options.threads,
      adam: options.adams[0],
    });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  const setup = {
    device,
    deviceName: device === 'cuda' ? cuda.deviceName() : null,
    threads: getNumThreads(),
    rounds: options.rounds,
    adams: options.adams,
    node: process.version,
    libtorch: libtorch.torchVersion,
    torch: worker.info,
    linearBy: backends.cpu.oneDnnLinear
      ? "oneDNN's sgemm"
      : `libtorch's BLAS (${blasLibraries().join(', ') || 'linked into libtorch'})`,
  };
  console.log(
    `bench:train on ${device}${setup.deviceName === null ? '' : ` (${setup.deviceName})`}, ${setup.threads} threads, ` +
      `Adam lr 1e-3 (${options.adams.join(', ')}), best of ${options.rounds} round${options.rounds === 1 ? '' : 's'}; ` +
      `PyTorch ${worker.info.torch} from ${worker.info.python}`,
  );

  /** One entry per model and Adam mode, in plan order. */
  const runs = plan.flatMap(({ spec, counts }) =>
    options.adams.map((adam) => ({ spec, counts, adam, flodl: [], pytorch: [] })),
  );
  for (let round = 0; round < options.rounds; round++) {
    for (const { spec } of plan) {
      const modes = runs.filter((run) => run.spec === spec);
      // The modes take turns in a different order each round, as the two sides do.
      const shift = round % modes.length;
      for (const run of [...modes.slice(shift), ...modes.slice(0, shift)]) {
        const { counts, adam } = run;
        const trainTheirs = async () => {
          // Our cached blocks go back to the driver so the PyTorch process finds the device as we did.
          cuda.emptyCache();
          try {
            return await worker.train({
              name: spec.name,
              batch: spec.batch,
              inputShape: spec.inputShape,
              classes: spec.classes,
              // A captured step is measured against PyTorch eager with its own defaults.
              adam: adam === 'graph' ? 'defaults' : adam,
              ...counts,
            });
          } catch (error) {
            fail(error instanceof Error ? error.message : String(error));
          }
        };
        // Who goes first alternates by round, so a slow spell on the machine hits both sides alike.
        let ours;
        let theirs;
        const trainOurs = () => {
          try {
            return adam === 'graph' ? trainFlodlGraph(spec, counts) : trainFlodl(spec, counts, device, adam);
          } catch (error) {
            fail(error instanceof Error ? error.message : String(error));
          }
        };
        if (round % 2 === 0) {
          ours = trainOurs();
          theirs = await trainTheirs();
        } else {
          theirs = await trainTheirs();
          ours = trainOurs();
        }
        run.flodl.push(ours);
        run.pytorch.push(theirs);
        const label = options.adams.length === 1 ? spec.name : `${spec.name} (${adam})`;
        console.log(
          `  round ${round + 1} ${label}: flodl ${formatRate(ours.samplesPerSecond)} samples/s, ` +
            `PyTorch ${formatRate(theirs.samplesPerSecond)} samples/s`,
        );
      }
    }
  }
  await worker.close();
  const liveAfter = liveTensorCount();
  if (liveAfter !== liveBefore) fail(`live tensors: ${liveBefore} before, ${liveAfter} after`);

  const summary = runs.map(({ spec, counts, adam, flodl, pytorch }) => {
    const ours = best(flodl);
    const theirs = best(pytorch);
    return {
      name: spec.name,
      description: spec.description,
      batch: spec.batch,
      adam,
      ...counts,
      flodl: { ...bestOf(flodl), rounds: flodl },
      pytorch: { ...bestOf(pytorch), rounds: pytorch },
      ratio: ours.samplesPerSecond / theirs.samplesPerSecond,
    };
  });
  printReport(summary, setup);
  console.log(`live tensors: ${liveBefore} before, ${liveAfter} after, flat across every timed loop`);
  if (options.json !== undefined) {
    // pnpm runs the script in packages/trainer; a relative path means the caller's directory.
    const file = resolve(process.env.INIT_CWD ?? process.cwd(), options.json);
    writeFileSync(
      file,
      `${JSON.stringify({ date: new Date().toISOString(), ...setup, models: summary }, null, 2)}\n`,
    );
    console.log(`wrote ${file}`);
  }
}

await main();
