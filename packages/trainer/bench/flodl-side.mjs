// The flodl side of `pnpm bench:train` (and `bench:kernels`): one timed training run of a model
// of bench/models.mjs on synthetic data resident on the device, eager or with the whole step
// captured into a CUDA graph.
import { crossEntropy } from '@flodl/autograd';
import { Adam, CapturedStep } from '@flodl/nn';
import { cuda, liveTensorCount, manualSeed, randint, randn, tidy } from '@flodl/tensor-native';

/**
 * One timed run of one side; `updateSeconds` is the part of `seconds` spent in the optimizer's
 * step.
 * @typedef {{ samplesPerSecond: number, seconds: number, updateSeconds: number, finalLoss: number }} RunResult
 */

/**
 * Trains `spec` for `warmup` untimed and `steps` timed steps on synthetic data generated once
 * on `device`; each step runs in `tidy`, so the live tensor count must not move while timed.
 * @param {import('./models.mjs').ModelSpec} spec
 * @param {{ steps: number, warmup: number }} counts
 * @param {'cpu' | 'cuda'} device
 * @param {'single' | 'foreach' | 'fused' | 'defaults'} adam
 * @returns {RunResult}
 */
export function trainFlodl(spec, counts, device, adam) {
  const liveBefore = liveTensorCount();
  manualSeed(0);
  const model = spec.build().to(device);
  const inputs = randn([spec.batch, ...spec.inputShape], { device });
  const labels = randint(0, spec.classes, [spec.batch], { device });
  const optimizer = new Adam(model.parameters(), {
    lr: 1e-3,
    // defaults: no option given (on CUDA flodl's default is the fused kernel, PyTorch's foreach).
    ...(adam === 'fused' ? { fused: true } : {}),
    ...(adam === 'single' || adam === 'foreach' ? { fused: false, foreach: adam === 'foreach' } : {}),
  });
  let updateMs = 0;
  const step = () =>
    tidy(() => {
      const loss = crossEntropy(model.forward(inputs), labels);
      optimizer.zeroGrad();
      loss.backward();
      const before = performance.now();
      optimizer.step();
      updateMs += performance.now() - before;
      return loss.detach();
    });
  for (let index = 0; index < counts.warmup; index++) step().dispose();
  cuda.synchronize();
  const liveAtStart = liveTensorCount();
  updateMs = 0;
  const started = performance.now();
  for (let index = 0; index < counts.steps - 1; index++) step().dispose();
  const lastLoss = step();
  cuda.synchronize();
  const seconds = (performance.now() - started) / 1000;
  const finalLoss = lastLoss.item();
  lastLoss.dispose();
  const liveAtEnd = liveTensorCount();
  disposeAll([optimizer, model, inputs, labels]);
  checkFlat(spec.name, liveBefore, liveAtStart, liveAtEnd);
  return {
    samplesPerSecond: (counts.steps * spec.batch) / seconds,
    seconds,
    updateSeconds: updateMs / 1000,
    finalLoss,
  };
}

/** Frees what a run made. */
function disposeAll(things) {
  for (const thing of things) thing.dispose();
}

/** Throws unless the live tensor count stayed flat over the timed steps and came back over the run. */
function checkFlat(label, liveBefore, liveAtStart, liveAtEnd) {
  if (liveAtEnd !== liveAtStart || liveTensorCount() !== liveBefore) {
    throw new Error(
      `${label}: live tensors moved (${liveAtStart} → ${liveAtEnd} over the timed steps, ` +
        `${liveBefore} → ${liveTensorCount()} over the run)`,
    );
  }
}

/**
 * As trainFlodl, with the whole step (forward, loss, backward, fused Adam) captured into a CUDA
 * graph by CapturedStep: the untimed steps include its warm-up and its capture.
 * @param {import('./models.mjs').ModelSpec} spec
 * @param {{ steps: number, warmup: number }} counts
 * @returns {RunResult}
 */
export function trainFlodlGraph(spec, counts) {
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
  disposeAll([step, optimizer, model, inputs, labels]);
  checkFlat(`${spec.name} (CUDA graph)`, liveBefore, liveAtStart, liveAtEnd);
  // The update is inside the graph: its time is the whole step's.
  return {
    samplesPerSecond: (counts.steps * spec.batch) / seconds,
    seconds,
    updateSeconds: seconds,
    finalLoss,
  };
}
