// One configuration of `pnpm bench:ddp` (a model, a mode or the fastest rank alone): run in
// its own process by bench/ddp.ts. With several ranks this process is the Trainer's launcher,
// and the Trainer re-runs the same script (same argv) as each rank, where this same code
// becomes that rank. The launcher times the run, evaluates the consensus parameters on the
// held-out data, reads the averaging rounds from the run's metrics log, and writes one JSON
// result to `config.out`.
import { writeFileSync } from 'node:fs';
import { crossEntropy, noGrad } from '@flodl/autograd';
import { type EpochMetrics, type LaunchMode, readMetricsLog } from '@flodl/distributed';
import type { Sequential } from '@flodl/nn';
import { type Device, setNumThreads, tidy } from '@flodl/tensor-native';
import { type BatchDataset, FashionMnist } from '../src/data/index.js';
import { recordScalar, Trainer } from '../src/index.js';
import { PacedAdam, Pacer } from './ddp-pace.js';
import { snapshotThreads, type ThreadSnapshot, type ThreadUse, threadUse } from './ddp-threads.js';
import { cnn, mlp, resnet } from './fashion-models.js';

/** What one child process runs. */
export interface RunConfig {
  model: 'mlp' | 'cnn' | 'resnet';
  /** A launch mode, or `alone`: the fastest rank on its own (one device, in-process). */
  mode: LaunchMode | 'alone';
  nproc: number;
  /** Each rank's device (`cpu`, `cuda:N`). */
  devices: Device[];
  /** The device of the fastest rank alone (the first GPU of `devices`, else the CPU). */
  aloneDevice: Device;
  /** Speed of each rank (1 = its own pace); `alone` runs at the fastest of them. */
  speeds: number[];
  samples: number;
  epochs: number;
  batchSize: number;
  lr: number;
  root: string;
  split: 'train' | 'test';
  /** With `split: 'test'`: the last `holdout` images are the evaluation set, never trained on. */
  holdout: number;
  out: string;
  log: string;
}

/** One rank's part of a run, summed over its epochs. */
export interface RankPart {
  rank: number;
  speed: number;
  samples: number;
  share: number;
  /** Forward, backward and optimizer step, the pacing idle included (it stands in for a slower device). */
  computeMs: number;
  dataMs: number;
  /**
   * The rest of the training time (the first epoch's start to the last one's end): step
   * reports and control, waits for the next plan at epoch ends and barriers, averaging rounds.
   */
  waitMs: number;
  /** Idle the pacer inserted (part of computeMs). */
  paceIdleMs: number;
  /** Compute per step without the pacing idle, ms. */
  workPerStepMs: number;
  /** A paced rank's warm work per step (a step run straight after the last), the pace's base, ms. */
  warmStepMs: number;
  /**
   * When the rank finished its share, as a fraction of the epoch (mean over epochs): the Sync
   * modes' whole partitions; where epochs stream (Cadence, Async) an epoch's time runs from its
   * pool's opening, before the previous epoch ends, so this says little there.
   */
  shareDone: number;
}

/** What a child process writes. */
export interface RunResult {
  model: string;
  mode: string;
  ranks: number;
  speeds: number[];
  /** Each rank's device (the one device of `alone`). */
  devices: string[];
  trainSamples: number;
  evalSamples: number;
  /** run() to join(): rank start-up, formation and shutdown included. */
  wallMs: number;
  /** Start of the first epoch to the end of the last, as the launcher saw the epochs arrive. */
  trainMs: number;
  /** Samples trained (every rank's, every epoch). */
  samples: number;
  samplesPerSec: number;
  accuracy: number;
  loss: number;
  finalTrainLoss: number;
  rounds: number;
  /** Σ over rounds of round-start to round-done, as the launcher saw them. */
  averagingMs: number;
  perRank: RankPart[];
  /** Each epoch's share of its samples, by rank (how the partition followed the measured speeds). */
  epochShares: number[][];
  /** The fastest rank alone this run was compared with: samples/s of each of its runs. */
  aloneRuns?: number[];
  /**
   * Where the CPU went over the epochs after the first (Linux): this process's threads and each
   * rank's, from the first epoch's arrival to the last one's.
   */
  threads?: { fromEpoch: number; toEpoch: number; windowMs: number; uses: ThreadUse[] };
  /** The PyTorch reference's torch version and the BLAS library it ran on. */
  torch?: string;
  blas?: string;
}

