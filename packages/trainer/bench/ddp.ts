// `pnpm bench:ddp`: what several ranks buy over the fastest one alone, with the managed Trainer.
// A real model (the Fashion-MNIST MLP 784-256-256-10 and a small CNN, `--model all`; or, for
// GPUs, `--model resnet`: ResNet-20's layout at four times its width, 4.33M parameters, a model
// that keeps a GPU busy; Adam lr 1e-3, batch 128 per rank) trains on the same `--samples` images
// for `--epochs` epochs, then the consensus parameters are evaluated (accuracy, loss) on held-out
// images: the test split when training on `--split train`; with `--split test` (where the train
// split is not installed) the last `--holdout` test images, which are never trained on. It runs
// the fastest rank alone (one device, in-process), then `--nproc` CPU ranks in each mode
// (CpuSync, CpuCadence, CpuAsync, NcclSync, NcclCadence; the Nccl modes average over Gloo on CPU
// ranks and are skipped, saying so, where this libtorch has no Gloo). Every rank and the single
// run use one thread.
//
// Unequal ranks on one machine: `--speeds 1,0.5` gives each rank a speed. A rank at speed s
// idles before its steps so that each step lasts its warm work / s: the warm work is the median
// time, from the forward's start to the optimizer step's end, of the steps it runs without idle
// (the first three and every eighth), so data waits, barriers and averaging rounds are not
// stretched, and a step slowed by the idle before it (cold caches) does not slow the rank below
// s; the warm work leaves out the thread's waits for a core (Linux's run-queue wait), which on a
// shared machine are other processes' work, not the rank's. It idles blocked in `Atomics.wait`
// on a SharedArrayBuffer: it uses no CPU while idle, so the other ranks keep their cores, and it
// trains at s of its own pace, like a slower device.
// The fastest rank alone runs at the highest speed given.
//
// Each configuration runs in its own process (this script with `--run`), which is the
// Trainer's launcher; the Trainer re-runs that same command line as each rank. Reported per
// run: wall time (run() to join(), rank start-up included), training time (first epoch's start
// to the last's end), samples/s over the training time, its ratio over the fastest rank alone
// (and by wall time), the ideal ratio (Σ speeds / fastest; for Sync, ranks × slowest / fastest,
// since every rank waits for the slowest each batch), test accuracy and loss, averaging rounds
// and their time, each rank's share of the samples, and the ideal from what the ranks' compute
// measured in the run over the fastest rank alone's (below the given one where ranks sharing a
// machine slow each other down). A run that misses 0.9 × its ideal (1.35x
// for speeds 1,0.5; 1.8x for equal ranks) or 0.5 accuracy points gets a line saying where each
// rank's time went over the training time: compute (pacing idle included), waiting on data, and
// the rest (step reports and control, waits for plans and at barriers, averaging rounds).
//
// Two references run beside the modes (`--references apart,pytorch`, the default; not held to the
// targets). `apart`: one plain training per rank (each at its rank's speed, on its speed's part of
// the samples), all started at once with no cluster between them: their summed samples/s is what
// the machine gives that many trainings, the most a cluster of them can reach, and each run's
// `of apart` is its share of it. `pytorch`: bench/ddp-pytorch.py trains the same model on the
// same images with PyTorch, alone and with DistributedDataParallel (one process and thread per
// rank, paced the same way, on the ranks' devices: Gloo on CPU ranks, NCCL on GPU ranks; DDP not
// for a CPU rank beside a GPU rank nor two ranks on one GPU, where PyTorch alone still runs),
// with the first interpreter of `--python`, $PYTHON, python3, /usr/bin/python3 that has torch
// (skipped, saying so, where none has); `--pytorch-blas DIR` puts a BLAS (such as Debian's
// OpenBLAS) first on its library path, since Debian's libtorch links the reference BLAS. The
// report names the torch and BLAS it ran on.
//
// Real devices: `--devices cuda:0,cuda:1` puts one rank on each GPU, `--devices cuda:0,cpu` a CPU
// rank beside a GPU rank (the extreme case: the Cpu modes only, since NCCL needs every rank on a
// GPU); the fastest rank alone then runs on the first GPU listed, and the ideal ratio comes from
// the ranks' measured speeds (Σ samples/s of each rank's compute / the fastest's). Two ranks may
// name one GPU (`cuda:0,cuda:0`, the Cpu modes only). `--modes ''` runs the fastest rank alone
// and the references only.
//
//   node --expose-gc --import tsx bench/ddp.ts [--model mlp|cnn|resnet|all] [--nproc 2] [--devices cpu,cpu] [--speeds 1,0.5]
//     [--modes CpuSync,CpuCadence,...] [--samples 12800] [--epochs 3] [--batch-size 128] [--lr 0.001]
//     [--root DIR] [--split train|test] [--holdout 2000] [--repeat 1] [--timeout-s 1800] [--json out.json]
//     [--references apart,pytorch] [--python PATH] [--pytorch-blas DIR]
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { LAUNCH_MODES, type LaunchMode } from '@flodl/distributed';
import { cuda, type Device, distributed } from '@flodl/tensor-native';
import { FashionMnist } from '../src/data/index.js';
import { benchArgs } from './cli-args.js';
import { type Assessed, assess, mixedDevices, printReport } from './ddp-report.js';
import { MODEL_NAMES, type RankPart, type RunConfig, type RunResult, runConfig } from './ddp-run.js';

