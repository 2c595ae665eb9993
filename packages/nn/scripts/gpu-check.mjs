#!/usr/bin/env node
// CUDA checks of autograd and nn that need no test runner (run on a GPU machine after
// packages/tensor-native/scripts/gpu-run.sh built the addon): training steps on CUDA match
// the CPU, cuDNN recurrent layers, foreach SGD/Adam/AdamW, fused Adam/AdamW, float16 autocast
// with GradScaler.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { assert, check, finish } from '../../tensor-native/scripts/check-harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const packages = join(here, '..', '..');
const flodl = await import(join(packages, 'tensor-native', 'dist', 'index.js'));
const autograd = await import(join(packages, 'autograd', 'dist', 'index.js'));
const nn = await import(join(packages, 'nn', 'dist', 'index.js'));
const { tidy, manualSeed, randn, randint, cuda, keep, liveTensorCount } = flodl;

function trainCnn(device, steps) {
  manualSeed(5);
  const model = new nn.Sequential(
    new nn.Conv2d(1, 8, 3, { padding: 1 }),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Flatten(),
    new nn.Linear(8 * 8 * 8, 10),
  );
  model.to({ device, dtype: 'float64' });
  const images = keep(randn([32, 1, 16, 16], { dtype: 'float64' }).to(device));
  const labels = keep(randint(0, 10, [32]).to(device));
  const optimizer = new nn.AdamW(model.parameters(), { lr: 1e-2 });
  const losses = [];
  for (let step = 0; step < steps; step++) {
    tidy(() => {
      const loss = autograd.crossEntropy(model.forward(images), labels);
      losses.push(loss.item());
      optimizer.zeroGrad();
      loss.backward();
      optimizer.step();
    });
  }
  optimizer.dispose();
  model.dispose();
  images.dispose();
  labels.dispose();
  return losses;
}

check('a CNN trained on CUDA follows the CPU loss curve (float64)', () => {
  const onCpu = trainCnn('cpu', 30);
  const onGpu = trainCnn('cuda', 30);
  for (const [step, loss] of onGpu.entries()) {
    assert(
      Math.abs(loss - onCpu[step]) <= 1e-6 * Math.abs(onCpu[step]),
      `step ${step}: cuda ${loss} cpu ${onCpu[step]}`,
    );
  }
  assert(onGpu.at(-1) < onGpu[0] / 2, 'loss did not fall');
});

check('cuDNN LSTM and GRU: forward and backward match the CPU', () =>
  tidy(() => {
    for (const Layer of [nn.LSTM, nn.GRU]) {
      manualSeed(9);
      const cpuLayer = new Layer(8, 16, { numLayers: 2, bidirectional: true, batchFirst: true }).to(
        'float64',
      );
      const gpuLayer = new Layer(8, 16, { numLayers: 2, bidirectional: true, batchFirst: true }).to(
        'float64',
      );
      gpuLayer.loadStateDict(cpuLayer.stateDict());
      gpuLayer.to('cuda');
      const input = randn([4, 7, 8], { dtype: 'float64' });
      const cpuOut = cpuLayer.forward(input).output;
      const gpuOut = gpuLayer.forward(input.cuda()).output;
      assert(gpuOut.cpu().allclose(cpuOut, { atol: 1e-8 }), `${Layer.name} forward differs`);
      cpuOut.sum().backward();
      gpuOut.sum().backward();
      const [cpuGrad, gpuGrad] = [cpuLayer.parameters()[0].grad, gpuLayer.parameters()[0].grad];
      assert(gpuGrad.cpu().allclose(cpuGrad, { atol: 1e-8 }), `${Layer.name} gradient differs`);
      cpuLayer.dispose();
      gpuLayer.dispose();
    }
  }),
);