const MODELS: Record<RunConfig['model'], () => Sequential> = { mlp, cnn, resnet };

/** The shortest window the threads' use is reported over, ms. */
const MIN_THREAD_WINDOW_MS = 10;

/** The models `--model` names. */
export const MODEL_NAMES = Object.keys(MODELS) as readonly RunConfig['model'][];

function buildModel(model: RunConfig['model']): Sequential {
  return MODELS[model]();
}

function range(start: number, end: number): number[] {
  return Array.from({ length: end - start }, (_, index) => start + index);
}

/** Accuracy and mean cross-entropy of `model` (on `device`) on `indices` of `data`. */
function evaluate(model: Sequential, data: FashionMnist, indices: number[], device: Device) {
  model.eval();
  let correct = 0;
  let lossSum = 0;
  for (let start = 0; start < indices.length; start += 1000) {
    const chunk = indices.slice(start, start + 1000);
    const [right, loss] = tidy(() =>
      noGrad(() => {
        const [images, labels] = data.getBatch(chunk).map((tensor) => tensor.to(device));
        const logits = model.forward(images!);
        return [
          logits.argmax(1).eq(labels!).sum().item() as number,
          crossEntropy(logits, labels!).item() as number,
        ];
      }),
    );
    correct += right;
    lossSum += loss * chunk.length;
  }
  return { accuracy: correct / indices.length, loss: lossSum / indices.length };
}

/** Averaging rounds and their time, from the run's metrics log. */
function averagingRounds(log: string): { rounds: number; averagingMs: number } {
  const started = new Map<number, number>();
  let rounds = 0;
  let averagingMs = 0;
  for (const record of readMetricsLog(log).records) {
    if (record.kind === 'round-start') started.set(record.version, record.t);
    if (record.kind === 'round') {
      rounds += 1;
      const from = started.get(record.version);
      if (from !== undefined) averagingMs += record.t - from;
    }
  }
  return { rounds, averagingMs };
}

function rankParts(
  config: RunConfig,
  speeds: number[],
  metrics: EpochMetrics[],
  trainMs: number,
): RankPart[] {
  const total = metrics.reduce((sum, m) => sum + m.perRankSamples.reduce((a, b) => a + b, 0), 0);
  return speeds.map((speed, rank) => {
    const sum = (pick: (m: EpochMetrics) => number | undefined) =>
      metrics.reduce((acc, m) => acc + (pick(m) ?? 0), 0);
    const samples = sum((m) => m.perRankSamples[rank]);
    const computeMs = sum((m) => m.perRankComputeOnlyMs[rank]);
    const dataMs = sum((m) => m.perRankDataStarveMs[rank]);
    // The scalar is a per-step mean: × the rank's steps gives its total.
    const paceIdleMs = sum(
      (m) => ((m.perRank[rank]?.paceIdleMs ?? 0) * (m.perRankSamples[rank] ?? 0)) / config.batchSize,
    );
    const steps = samples / config.batchSize;
    const warmStepMs = metrics.length > 0 ? sum((m) => m.perRank[rank]?.paceWarmMs) / metrics.length : 0;
    const shareDone = sum((m) => (m.epochMs > 0 ? (m.perRankShareCompleteMs[rank] ?? 0) / m.epochMs : 0));
    return {
      rank,
      speed,
      samples,
      share: total > 0 ? samples / total : 0,
      computeMs,
      dataMs,
      // Against the training time, not the sum of the epochs': streamed epochs overlap.
      waitMs: Math.max(0, trainMs - computeMs - dataMs),
      paceIdleMs,
      workPerStepMs: steps > 0 ? (computeMs - paceIdleMs) / steps : 0,
      warmStepMs,
      shareDone: metrics.length > 0 ? shareDone / metrics.length : 0,
    };
  });
}

/** The `threads` of a result, where both snapshots were taken at least a few ms apart. */
function threadsOver(
  from: ThreadSnapshot | undefined,
  to: ThreadSnapshot | undefined,
  epochs: number,
): Pick<RunResult, 'threads'> {
  if (from === undefined || to === undefined) return {};
  const windowMs = to.atMs - from.atMs;
  // A single device's epochs can arrive together, after its training: no window to speak of.
  if (windowMs < MIN_THREAD_WINDOW_MS) return {};
  return { threads: { fromEpoch: 2, toEpoch: epochs, windowMs, uses: threadUse(from, to) } };
}