const { values: args } = parseArgs({
  args: benchArgs(),
  options: {
    model: { type: 'string', default: 'all' },
    nproc: { type: 'string' },
    devices: { type: 'string' },
    speeds: { type: 'string' },
    modes: { type: 'string', default: 'CpuSync,CpuCadence,CpuAsync,NcclSync,NcclCadence' },
    samples: { type: 'string', default: '12800' },
    epochs: { type: 'string', default: '3' },
    'batch-size': { type: 'string', default: '128' },
    lr: { type: 'string', default: '0.001' },
    root: { type: 'string', default: FashionMnist.DEFAULT_ROOT },
    split: { type: 'string', default: 'train' },
    holdout: { type: 'string', default: '2000' },
    repeat: { type: 'string', default: '1' },
    references: { type: 'string', default: 'apart,pytorch' },
    python: { type: 'string' },
    'pytorch-blas': { type: 'string' },
    'timeout-s': { type: 'string', default: '1800' },
    json: { type: 'string' },
    run: { type: 'string' },
  },
});

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

function integer(name: string, value: string | undefined, min: number): number {
  const parsed = Number(value);
  if (!(Number.isInteger(parsed) && parsed >= min))
    fail(`--${name} must be an integer >= ${min}, got ${value}`);
  return parsed;
}

