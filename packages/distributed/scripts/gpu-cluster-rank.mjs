// One rank of scripts/gpu-cluster.mjs (started by `launch`, never by hand): trains an MLP on a
// synthetic classification task through a DistributedSession, on cuda:FLODL_DEVICE_INDEX when
// FLODL_DEVICE is cuda, and after every applied averaging round appends one JSON line to
// $FLODL_CLUSTER_RECORDS/rank-<rank>.jsonl:
//   { rank, version, params, consensus?, loss, steps }
// params: sha256 of every parameter's bytes (moved to the CPU, in order), taken inside the
// session's onAveraged callback, so before the next optimizer step; consensus: the same over the
// consensus as received (host modes); loss: the mean training loss of the steps since the
// previous record. argv[2]: JSON { driver, totalSamples, batchSize, steps, stepMs, easgdAlpha? }:
//   driver 'coordinator': train the partitions the coordinator's StartEpoch / ExtendPartition
//     plans name, one Metrics report per plan, until Shutdown;
//   driver 'averaging': train `steps` steps on this rank's contiguous shard of the dataset.

import { createHash } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { DistributedSession, installDeathRecord } from '@flodl/distributed';
import { Adam, CrossEntropyLoss, Linear, ReLU, Sequential, save } from '@flodl/nn';
import { manualSeed, randn, tidy, toBytes } from '@flodl/tensor-native';

installDeathRecord();

/**
 * @typedef {object} RankConfig
 * @property {'coordinator' | 'averaging'} driver Which launcher-side driver runs the rounds.
 * @property {number} totalSamples Dataset size.
 * @property {number} batchSize Samples per optimizer step.
 * @property {number} steps Optimizer steps of this rank (driver 'averaging').
 * @property {number} stepMs Least wall time of one step, ms (the rank sleeps the rest).
 * @property {number} [easgdAlpha] CpuAsync only: EASGD blend factor.
 */

/** @type {RankConfig} */
const config = JSON.parse(process.argv[2] ?? '{}');
const rank = Number(process.env.FLODL_RANK);
const worldSize = Number(process.env.FLODL_WORLD_SIZE);
const recordPath = join(process.env.FLODL_CLUSTER_RECORDS ?? '.', `rank-${rank}.jsonl`);
const device = /** @type {import('@flodl/tensor-native').Device} */ (
  process.env.FLODL_DEVICE === 'cuda' ? `cuda:${Number(process.env.FLODL_DEVICE_INDEX ?? 0)}` : 'cpu'
);

const FEATURES = 32;
const CLASSES = 4;

// The same initial weights on every rank (the session does not broadcast them).
manualSeed(7);
const model = new Sequential(
  new Linear(FEATURES, 64),
  new ReLU(),
  new Linear(64, 64),
  new ReLU(),
  new Linear(64, CLASSES),
).to(device);

// The same dataset on every rank; each trains its own part of it. Labels come from a random
// linear teacher. The samples are i.i.d. draws, so their order stands in for an epoch's shuffle.
manualSeed(1234);
const [inputs, labels] = tidy(() => {
  const x = randn([config.totalSamples, FEATURES]);
  const teacher = randn([FEATURES, CLASSES]);
  return [x.to(device), x.matmul(teacher).argmax(1).to(device)];
});

const optimizer = new Adam(model.parameters(), { lr: 0.01 });
const lossFunction = new CrossEntropyLoss();

/**
 * sha256 of `tensors`' bytes, in order, each copied to the CPU first.
 * @param {readonly import('@flodl/tensor-native').Tensor[]} tensors
 * @returns {string}
 */
function hashTensors(tensors) {
  const hash = createHash('sha256');
  tidy(() => {
    for (const tensor of tensors) hash.update(toBytes(tensor.detach().cpu()));
  });
  return hash.digest('hex');
}

/**
 * sha256 of the parameters in a consensus as received (host modes), in order.
 * @param {readonly { name: string; bytes: Uint8Array }[]} consensus
 * @returns {string}
 */
function hashConsensus(consensus) {
  const hash = createHash('sha256');
  for (const tensor of consensus) if (tensor.name.startsWith('p:')) hash.update(tensor.bytes);
  return hash.digest('hex');
}

/** @type {number[]} Losses of the steps since the last record. */
let windowLosses = [];
let lastLoss = Number.NaN;