/** Runs `config` in this process's role (single device, launcher, or one of the ranks). */
export async function runConfig(config: RunConfig): Promise<void> {
  setNumThreads(1);
  const alone = config.mode === 'alone';
  const rank = Number(process.env.FLODL_RANK ?? 0);
  const speeds = alone ? [Math.max(...config.speeds)] : config.speeds;
  const pacer = new Pacer(speeds[rank] ?? 1);
  const source = new FashionMnist({ root: config.root, split: config.split, normalize: true });
  const usable = config.split === 'test' ? source.length - config.holdout : source.length;
  const trainSamples = Math.min(config.samples, usable);
  const data: BatchDataset = {
    length: trainSamples,
    names: source.names,
    getBatch: (indices) => source.getBatch(indices),
  };
  const builder = Trainer.builder(
    (device: Device) => buildModel(config.model).to(device),
    (params) => new PacedAdam(params, { lr: config.lr }, pacer),
    (model, batch) => {
      recordScalar('paceIdleMs', pacer.begin());
      recordScalar('paceWarmMs', pacer.warmMs);
      return crossEntropy(model.forward(batch.get('image')), batch.get('label'));
    },
  )
    .dataset(data)
    .batchSize(config.batchSize)
    .numEpochs(config.epochs)
    .devices(alone ? [config.aloneDevice] : config.devices)
    .progress(false)
    .metricsLog(config.log);
  if (!alone) builder.mode(config.mode as LaunchMode);
  const started = performance.now();
  const handle = builder.run();
  if (handle.isRank) {
    await handle.join(); // a launched rank exits when its part is done
    return;
  }
  const metrics: EpochMetrics[] = [];
  const arrivals: number[] = [];
  // The threads' counters as the first epoch and the last arrive (the ranks still live): the
  // window leaves out start-up and the first epoch, planned before the ranks were measured.
  const self = alone ? 'alone' : 'launcher';
  let firstThreads: ThreadSnapshot | undefined;
  let lastThreads: ThreadSnapshot | undefined;
  for await (const epoch of handle.metrics()) {
    metrics.push(epoch);
    arrivals.push(performance.now());
    if (metrics.length === 1) firstThreads = snapshotThreads(self);
    else if (metrics.length === config.epochs) lastThreads = snapshotThreads(self);
  }
  const state = await handle.join();
  const wallMs = performance.now() - started;
  const first = metrics[0];
  const trainMs =
    first === undefined ? wallMs : (arrivals.at(-1) as number) - (arrivals[0] as number) + first.epochMs;
  const samples = metrics.reduce((sum, m) => sum + m.perRankSamples.reduce((a, b) => a + b, 0), 0);

  // The consensus (parameters and buffers: batch norm's running statistics) evaluated on the
  // device the fastest rank alone ran on.
  const model = buildModel(config.model).to(config.aloneDevice);
  noGrad(() => {
    for (const [index, parameter] of model.parameters().entries()) parameter.copy_(state.params[index]!);
    for (const [index, buffer] of model.buffers().entries()) buffer.copy_(state.buffers[index]!);
  });
  for (const tensor of [...state.params, ...state.buffers]) tensor.dispose();
  let evalSet = source;
  let evalIndices = range(source.length - config.holdout, source.length);
  if (config.split === 'train') {
    evalSet = new FashionMnist({ root: config.root, split: 'test', normalize: true });
    evalIndices = range(0, evalSet.length);
  }
  const quality = evaluate(model, evalSet, evalIndices, config.aloneDevice);
  const result: RunResult = {
    model: config.model,
    mode: config.mode,
    ranks: speeds.length,
    speeds,
    devices: alone ? [config.aloneDevice] : config.devices,
    trainSamples,
    evalSamples: evalIndices.length,
    wallMs,
    trainMs,
    samples,
    samplesPerSec: samples / (trainMs / 1000),
    accuracy: quality.accuracy,
    loss: quality.loss,
    finalTrainLoss: metrics.at(-1)?.avgLoss ?? Number.NaN,
    ...averagingRounds(config.log),
    perRank: rankParts(config, speeds, metrics, trainMs),
    ...threadsOver(firstThreads, lastThreads, config.epochs),
    epochShares: metrics.map((m) => {
      const total = m.perRankSamples.reduce((a, b) => a + b, 0);
      return m.perRankSamples.map((count) => (total > 0 ? count / total : 0));
    }),
  };
  writeFileSync(config.out, `${JSON.stringify(result)}\n`);
  model.dispose();
  if (evalSet !== source) evalSet.dispose();
  source.dispose();
}
