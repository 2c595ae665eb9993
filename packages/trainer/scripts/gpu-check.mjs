#!/usr/bin/env node
// CUDA checks of the data pipeline that need no test runner (run on a GPU machine after
// packages/tensor-native/scripts/gpu-run.sh built the addon, with the packages' dist/ carried):
// batches staged through pinned memory and copied non-blocking, resident mode on the device,
// FashionMnist's uint8 data gathered and scaled on the device, bounded prefetch, no leaks on
// early exit, flat device memory over many batches, CUDA training matching the CPU, and the
// managed Trainer and the cooperative Worker training on the device a model built on the CPU.
// FLODL_CHECK_DEVICE=cpu runs the same checks on the CPU (a dry run of the script itself).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert, check, checkAsync, finish } from '../../tensor-native/scripts/check-harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const packages = join(here, '..', '..');
const flodl = await import(join(packages, 'tensor-native', 'dist', 'index.js'));
const autograd = await import(join(packages, 'autograd', 'dist', 'index.js'));
const nn = await import(join(packages, 'nn', 'dist', 'index.js'));
const data = await import(join(packages, 'trainer', 'dist', 'data', 'index.js'));
const { Trainer } = await import(join(packages, 'trainer', 'dist', 'index.js'));
const cooperative = await import(join(packages, 'cooperative', 'dist', 'index.js'));
const { arange, cuda, keep, liveTensorCount, manualSeed, randn, randint, tidy, Tensor } = flodl;
const { DataLoader, FashionMnist, TensorDataset } = data;

const device = process.env.FLODL_CHECK_DEVICE ?? 'cuda:0';
if (device !== 'cpu' && !cuda.isAvailable()) {
  console.log('no CUDA device: nothing to check (FLODL_CHECK_DEVICE=cpu runs the checks on the CPU)');
  process.exit(0);
}
console.log(`device ${device}${device === 'cpu' ? '' : ` (${cuda.deviceName(0)})`}`);

const allocated = () => (device === 'cpu' ? 0 : cuda.memoryAllocated(0));
function sameValues(a, b, what) {
  tidy(() => {
    assert(
      a.dtype === b.dtype && a.shape.join() === b.shape.join(),
      `${what}: ${a.describe()} vs ${b.describe()}`,
    );
    const difference = a.cpu().to('float64').sub(b.cpu().to('float64')).abs();
    assert(a.numel === 0 || difference.max().item() === 0, `${what}: values differ`);
  });
}
/** Every batch of one epoch of two loaders, compared tensor by tensor; checks the device. */
function sameEpoch(deviceLoader, cpuLoader, epoch) {
  const cpuBatches = [...cpuLoader.epoch(epoch)];
  let count = 0;
  for (const batch of deviceLoader.epoch(epoch)) {
    const reference = cpuBatches[count++];
    batch.tensors().forEach((tensor, position) => {
      assert(tensor.device === (device === 'cpu' ? 'cpu' : device), `batch on ${tensor.device}`);
      sameValues(tensor, reference[position], `epoch ${epoch} batch ${count} tensor ${position}`);
    });
    batch.dispose();
    reference.dispose();
  }
  assert(count === cpuBatches.length && count > 0, `${count} batches, expected ${cpuBatches.length}`);
}

const x = tidy(() => arange(5000 * 12, { dtype: 'float32' }).reshape(5000, 12));
const y = arange(5000, { dtype: 'int64' });
const tensors = new TensorDataset({ x, y });
x.dispose();
y.dispose();
const cpuLoader = new DataLoader(tensors, { batchSize: 64 });

check('resident TensorDataset: uploaded once, batches on the device equal the CPU ones', () => {
  const loader = new DataLoader(tensors, { batchSize: 64, device });
  assert(loader.isResident, 'not resident');
  for (const epoch of [0, 1]) sameEpoch(loader, cpuLoader, epoch);
  loader.dispose();
});

check('streaming TensorDataset: pinned, non-blocking copies equal the CPU batches', () => {
  const loader = new DataLoader(tensors, { batchSize: 64, device, resident: false, prefetch: 4 });
  assert(!loader.isResident, 'resident');
  sameEpoch(loader, cpuLoader, 2);
});

check('per-sample dataset collated on the CPU, then staged to the device', () => {
  const samples = {
    length: 300,
    get: (index) => [Tensor.from([index, -index], [2], { dtype: 'float32' }), Tensor.from(index)],
  };
  const loader = new DataLoader(samples, { batchSize: 32, device });
  const reference = new DataLoader(samples, { batchSize: 32 });
  sameEpoch(loader, reference, 0);
  const resident = new DataLoader(samples, { batchSize: 32, device, resident: true });
  assert(resident.isResident, 'not resident');
  sameEpoch(resident, reference, 1);
  resident.dispose();
});