check('cuDNN RNN weights live in one flat buffer through to(), loadStateDict and optimizer steps', () =>
  tidy(() => {
    for (const Layer of [nn.LSTM, nn.GRU]) {
      const layer = new Layer(8, 16, { numLayers: 2, bidirectional: true }).to('cuda');
      const flat = () => layer.parameters().every((p) => p.sharesMemoryWith(layer.parameters()[0]));
      assert(flat(), `${Layer.name}: weights not flattened after to('cuda')`);
      layer.loadStateDict(layer.stateDict());
      const optimizer = new nn.Adam(layer.parameters(), { lr: 1e-3 });
      for (let step = 0; step < 3; step++) {
        optimizer.zeroGrad();
        layer
          .forward(randn([5, 3, 8], { device: 'cuda' }))
          .output.square()
          .mean()
          .backward();
        optimizer.step();
      }
      assert(flat(), `${Layer.name}: weights left the flat buffer`);
      layer.to('float64');
      assert(flat(), `${Layer.name}: weights not re-flattened after to('float64')`);
      optimizer.dispose();
      layer.dispose();
    }
    // Built directly on CUDA (the default device), the constructor flattens.
    flodl.setDefaultDevice('cuda');
    try {
      const layer = new nn.LSTM(4, 8);
      assert(
        layer.parameters().every((p) => p.sharesMemoryWith(layer.parameters()[0])),
        'constructor did not flatten',
      );
      layer.dispose();
    } finally {
      flodl.setDefaultDevice('cpu');
    }
  }),
);

/**
 * Two copies of two CUDA weights, stepped 20 times with the same random gradients: `multi` by
 * `make(multi, {})` (the default, foreach), `single` by `make(single, { foreach: false })`;
 * `beforeStep(weights)` runs on each copy before each step.
 */
function stepTwins(make, beforeStep = () => {}) {
  const starts = [randn([64, 32], { device: 'cuda' }), randn([32], { device: 'cuda' })];
  const multi = starts.map((start) => start.clone().requiresGrad_());
  const single = starts.map((start) => start.clone().requiresGrad_());
  const foreach = make(multi, {});
  const plain = make(single, { foreach: false });
  for (let step = 0; step < 20; step++) {
    const gradients = starts.map((start) => randn(start.shape, { device: 'cuda' }));
    for (const [weights, optimizer] of [
      [multi, foreach],
      [single, plain],
    ]) {
      for (const [k, weight] of weights.entries()) weight.setGrad(gradients[k].clone());
      beforeStep(weights);
      optimizer.step();
    }
  }
  return { multi, single, foreach, plain };
}

check('foreach Adam and AdamW (the CUDA default) match the per-parameter update', () =>
  tidy(() => {
    assert(flodl.aten.has('foreachAdam'), 'no foreach kernels in this build');
    for (const Kind of [nn.Adam, nn.AdamW]) {
      for (const [amsgrad, maximize] of [
        [false, false],
        [true, true],
      ]) {
        const options = { lr: 1e-2, weightDecay: 0.1, amsgrad, maximize };
        const { multi, single, foreach, plain } = stepTwins(
          (weights, extra) => new Kind(weights, { ...options, ...extra }),
        );
        for (const [k, weight] of multi.entries()) {
          assert(
            weight.allclose(single[k], { atol: 1e-6, rtol: 1e-5 }),
            `${Kind.name} amsgrad=${amsgrad} differs`,
          );
        }
        foreach.dispose();
        plain.dispose();
      }
    }
  }),
);

check(
  'foreach SGD, clipGradNorm_ and zeroGrad on CUDA (multi-tensor kernels) match the per-parameter ops',
  () =>
    tidy(() => {
      for (const options of [
        { lr: 0.1, momentum: 0.9, nesterov: true, weightDecay: 0.01 },
        { lr: 0.05, momentum: 0.5, dampening: 0.2, maximize: true },
      ]) {
        const { multi, single, foreach, plain } = stepTwins(
          (weights, extra) => new nn.SGD(weights, { ...options, ...extra }),
          (weights) => nn.clipGradNorm_(weights, 5),
        );
        for (const [k, weight] of multi.entries()) {
          assert(
            weight.allclose(single[k], { atol: 1e-6, rtol: 1e-5 }),
            `SGD ${JSON.stringify(options)} differs`,
          );
        }
        foreach.zeroGrad(false);
        assert(
          multi.every((weight) => weight.grad.abs().sum().item() === 0),
          'zeroGrad(false) left a gradient non-zero',
        );
        foreach.zeroGrad();
        assert(
          multi.every((weight) => weight.grad === null),
          'zeroGrad() left a gradient',
        );
        foreach.dispose();
        plain.dispose();
      }
    }),
);