/** @type {{ epoch: number; partitionOffset: number; partitionSize: number }[]} */
const plans = [];

const session = await DistributedSession.join(model, {
  timeoutMs: 30_000,
  ...(config.easgdAlpha === undefined ? {} : { easgdAlpha: config.easgdAlpha }),
  onControl: (message) => {
    if (message.type === 'StartEpoch') plans.push(message.plan);
    else if (message.type === 'ExtendPartition') {
      plans.push({ epoch: message.epoch, partitionOffset: message.offset, partitionSize: message.size });
    }
  },
  onAveraged: (event) => {
    const loss =
      windowLosses.length > 0
        ? windowLosses.reduce((sum, value) => sum + value, 0) / windowLosses.length
        : lastLoss;
    const record = {
      rank,
      version: event.version,
      params: hashTensors(model.parameters()),
      ...(event.consensus ? { consensus: hashConsensus(event.consensus) } : {}),
      loss,
      steps: session.stepCount,
    };
    windowLosses = [];
    appendFileSync(recordPath, `${JSON.stringify(record)}\n`);
  },
});

/**
 * One optimizer step on `size` samples from `offset`.
 * @param {number} offset
 * @param {number} size
 * @returns {number} the batch loss
 */
function trainBatch(offset, size) {
  return tidy(() => {
    const loss = lossFunction.forward(
      model.forward(inputs.narrow(0, offset, size)),
      labels.narrow(0, offset, size),
    );
    optimizer.zeroGrad();
    loss.backward();
    optimizer.step();
    return /** @type {number} */ (loss.item());
  });
}

/**
 * Trains one batch, then reports it (the session follows the driver's commands there).
 * @param {number} offset
 * @param {number} size
 * @returns {Promise<number>} the batch loss
 */
async function step(offset, size) {
  // The death scenario (gpu-cluster.mjs --kill-rank R --kill-at S): this rank dies mid-run.
  if (rank === config.killRank && session.stepCount >= config.killAt) process.exit(3);
  const started = performance.now();
  const loss = trainBatch(offset, size);
  windowLosses.push(loss);
  lastLoss = loss;
  // A floor on the step's wall time: ElChe times its cadence in wall time, and steps this
  // small take a fraction of a millisecond.
  const rest = config.stepMs - (performance.now() - started);
  if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
  await session.afterStep({ loss, batchMs: performance.now() - started });
  return loss;
}

if (config.driver === 'averaging') {
  const shard = Math.floor(config.totalSamples / worldSize);
  const batches = Math.max(1, Math.floor(shard / config.batchSize));
  for (let index = 0; index < config.steps && !session.stopped; index += 1) {
    await step(rank * shard + (index % batches) * config.batchSize, Math.min(config.batchSize, shard));
  }
} else {
  while (!session.stopped) {
    const plan = plans.shift();
    if (!plan) {
      await session.drain();
      await new Promise((resolve) => setTimeout(resolve, 1));
      continue;
    }
    const started = performance.now();
    let lossSum = 0;
    let batches = 0;
    for (let done = 0; done < plan.partitionSize && !session.stopped; done += config.batchSize) {
      const offset = (plan.partitionOffset + done) % config.totalSamples;
      const size = Math.min(config.batchSize, plan.partitionSize - done, config.totalSamples - offset);
      lossSum += await step(offset, size);
      batches += 1;
    }
    if (session.stopped) break;
    const elapsed = performance.now() - started;
    session.control.metrics({
      epoch: plan.epoch,
      avgLoss: lossSum / Math.max(batches, 1),
      batchesProcessed: batches,
      epochMs: elapsed,
      samplesProcessed: plan.partitionSize,
      shareCompleteMs: elapsed,
      computeOnlyMs: elapsed,
      dataStarveMs: 0,
      scalars: {},
    });
  }
}
// ShutdownWithSave: this rank holds the freshest state the run keeps; save it before leaving.
if (session.saveRequested !== undefined) {
  save(model, join(process.env.FLODL_CLUSTER_RECORDS ?? '.', `saved-by-rank-${rank}.safetensors`), {
    metadata: { reason: session.saveRequested },
  });
}
await session.finish();
inputs.dispose();
labels.dispose();
// The control worker and native handles would keep the process alive.
process.exit(0);