check('FashionMnist-format data: uint8 resident on the device, scaled there', () => {
  const folder = mkdtempSync(join(tmpdir(), 'flodl-gpu-fashion-'));
  const count = 2000;
  const idx = (type, shape, bytes) => {
    const header = Buffer.alloc(4 + 4 * shape.length);
    header[2] = type;
    header[3] = shape.length;
    for (const [dim, size] of shape.entries()) header.writeUInt32BE(size, 4 + 4 * dim);
    return Buffer.concat([header, bytes]);
  };
  const pixels = Buffer.alloc(count * 784);
  for (let k = 0; k < pixels.length; k++) pixels[k] = (k * 7919) % 256;
  const labels = Buffer.from(Array.from({ length: count }, (_, k) => k % 10));
  writeFileSync(join(folder, 't10k-images-idx3-ubyte'), idx(8, [count, 28, 28], pixels));
  writeFileSync(join(folder, 't10k-labels-idx1-ubyte'), idx(8, [count], labels));
  for (const normalize of [false, true]) {
    const set = new FashionMnist({ root: folder, split: 'test', normalize });
    const loader = new DataLoader(set, { batchSize: 100, device });
    assert(loader.isResident, 'not resident');
    sameEpoch(loader, new DataLoader(set, { batchSize: 100 }), 0);
    loader.dispose();
    set.dispose();
  }
  rmSync(folder, { recursive: true, force: true });
});

check('prefetch holds at most prefetch + 1 batches; early exits free them', () => {
  const loader = new DataLoader(tensors, { batchSize: 64, device, resident: false, prefetch: 3 });
  const live = liveTensorCount();
  const memory = allocated();
  let most = 0;
  for (const batch of loader.epoch(0)) {
    most = Math.max(most, liveTensorCount() - live);
    batch.dispose();
  }
  assert(most === 2 * 4, `held ${most} tensors, expected ${2 * 4}`);
  for (const batch of loader.epoch(1)) {
    batch.dispose();
    break;
  }
  try {
    for (const batch of loader.epoch(2)) {
      batch.dispose();
      throw new Error('step failed');
    }
  } catch {}
  if (device !== 'cpu') cuda.synchronize(0);
  assert(liveTensorCount() === live, `${liveTensorCount() - live} tensors left`);
  assert(allocated() === memory, `device memory grew by ${allocated() - memory} bytes`);
});

check('2000 streamed batches keep device memory and live tensors flat', () => {
  const loader = new DataLoader(tensors, { batchSize: 32, device, resident: false });
  const live = liveTensorCount();
  let memory = -1;
  let batches = 0;
  for (let epoch = 0; batches < 2000; epoch++) {
    for (const batch of loader.epoch(epoch)) {
      tidy(() => batch.get('x').sum().item());
      batch.dispose();
      if (++batches === 200) memory = allocated();
      if (batches === 2000) break;
    }
  }
  assert(liveTensorCount() === live, `${liveTensorCount() - live} tensors left`);
  assert(allocated() <= memory, `device memory grew from ${memory} to ${allocated()}`);
});

check('training on device batches follows the CPU (float64 MLP, 30 steps)', () => {
  const features = keep(randn([640, 20], { dtype: 'float64' }));
  const targets = keep(randint(0, 4, [640]));
  const set = new TensorDataset([features, targets]);
  const run = (where) => {
    manualSeed(3);
    const model = new nn.Sequential(new nn.Linear(20, 32), new nn.ReLU(), new nn.Linear(32, 4));
    model.to({ device: where, dtype: 'float64' });
    const optimizer = new nn.Adam(model.parameters(), { lr: 1e-2 });
    const loader = new DataLoader(set, { batchSize: 64, device: where, resident: false });
    const losses = [];
    for (let epoch = 0; losses.length < 30; epoch++) {
      for (const batch of loader.epoch(epoch)) {
        tidy(() => {
          const loss = autograd.crossEntropy(model.forward(batch[0]), batch[1]);
          optimizer.zeroGrad();
          loss.backward();
          optimizer.step();
          losses.push(loss.item());
        });
        batch.dispose();
        if (losses.length === 30) break;
      }
    }
    optimizer.dispose();
    model.dispose();
    return losses;
  };
  const cpuLosses = run('cpu');
  const deviceLosses = run(device);
  const worst = Math.max(...cpuLosses.map((loss, k) => Math.abs(loss - deviceLosses[k]) / Math.abs(loss)));
  assert(worst < 1e-6, `relative difference ${worst}`);
  set.dispose();
  features.dispose();
  targets.dispose();
});

/** A classification set both tiers train on, and a factory that ignores its device argument. */
const tierFeatures = keep(randn([512, 16]));
const tierTargets = keep(randint(0, 3, [512]));
const tierSet = new TensorDataset([tierFeatures, tierTargets]);
const cpuBuilt = () => new nn.Sequential(new nn.Linear(16, 32), new nn.ReLU(), new nn.Linear(32, 3));
const tierStep = (model, batch) => autograd.crossEntropy(model.forward(batch[0]), batch[1]);
const onDevice = (tensor) => tensor.device === (device === 'cuda' ? 'cuda:0' : device);