async function main(): Promise<void> {
  const devices = (args.devices?.split(',') ?? []) as Device[];
  const nproc = integer('nproc', args.nproc ?? String(devices.length || 2), 2);
  if (devices.length === 0) devices.push(...Array<Device>(nproc).fill('cpu'));
  if (devices.length !== nproc) fail(`--devices needs ${nproc} devices (one per rank), got ${args.devices}`);
  for (const device of devices)
    if (!/^(cpu|cuda:\d+)$/.test(device)) fail(`--devices: ${device} is not cpu or cuda:N`);
  const gpus = devices.filter((device) => device !== 'cpu');
  if (gpus.length > 0 && !cuda.isAvailable()) fail(`--devices ${args.devices}: CUDA is not available here`);
  for (const gpu of gpus)
    if (Number(gpu.slice(5)) >= cuda.deviceCount())
      fail(`--devices: ${gpu} is not here (${cuda.deviceCount()} GPU(s))`);
  const aloneDevice: Device = gpus[0] ?? 'cpu';
  const speeds = (args.speeds ?? Array(nproc).fill('1').join(',')).split(',').map(Number);
  if (speeds.length !== nproc || speeds.some((s) => !(s > 0 && s <= 1)))
    fail(`--speeds needs ${nproc} numbers in (0, 1] (one per rank), got ${args.speeds}`);
  const models = args.model === 'all' ? ['mlp', 'cnn'] : [args.model];
  if (models.some((m) => !(MODEL_NAMES as readonly string[]).includes(m as string)))
    fail(`--model must be ${MODEL_NAMES.join(', ')} or all (mlp and cnn), got ${args.model}`);
  // `--modes ''`: the fastest rank alone and the references only.
  const modes = (args.modes as string).split(',').filter((mode) => mode !== '') as LaunchMode[];
  for (const mode of modes)
    if (!LAUNCH_MODES.includes(mode)) fail(`--modes: ${mode} is not one of ${LAUNCH_MODES.join(', ')}`);
  if (args.split !== 'train' && args.split !== 'test')
    fail(`--split must be train or test, got ${args.split}`);
  const repeat = integer('repeat', args.repeat, 1);
  const references = (args.references as string).split(',').filter((name) => name !== '');
  for (const name of references)
    if (name !== 'apart' && name !== 'pytorch') fail(`--references: ${name} is not apart or pytorch`);
  const timeoutMs = integer('timeout-s', args['timeout-s'], 1) * 1000;
  const base = {
    nproc,
    devices,
    aloneDevice,
    speeds,
    samples: integer('samples', args.samples, 1),
    epochs: integer('epochs', args.epochs, 1),
    batchSize: integer('batch-size', args['batch-size'], 1),
    lr: Number(args.lr),
    root: args.root as string,
    split: args.split,
    holdout: args.split === 'test' ? integer('holdout', args.holdout, 1) : 0,
  } as const;
  const gloo = distributed.isAvailable('gloo');
  const dir = mkdtempSync(join(tmpdir(), 'flodl-bench-ddp-'));
  const runs: Assessed[] = [];
  const skipped: { model: string; mode: string; reason: string }[] = [];
  try {
    for (const model of models as RunConfig['model'][]) {
      // The fastest rank alone runs before the first mode and again after each one, and each
      // mode is compared with the mean of the two alone runs around it: a machine whose speed
      // drifts over minutes (a shared or throttled host) would otherwise bias every ratio.
      const runAlone = () => median(repeat, () => once({ ...base, model, mode: 'alone' }, dir, timeoutMs));
      const alones = [runAlone()];
      const measured: Assessed[] = [];
      let apartRun: Assessed | undefined;
      if (references.includes('apart')) {
        // The machine's own limit for this many trainings: one plain training per rank (each at
        // its rank's speed, no cluster), all at once.
        const run = await apart({ ...base, model }, dir, timeoutMs);
        alones.push(runAlone());
        apartRun = assess(run, meanOfAlone(alones.slice(-2)));
        measured.push(apartRun);
      }
      for (const mode of modes) {
        const reason = ncclSkip(mode, devices, gloo);
        if (reason !== undefined) {
          skipped.push({ model, mode, reason });
          continue;
        }
        const run = median(repeat, () => once({ ...base, model, mode }, dir, timeoutMs));
        alones.push(runAlone());
        measured.push(assess(run, meanOfAlone(alones.slice(-2)), apartRun));
      }
      const alone = meanOfAlone(alones);
      if (references.includes('pytorch')) {
        // Where DDP cannot run on these devices, PyTorch alone still does.
        const ddpReason = ddpSkip(devices);
        if (ddpReason !== undefined) skipped.push({ model, mode: 'PyTorch DDP', reason: ddpReason });
        const pytorchModes = ddpReason === undefined ? (['alone', 'ddp'] as const) : (['alone'] as const);
        const pytorch = pytorchRuns({ ...base, model }, pytorchModes, dir, timeoutMs);
        if (typeof pytorch === 'string') skipped.push({ model, mode: 'pytorch', reason: pytorch });
        else measured.push(...pytorch.map((run) => assess(run, alone)));
      }
      runs.push(assess(alone, alone), ...measured);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const report = {
    machine: `${availableParallelism()} cores, 1 thread per rank, ${describeDevices(devices)}`,
    settings: { ...base, models, modes, repeat },
    runs,
    skipped,
  };
  printReport(report);
  if (args.json) writeFileSync(args.json, `${JSON.stringify(report, null, 2)}\n`);
}

/** The interpreters to try for the PyTorch reference: `--python`, else $PYTHON, python3, /usr/bin/python3. */
function pythons(): string[] {
  if (args.python !== undefined) return [args.python];
  return [...new Set([process.env.PYTHON, 'python3', '/usr/bin/python3'].filter((p) => p !== undefined))];
}

const PYTORCH_SCRIPT = fileURLToPath(new URL('./ddp-pytorch.py', import.meta.url));

/**
 * The reference `pytorch`: bench/ddp-pytorch.py trains the same model on the same images and
 * settings with PyTorch, alone and with DistributedDataParallel (one process and thread per rank,
 * each at its rank's speed and on its rank's device: Gloo on CPU ranks, NCCL on GPU ranks).
 * Returns both runs, or why they could not run (no interpreter with torch, or a run that failed,
 * its error printed to stderr). `--pytorch-blas DIR` puts DIR first on PyTorch's
 * library path (a tuned BLAS such as Debian's OpenBLAS, in front of the reference BLAS that
 * Debian's libtorch links); the report names the BLAS it ran on.
 */
function pytorchRuns(
  config: Omit<RunConfig, 'out' | 'log' | 'mode'>,
  modes: readonly ('alone' | 'ddp')[],
  dir: string,
  timeoutMs: number,
): RunResult[] | string {
  const env: NodeJS.ProcessEnv = { ...process.env, OMP_NUM_THREADS: '1', OPENBLAS_NUM_THREADS: '1' };
  const blasDir = args['pytorch-blas'];
  if (blasDir !== undefined)
    env.LD_LIBRARY_PATH = [blasDir, process.env.LD_LIBRARY_PATH].filter((path) => path).join(':');
  const tried: string[] = [];
  for (const python of pythons()) {
    const results: RunResult[] = [];
    for (const mode of modes) {
      counter += 1;
      const out = join(dir, `pytorch-${counter}.json`);
      const settings = { ...config, mode, out };
      const child = spawnSync(python, [PYTORCH_SCRIPT, JSON.stringify(settings)], {
        encoding: 'utf8',
        env,
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: 64 * 1024 * 1024,
      });
      if (child.status !== 0) {
        // 3: this interpreter has no torch (or cannot start it); the next one may.
        const why = child.error ? String(child.error) : child.stderr.trim().split('\n').at(-1) || 'no output';
        if (child.status === 3 || child.error !== undefined) {
          tried.push(`${python}: ${why}`);
          break;
        }
        // A reference that fails is reported, not fatal: the modes' runs still stand.
        console.error(`bench:ddp: ${config.model} PyTorch ${mode} failed:\n${child.stderr}`);
        return `PyTorch ${mode} failed (exit ${child.status ?? child.signal}): ${why}`;
      }
      results.push(pytorchResult(JSON.parse(readFileSync(out, 'utf8'))));
    }
    if (results.length === modes.length) return results;
  }
  return `no interpreter with torch (${tried.join('; ')}); install python3-torch or pass --python`;
}

/** What bench/ddp-pytorch.py wrote, as a run of the report. */
function pytorchResult(
  written: Omit<RunResult, 'perRank' | 'epochShares' | 'averagingMs'> & {
    perRank: Pick<
      RankPart,
      'rank' | 'speed' | 'samples' | 'computeMs' | 'dataMs' | 'paceIdleMs' | 'workPerStepMs'
    >[];
  },
): RunResult {
  return {
    ...written,
    averagingMs: 0,
    epochShares: [],
    perRank: written.perRank.map((part) => ({
      ...part,
      share: part.samples / written.samples,
      waitMs: Math.max(0, written.trainMs - part.computeMs - part.dataMs),
      warmStepMs: 0,
      shareDone: 0,
    })),
  };
}

/**
 * Why a Nccl mode cannot run on `devices`, or undefined: on GPU ranks it averages over NCCL, so
 * every rank must be on a GPU; on CPU ranks over Gloo, which this libtorch may lack.
 */
function ncclSkip(mode: LaunchMode, devices: readonly Device[], gloo: boolean): string | undefined {
  if (!mode.startsWith('Nccl')) return undefined;
  const onGpu = devices.filter((device) => device !== 'cpu').length;
  if (onGpu > 0 && onGpu < devices.length)
    return 'a CPU rank beside GPU ranks averages on the host only (Cpu modes)';
  if (sharedGpu(devices)) return SHARED_GPU;
  if (onGpu === 0 && !gloo) return 'this libtorch has no Gloo (the Nccl modes on CPU ranks need it)';
  return undefined;
}

/** Why PyTorch's DDP cannot run on `devices` (one backend for every rank, NCCL a GPU per rank). */
function ddpSkip(devices: readonly Device[]): string | undefined {
  if (mixedDevices(devices)) return 'a CPU rank beside a GPU rank: DDP runs every rank on one backend';
  if (sharedGpu(devices)) return SHARED_GPU;
  return undefined;
}

const SHARED_GPU = 'two ranks on one GPU: NCCL needs a GPU per rank';

/** True when two ranks name the same GPU (`cuda:0,cuda:0`: the Cpu modes can share it). */
function sharedGpu(devices: readonly Device[]): boolean {
  const gpus = devices.filter((device) => device !== 'cpu');
  return new Set(gpus).size < gpus.length;
}

/** `cpu`, `cuda:0 + cpu`, `2 × cuda` … for the report's first line. */
function describeDevices(devices: readonly Device[]): string {
  const names = devices.map((device) =>
    device === 'cpu' ? 'cpu' : `${device} (${cuda.deviceName(Number(device.slice(5)))})`,
  );
  return [...new Set(names)]
    .map((name) => {
      const count = names.filter((other) => other === name).length;
      return count > 1 ? `${count} × ${name}` : name;
    })
    .join(' + ');
}

/**
 * The fastest rank alone as a reference: the mean speed of `runs` (their speeds kept in
 * `aloneRuns`). Its accuracy is the same in every run (same seed, same data).
 */
function meanOfAlone(runs: readonly RunResult[]): RunResult {
  const mean = (pick: (run: RunResult) => number) =>
    runs.reduce((sum, run) => sum + pick(run), 0) / runs.length;
  return {
    ...(runs[0] as RunResult),
    wallMs: mean((run) => run.wallMs),
    trainMs: mean((run) => run.trainMs),
    samplesPerSec: mean((run) => run.samplesPerSec),
    perRank: (runs[0] as RunResult).perRank.map((part, rank) => ({
      ...part,
      computeMs: mean((run) => run.perRank[rank]?.computeMs ?? 0),
    })),
    aloneRuns: runs.map((run) => run.samplesPerSec),
  };
}

/** The repeat with the median samples/s. */
function median(repeat: number, run: () => RunResult): RunResult {
  const results = Array.from({ length: repeat }, run).sort((a, b) => a.samplesPerSec - b.samplesPerSec);
  return results[Math.floor(results.length / 2)] as RunResult;
}

let counter = 0;
/** The command line and the result file of one configuration run in a child process. */
function childRun(config: Omit<RunConfig, 'out' | 'log'>, dir: string): { args: string[]; out: string } {
  counter += 1;
  const full: RunConfig = {
    ...config,
    out: join(dir, `run-${counter}.json`),
    log: join(dir, `run-${counter}.jsonl`),
  };
  const script = fileURLToPath(import.meta.url);
  return { args: [...process.execArgv, script, '--run', JSON.stringify(full)], out: full.out };
}

/** Runs one configuration in a child process (bounded by `timeoutMs`) and reads its result. */
function once(config: Omit<RunConfig, 'out' | 'log'>, dir: string, timeoutMs: number): RunResult {
  const { args: childArgs, out } = childRun(config, dir);
  const child = spawnSync(process.execPath, childArgs, {
    encoding: 'utf8',
    timeout: timeoutMs,
    killSignal: 'SIGKILL',
    maxBuffer: 64 * 1024 * 1024,
  });
  if (child.status !== 0) {
    const why = child.error ? String(child.error) : `exit ${child.status ?? child.signal}`;
    fail(`bench:ddp: ${config.model} ${config.mode} failed (${why})\n${child.stderr}`);
  }
  return JSON.parse(readFileSync(out, 'utf8')) as RunResult;
}

/** Runs `configs` at once, each in its own child process (bounded by `timeoutMs`), and reads their results. */
async function together(
  configs: Omit<RunConfig, 'out' | 'log'>[],
  dir: string,
  timeoutMs: number,
): Promise<RunResult[]> {
  const children = configs.map((config) => {
    const { args: childArgs, out } = childRun(config, dir);
    const child = spawn(process.execPath, childArgs, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      stderr += text;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const exited = new Promise<void>((resolve) => {
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (code !== 0) fail(`bench:ddp: ${config.model} apart failed (exit ${code ?? signal})\n${stderr}`);
        resolve();
      });
    });
    return exited.then(() => JSON.parse(readFileSync(out, 'utf8')) as RunResult);
  });
  return Promise.all(children);
}

/**
 * The reference `apart`: one plain training per rank (in-process, on the rank's device, at the
 * rank's speed), all started at once with no cluster between them. Each trains its speed's part
 * of `samples` (the fastest all of them), so that all run for about the same time; their summed
 * samples/s is what the machine gives that many trainings at once, the most a cluster of them can
 * reach. The accuracy shown is the fastest one's.
 */
async function apart(
  config: Omit<RunConfig, 'out' | 'log' | 'mode'>,
  dir: string,
  timeoutMs: number,
): Promise<RunResult> {
  const fastest = Math.max(...config.speeds);
  const runs = await together(
    config.speeds.map((speed, rank) => ({
      ...config,
      mode: 'alone' as const,
      speeds: [speed],
      aloneDevice: config.devices[rank] as Device,
      samples: Math.max(config.batchSize, Math.round((config.samples * speed) / fastest)),
    })),
    dir,
    timeoutMs,
  );
  const samples = runs.reduce((sum, run) => sum + run.samples, 0);
  // The fastest training's result, less its own threads (the trainings' go side by side below).
  const { threads: _, ...first } = runs[config.speeds.indexOf(fastest)] as RunResult;
  return {
    ...first,
    mode: 'apart',
    ranks: runs.length,
    speeds: config.speeds,
    devices: config.devices,
    wallMs: Math.max(...runs.map((run) => run.wallMs)),
    trainMs: Math.max(...runs.map((run) => run.trainMs)),
    samples,
    samplesPerSec: runs.reduce((sum, run) => sum + run.samplesPerSec, 0),
    rounds: 0,
    averagingMs: 0,
    perRank: runs.map((run, rank) => ({
      ...(run.perRank[0] as RankPart),
      rank,
      speed: config.speeds[rank] as number,
      share: run.samples / samples,
    })),
    epochShares: [],
    ...apartThreads(runs),
  };
}

/** The trainings' threads side by side (`training N`), where every one of them has them. */
function apartThreads(runs: RunResult[]): Pick<RunResult, 'threads'> {
  const all = runs.map((run) => run.threads);
  const [first] = all;
  if (first === undefined || !all.every((threads) => threads !== undefined)) return {};
  const uses = all.flatMap((threads, index) =>
    threads.uses.map((use) => ({ ...use, process: `training ${index}` })),
  );
  return { threads: { ...first, windowMs: Math.max(...all.map((threads) => threads.windowMs)), uses } };
}

if (args.run !== undefined) {
  // One configuration: this process is its launcher (or, re-run by the Trainer, one of its ranks).
  await runConfig(JSON.parse(args.run) as RunConfig);
} else {
  await main();
}