check('fused Adam and AdamW match the per-parameter update', () =>
  tidy(() => {
    assert(flodl.aten.has('fusedAdam'), 'no fused kernel in this build');
    for (const Kind of [nn.Adam, nn.AdamW]) {
      for (const amsgrad of [false, true]) {
        const start = randn([256, 64], { device: 'cuda' });
        const fusedWeight = start.clone().requiresGrad_();
        const plainWeight = start.clone().requiresGrad_();
        const options = { lr: 1e-2, weightDecay: 0.1, amsgrad };
        const fused = new Kind([fusedWeight], { ...options, fused: true });
        const plain = new Kind([plainWeight], options);
        for (let step = 0; step < 20; step++) {
          for (const [weight, optimizer] of [
            [fusedWeight, fused],
            [plainWeight, plain],
          ]) {
            tidy(() => {
              optimizer.zeroGrad();
              weight.sin().mul(weight).sum().backward();
              optimizer.step();
            });
          }
        }
        assert(
          fusedWeight.allclose(plainWeight, { rtol: 1e-5, atol: 1e-6 }),
          `${Kind.name} amsgrad=${amsgrad} differs`,
        );
        fused.dispose();
        plain.dispose();
      }
    }
  }),
);

check('float16 autocast on CUDA with GradScaler: steps run, an overflow is skipped', () =>
  tidy(() => {
    const model = new nn.Linear(64, 64).to('cuda');
    const optimizer = new nn.SGD(model.parameters(), { lr: 0.1 });
    const scaler = new nn.GradScaler();
    const input = randn([32, 64], { device: 'cuda' });
    const dtype = nn.autocast('float16', () => model.forward(input).dtype, { device: 'cuda' });
    assert(dtype === 'float16', `autocast gave ${dtype}`);
    const loss = nn.autocast('float16', () => model.forward(input).float().square().mean(), {
      device: 'cuda',
    });
    scaler.scale(loss).backward();
    assert(scaler.step(optimizer) === true, 'a finite step was skipped');
    scaler.update();
    optimizer.zeroGrad();
    const overflow = nn.autocast('float16', () => model.forward(input.mul(1e30)).float().sum(), {
      device: 'cuda',
    });
    scaler.scale(overflow).backward();
    assert(scaler.step(optimizer) === false, 'an overflowing step ran');
    scaler.update();
    assert(scaler.getScale() === 32768, `scale ${scaler.getScale()}`);
    optimizer.dispose();
    model.dispose();
  }),
);

check('memory: 2000 CUDA training steps keep allocated bytes and live tensors flat', () => {
  const model = new nn.Sequential(new nn.Linear(128, 256), new nn.ReLU(), new nn.Linear(256, 10)).to('cuda');
  const optimizer = new nn.Adam(model.parameters(), { lr: 1e-3, fused: true });
  const input = keep(randn([64, 128], { device: 'cuda' }));
  const labels = keep(randint(0, 10, [64]).to('cuda'));
  const samples = [];
  const live = [];
  for (let step = 0; step < 2000; step++) {
    tidy(() => {
      optimizer.zeroGrad();
      autograd.crossEntropy(model.forward(input), labels).backward();
      optimizer.step();
    });
    if (step % 500 === 499) {
      cuda.synchronize();
      samples.push(cuda.memoryAllocated());
      live.push(liveTensorCount());
    }
  }
  assert(new Set(samples).size === 1, `allocated moved: ${samples.join(', ')}`);
  assert(new Set(live).size === 1, `live tensors moved: ${live.join(', ')}`);
  optimizer.dispose();
  model.dispose();
  input.dispose();
  labels.dispose();
});

finish();