await checkAsync(
  'the managed Trainer trains on the device a model its factory built on the CPU',
  async () => {
    const losses = [];
    let placed = false;
    const handle = Trainer.builder(
      cpuBuilt,
      (params) => new nn.Adam(params, { lr: 1e-2 }),
      (model, batch) => {
        placed ||= model.parameters().every(onDevice);
        return tierStep(model, batch);
      },
    )
      .dataset(tierSet)
      .batchSize(64)
      .numEpochs(4)
      .devices([device])
      .progress(false)
      .metricsFn((metrics) => losses.push(metrics.avgLoss))
      .run();
    const state = await handle.join();
    assert(placed, 'the model trained off the device');
    assert(losses.length === 4 && losses[3] < losses[0], `epoch losses ${losses.join(', ')}`);
    for (const tensor of [...state.params, ...state.buffers]) tensor.dispose();
  },
);

await checkAsync(
  'a cooperative Worker trains on the device a model its factory built on the CPU',
  async () => {
    const worker = await cooperative.Trainer.builder(
      cpuBuilt,
      (params) => new nn.Adam(params, { lr: 1e-2 }),
      tierStep,
    )
      .dataset(tierSet)
      .batchSize(64)
      .numEpochs(3)
      .devices([device])
      .progress(false)
      .intoWorker();
    const losses = [];
    let placed = true;
    for await (const plan of worker.plans()) {
      for await (const batch of worker.batches(plan)) {
        placed &&= worker.model.parameters().every(onDevice) && onDevice(batch[0]);
        const loss = tierStep(worker.model, batch);
        loss.backward();
        losses.push(loss.item());
        await worker.step(loss);
      }
    }
    const state = await worker.finish();
    assert(placed, 'the model or a batch was off the device');
    assert(losses.at(-1) < losses[0], `losses ${losses[0]} -> ${losses.at(-1)}`);
    for (const tensor of [...state.params, ...state.buffers]) tensor.dispose();
  },
);
/** A managed run of `tierSet` with SGD (capturable), with or without a CUDA graph; → the final state. */
async function managedRun(cudaGraph) {
  const losses = [];
  const handle = Trainer.builder(
    cpuBuilt,
    (params) => new nn.SGD(params, { lr: 0.05, momentum: 0.9 }),
    tierStep,
  )
    .dataset(tierSet)
    .batchSize(48) // 512 = 10 x 48 + 32: the last partial batch of each epoch trains eagerly
    .numEpochs(3)
    .devices([device])
    .progress(false)
    .cudaGraph(cudaGraph)
    .metricsFn((metrics) => losses.push(metrics.avgLoss))
    .run();
  const state = await handle.join();
  return { state, losses };
}

if (device !== 'cpu') {
  await checkAsync(
    'the managed Trainer with cudaGraph trains as the eager Trainer does, bit for bit',
    async () => {
      const eager = await managedRun(false);
      const graphed = await managedRun(true);
      assert(
        graphed.losses.length === 3 && graphed.losses[2] < graphed.losses[0],
        `epoch losses ${graphed.losses.join(', ')}`,
      );
      graphed.state.params.forEach((param, k) => {
        sameValues(param, eager.state.params[k], `parameter ${k}`);
      });
      for (const run of [eager, graphed])
        for (const tensor of [...run.state.params, ...run.state.buffers]) tensor.dispose();
    },
  );

  await checkAsync('a cooperative Worker with cudaGraph trains through worker.trainStep()', async () => {
    const worker = await cooperative.Trainer.builder(
      cpuBuilt,
      (params) => new nn.Adam(params, { lr: 1e-2, fused: true }),
      tierStep,
    )
      .dataset(tierSet)
      .batchSize(64)
      .numEpochs(3)
      .devices([device])
      .progress(false)
      .cudaGraph()
      .intoWorker();
    const losses = [];
    let refused = false;
    for await (const plan of worker.plans()) {
      for await (const _batch of worker.batches(plan)) {
        if (!refused) {
          // An eager loss: refused under cudaGraph, and freed here with its autograd graph (a
          // graph kept alive across the capture makes libtorch warn about its streams).
          const eager = tidy(() => tierStep(worker.model, _batch));
          try {
            await worker.step(eager);
          } catch (error) {
            refused = error.code === 'ERR_INVALID_ARGUMENT';
          } finally {
            eager.dispose();
          }
        }
        losses.push((await worker.trainStep()).loss);
      }
    }
    const state = await worker.finish();
    assert(refused, 'step(loss) was not refused under cudaGraph');
    assert(losses.length === 24 && losses.at(-1) < losses[0], `losses ${losses[0]} -> ${losses.at(-1)}`);
    for (const tensor of [...state.params, ...state.buffers]) tensor.dispose();
  });
}
tierSet.dispose();
tierFeatures.dispose();
tierTargets.dispose();

cpuLoader.dispose();
tensors.dispose();
finish(`; live tensors left: ${liveTensorCount()}`);
