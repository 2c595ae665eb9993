#!/usr/bin/env node
// `pnpm bench:train`: trains the same models (bench/models.mjs: an MLP, a CNN, an LSTM, a
// transformer encoder) with flodl and with PyTorch eager (bench/train.py, run by python3 as a
// worker), on synthetic data resident on the device, with Adam (lr 1e-3) for a fixed number
// of steps, the two sides taking turns model by model, and prints samples/s of each side and
// the ratio flodl / PyTorch (higher is better). Plain JavaScript so it runs where only node
// and the built dist/ folders exist:
//
//   node packages/trainer/bench/train.mjs [--device cpu|cuda] [--model mlp|cnn|lstm|transformer|all] ...
//
// The Fashion-MNIST MLP with this package's DataLoader is bench/train-mlp.ts (`bench:train-mlp`).
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { crossEntropy } from '@flodl/autograd';
import { Adam, CapturedStep } from '@flodl/nn';
import {
  buildInfo,
  cuda,
  getNumThreads,
  liveTensorCount,
  manualSeed,
  randint,
  randn,
  setNumThreads,
  tidy,
} from '@flodl/tensor-native';
import { MODELS } from './models.mjs';
import { PytorchWorker } from './pytorch-side.mjs';

const USAGE = `usage: pnpm bench:train [-- options]   (or: node packages/trainer/bench/train.mjs [options])
  --device cpu|cuda          default cpu
  --model NAME|all           ${MODELS.map((spec) => spec.name).join('|')}|all, or a comma list; default all
  --steps N                  timed steps per model (default: per model and device)
  --warmup N                 untimed steps before them, at least 1 (default: per model and device)
  --rounds N                 rounds of both sides, best kept; default 1 on cpu, 3 on cuda
  --threads N                intra-op CPU threads of both sides; default ${availableParallelism()}
  --adam single|fused|defaults
                             defaults: each library's own default (default; on cuda both
                               take the foreach multi-tensor step);
                             single: the single-tensor update on both sides;
                             fused: libtorch's fused CUDA kernel on both sides (cuda only)
  --cuda-graph               also train each model with its whole step captured into a CUDA
                               graph (CapturedStep, fused Adam), against PyTorch eager (cuda only)
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
  // pnpm forwards a literal `--` before the script's arguments; parseArgs would stop there.
  const argv = process.argv.slice(2).filter((argument, index) => !(index === 0 && argument === '--'));
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
  if (!['single', 'fused', 'defaults'].includes(args.adam)) {
    fail(`--adam must be single, fused or defaults, got ${args.adam}`);
  }
  if (args.adam === 'fused' && device !== 'cuda') fail('--adam fused needs --device cuda');
  if (args['cuda-graph'] && device !== 'cuda') fail('--cuda-graph needs --device cuda');
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
    adam: /** @type {'single' | 'fused' | 'defaults'} */ (args.adam),
    cudaGraph: args['cuda-graph'],
    python: args.python,
    json: args.json,
  };
}

/**
 * One timed run of one side.
 * @typedef {{ samplesPerSecond: number, seconds: number, finalLoss: number }} RunResult
 */

/**
 * Trains `spec` for `warmup` untimed and `steps` timed steps on synthetic data generated once
 * on `device`; each step runs in `tidy`, so the live tensor count must not move while timed.
 * @param {import('./models.mjs').ModelSpec} spec
 * @param {{ steps: number, warmup: number }} counts
 * @param {'cpu' | 'cuda'} device
 * @param {'single' | 'fused' | 'defaults'} adam
 * @returns {RunResult}
 */
function trainFlodl(spec, counts, device, adam) {
  const liveBefore = liveTensorCount();
  manualSeed(0);
  const model = spec.build().to(device);
  const inputs = randn([spec.batch, ...spec.inputShape], { device });
  const labels = randint(0, spec.classes, [spec.batch], { device });
  const optimizer = new Adam(model.parameters(), {
    lr: 1e-3,
    fused: adam === 'fused',
    ...(adam === 'single' ? { foreach: false } : {}),
  });
  const step = () =>
    tidy(() => {
      const loss = crossEntropy(model.forward(inputs), labels);
      optimizer.zeroGrad();
      loss.backward();
      optimizer.step();
      return loss.detach();
    });
  for (let index = 0; index < counts.warmup; index++) step().dispose();
  cuda.synchronize();
  const liveAtStart = liveTensorCount();
  const started = performance.now();
  for (let index = 0; index < counts.steps - 1; index++) step().dispose();
  const lastLoss = step();
  cuda.synchronize();
  const seconds = (performance.now() - started) / 1000;
  const finalLoss = lastLoss.item();
  lastLoss.dispose();
  const liveAtEnd = liveTensorCount();
  optimizer.dispose();
  model.dispose();
  inputs.dispose();
  labels.dispose();
  if (liveAtEnd !== liveAtStart || liveTensorCount() !== liveBefore) {
    fail(
      `${spec.name}: live tensors moved (${liveAtStart} → ${liveAtEnd} over the timed steps, ` +
        `${liveBefore} → ${liveTensorCount()} over the run)`,
    );
  }
  return { samplesPerSecond: (counts.steps * spec.batch) / seconds, seconds, finalLoss };
}

/**
 * As trainFlodl, with the whole step (forward, loss, backward, fused Adam) captured into a CUDA
 * graph by CapturedStep: the untimed steps include its warm-up and its capture.
 * @param {import('./models.mjs').ModelSpec} spec
 * @param {{ steps: number, warmup: number }} counts
 * @returns {RunResult}
 */
function trainFlodlGraph(spec, counts) {
  const liveBefore = liveTensorCount();
  manualSeed(0);
  const model = spec.build().to('cuda');
  const inputs = randn([spec.batch, ...spec.inputShape], { device: 'cuda' });
  const labels = randint(0, spec.classes, [spec.batch], { device: 'cuda' });
  const optimizer = new Adam(model.parameters(), { lr: 1e-3, fused: true });
  const step = new CapturedStep(optimizer, ([x, y]) => crossEntropy(model.forward(x), y), { warmup: 3 });
  const batch = [inputs, labels];
  for (let index = 0; index < Math.max(counts.warmup, 5); index++) step.run(batch);
  cuda.synchronize();
  const liveAtStart = liveTensorCount();
  const started = performance.now();
  for (let index = 0; index < counts.steps; index++) step.run(batch);
  cuda.synchronize();
  const seconds = (performance.now() - started) / 1000;
  const finalLoss = step.run(batch).item();
  const liveAtEnd = liveTensorCount();
  step.dispose();
  optimizer.dispose();
  model.dispose();
  inputs.dispose();
  labels.dispose();
  if (liveAtEnd !== liveAtStart || liveTensorCount() !== liveBefore) {
    fail(
      `${spec.name} (CUDA graph): live tensors moved (${liveAtStart} → ${liveAtEnd} over the timed steps, ` +
        `${liveBefore} → ${liveTensorCount()} over the run)`,
    );
  }
  return { samplesPerSecond: (counts.steps * spec.batch) / seconds, seconds, finalLoss };
}

/** The interpreters to try for the PyTorch side, without repeats. */
function pythonCandidates(explicit) {
  if (explicit !== undefined) return [explicit];
  return [...new Set([process.env.PYTHON, 'python3', '/usr/bin/python3'].filter(Boolean))];
}

/** A markdown table of `rows` (the first row is the header), numbers right-aligned. */
function markdownTable(rows, rightAligned) {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  const format = (row) =>
    `| ${row.map((cell, column) => (rightAligned[column] ? cell.padStart(widths[column]) : cell.padEnd(widths[column]))).join(' | ')} |`;
  const rule = `| ${widths.map((width, column) => (rightAligned[column] ? `${'-'.repeat(width - 1)}:` : '-'.repeat(width))).join(' | ')} |`;
  return [format(rows[0]), rule, ...rows.slice(1).map(format)].join('\n');
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

/** Samples/s as a table shows them: whole numbers, three digits below 100. */
function formatRate(samplesPerSecond) {
  return samplesPerSecond >= 100 ? String(Math.round(samplesPerSecond)) : samplesPerSecond.toPrecision(3);
}

/** The best of `runs` by samples/s. */
function best(runs) {
  return runs.reduce((a, b) => (b.samplesPerSecond > a.samplesPerSecond ? b : a));
}

/** Prints the results as a markdown table (ready for docs/benchmarks.md) and the setup line. */
function printReport(summary, setup) {
  const rows = [
    [
      'model',
      'batch',
      'steps',
      'flodl samples/s',
      'PyTorch samples/s',
      'flodl / PyTorch',
      'last loss flodl / PyTorch',
      ...(setup.cudaGraph ? ['flodl graph samples/s', 'graph / PyTorch'] : []),
    ],
  ];
  for (const row of summary) {
    rows.push([
      row.name,
      String(row.batch),
      String(row.steps),
      formatRate(row.flodl.samplesPerSecond),
      formatRate(row.pytorch.samplesPerSecond),
      row.ratio.toFixed(2),
      `${row.flodl.finalLoss.toPrecision(4)} / ${row.pytorch.finalLoss.toPrecision(4)}`,
      ...(setup.cudaGraph ? [formatRate(row.graph.samplesPerSecond), row.graphRatio.toFixed(2)] : []),
    ]);
  }
  console.log('');
  console.log(markdownTable(rows, [false, true, true, true, true, true, true, true, true]));
  const { torch } = setup;
  const cudaPart =
    setup.device === 'cuda'
      ? `; ${setup.deviceName}, cuDNN ${torch.cudnn}, cudnn.benchmark off, TF32 matmul ` +
        `${torch.tf32.matmul ? 'on' : 'off'} and cuDNN ${torch.tf32.cudnn ? 'on' : 'off'} (libtorch's defaults, both sides)`
      : '';
  console.log(
    `\nflodl: Node ${setup.node}, libtorch ${setup.libtorch}; PyTorch ${torch.torch} (${torch.python}, ` +
      `Python ${torch.pythonVersion}); ${setup.device}, ${setup.threads} threads${cudaPart}`,
  );
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
      adam: options.adam,
    });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  const setup = {
    device,
    deviceName: device === 'cuda' ? cuda.deviceName() : null,
    threads: getNumThreads(),
    rounds: options.rounds,
    adam: options.adam,
    cudaGraph: options.cudaGraph,
    node: process.version,
    libtorch: libtorch.torchVersion,
    torch: worker.info,
  };
  console.log(
    `bench:train on ${device}${setup.deviceName === null ? '' : ` (${setup.deviceName})`}, ${setup.threads} threads, ` +
      `Adam lr 1e-3 (${options.adam}), best of ${options.rounds} round${options.rounds === 1 ? '' : 's'}; ` +
      `PyTorch ${worker.info.torch} from ${worker.info.python}`,
  );

  /** @type {Map<string, { flodl: RunResult[], pytorch: RunResult[], graph: RunResult[] }>} */
  const results = new Map(plan.map(({ spec }) => [spec.name, { flodl: [], pytorch: [], graph: [] }]));
  for (let round = 0; round < options.rounds; round++) {
    for (const { spec, counts } of plan) {
      const trainTheirs = async () => {
        // Our cached blocks go back to the driver so the PyTorch process finds the device as we did.
        cuda.emptyCache();
        try {
          return await worker.train({
            name: spec.name,
            batch: spec.batch,
            inputShape: spec.inputShape,
            classes: spec.classes,
            ...counts,
          });
        } catch (error) {
          fail(error instanceof Error ? error.message : String(error));
        }
      };
      // Who goes first alternates by round, so a slow spell on the machine hits both sides alike.
      let ours;
      let theirs;
      if (round % 2 === 0) {
        ours = trainFlodl(spec, counts, device, options.adam);
        theirs = await trainTheirs();
      } else {
        theirs = await trainTheirs();
        ours = trainFlodl(spec, counts, device, options.adam);
      }
      results.get(spec.name).flodl.push(ours);
      results.get(spec.name).pytorch.push(theirs);
      const graphed = options.cudaGraph ? trainFlodlGraph(spec, counts) : null;
      if (graphed !== null) results.get(spec.name).graph.push(graphed);
      console.log(
        `  round ${round + 1} ${spec.name}: flodl ${formatRate(ours.samplesPerSecond)} samples/s, ` +
          `PyTorch ${formatRate(theirs.samplesPerSecond)} samples/s` +
          (graphed === null ? '' : `, flodl CUDA graph ${formatRate(graphed.samplesPerSecond)} samples/s`),
      );
    }
  }
  await worker.close();
  const liveAfter = liveTensorCount();
  if (liveAfter !== liveBefore) fail(`live tensors: ${liveBefore} before, ${liveAfter} after`);

  const summary = plan.map(({ spec, counts }) => {
    const { flodl, pytorch, graph } = results.get(spec.name);
    const ours = best(flodl);
    const theirs = best(pytorch);
    const graphed = graph.length > 0 ? best(graph) : null;
    return {
      name: spec.name,
      description: spec.description,
      batch: spec.batch,
      ...counts,
      flodl: { samplesPerSecond: ours.samplesPerSecond, finalLoss: ours.finalLoss, rounds: flodl },
      pytorch: { samplesPerSecond: theirs.samplesPerSecond, finalLoss: theirs.finalLoss, rounds: pytorch },
      ratio: ours.samplesPerSecond / theirs.samplesPerSecond,
      ...(graphed === null
        ? {}
        : {
            graph: {
              samplesPerSecond: graphed.samplesPerSecond,
              finalLoss: graphed.finalLoss,
              rounds: graph,
            },
            graphRatio: graphed.samplesPerSecond / theirs.samplesPerSecond,
          }),
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
