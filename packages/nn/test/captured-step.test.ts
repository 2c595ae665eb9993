import {
  cuda,
  FlodlError,
  liveTensorCount,
  manualSeed,
  randint,
  randn,
  type Tensor,
  tidy,
} from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import {
  Adam,
  CapturedStep,
  CrossEntropyLoss,
  clipGradNorm_,
  Linear,
  ReLU,
  RMSprop,
  Sequential,
  SGD,
} from '../src/index.js';
import type { Optimizer } from '../src/optim/optimizer.js';

const code = (code: string) => expect.objectContaining({ code });
const hasCuda = cuda.isAvailable();

function mlp(device: 'cpu' | 'cuda') {
  manualSeed(7);
  return new Sequential(new Linear(32, 64), new ReLU(), new Linear(64, 10)).to({ device });
}

function batches(count: number, rows = 16): Tensor[][] {
  manualSeed(11);
  return Array.from({ length: count }, () => [
    randn([rows, 32], { device: 'cuda' }),
    randint(0, 10, [rows], { device: 'cuda' }),
  ]);
}

type Make = (model: Sequential) => Optimizer;

/** Trains `data` eagerly and captured from the same start; → both models' parameters. */
function trainBoth(
  make: Make,
  data: Tensor[][],
  options: { maxGradNorm?: number; lrAt?: (step: number) => number } = {},
) {
  const criterion = new CrossEntropyLoss();
  const eager = mlp('cuda');
  const captured = mlp('cuda');
  const eagerOptimizer = make(eager);
  const capturedOptimizer = make(captured);
  const step = new CapturedStep(capturedOptimizer, ([x, y]) => criterion.forward(captured.forward(x!), y!), {
    maxGradNorm: options.maxGradNorm,
  });
  const losses: [number, number][] = [];
  data.forEach(([x, y], k) => {
    if (options.lrAt) {
      eagerOptimizer.setLr(options.lrAt(k));
      capturedOptimizer.setLr(options.lrAt(k));
    }
    const eagerLoss = tidy(() => {
      eagerOptimizer.zeroGrad();
      const loss = criterion.forward(eager.forward(x!), y!);
      loss.backward();
      if (options.maxGradNorm !== undefined) clipGradNorm_(eager.parameters(), options.maxGradNorm);
      eagerOptimizer.step();
      return loss.item() as number;
    });
    losses.push([eagerLoss, step.run([x!, y!]).item() as number]);
  });
  return { eager, captured, step, losses, optimizers: [eagerOptimizer, capturedOptimizer] };
}

function expectSameParameters(a: Sequential, b: Sequential, exact: boolean) {
  const left = a.parameters();
  const right = b.parameters();
  left.forEach((param, k) => {
    if (exact) expect(param.allclose(right[k]!, { rtol: 0, atol: 0 }), `parameter ${k}`).toBe(true);
    else expect(param.allclose(right[k]!, { rtol: 1e-5, atol: 1e-6 }), `parameter ${k}`).toBe(true);
  });
}

describe('CapturedStep', () => {
  it('refuses an optimizer that updates on the host, and bad options, with typed errors', () => {
    const model = mlp('cpu');
    const loss = () => model.forward(randn([2, 32])).sum();
    expect(() => new CapturedStep(new Adam(model.parameters()), loss)).toThrowError(code('ERR_CUDA_GRAPH'));
    expect(() => new CapturedStep(new RMSprop(model.parameters()), loss)).toThrowError(
      code('ERR_CUDA_GRAPH'),
    );
    const sgd = new SGD(model.parameters(), { lr: 0.1 });
    expect(() => new CapturedStep(sgd, loss, { warmup: 0 })).toThrowError(code('ERR_INVALID_ARGUMENT'));
    expect(() => new CapturedStep(sgd, loss, { maxGradNorm: -1 })).toThrowError(code('ERR_INVALID_ARGUMENT'));
    expect(() => new CapturedStep(sgd, loss, { warm: 3 } as never)).toThrowError(
      code('ERR_INVALID_ARGUMENT'),
    );
    expect(() => new CapturedStep({} as never, loss)).toThrowError(code('ERR_INVALID_ARGUMENT'));
    const step = new CapturedStep(sgd, loss);
    expect(() => step.run([randn([2, 32])])).toThrowError(code('ERR_DEVICE'));
    expect(() => step.run([])).toThrowError(code('ERR_INVALID_ARGUMENT'));
    step.dispose();
    expect(() => step.run([randn([2, 32])])).toThrowError(code('ERR_DISPOSED'));
    try {
      new CapturedStep(new Adam(model.parameters()), loss);
    } catch (error) {
      expect(FlodlError.isInstance(error) && error.got).toMatch(/fused: true/);
    }
  });

  it.skipIf(!hasCuda)('trains as the eager loop does: SGD with momentum, bit for bit', () =>
    tidy(() => {
      const run = trainBoth(
        (m) => new SGD(m.parameters(), { lr: 0.05, momentum: 0.9, weightDecay: 1e-4 }),
        batches(12),
      );
      expect(run.step.captures).toBe(1);
      expect(run.step.replays).toBe(9);
      for (const [eager, captured] of run.losses) expect(captured).toBe(eager);
      expectSameParameters(run.eager, run.captured, true);
      run.step.dispose();
    }),
  );

  it.skipIf(!hasCuda)(
    'trains as the eager loop does: Adam at its defaults (fused on CUDA), with gradient clipping',
    () =>
      tidy(() => {
        const run = trainBoth((m) => new Adam(m.parameters(), { lr: 1e-2 }), batches(12), {
          maxGradNorm: 0.5,
        });
        expect(run.step.captures).toBe(1);
        run.losses.forEach(([eager, captured]) => {
          expect(captured).toBeCloseTo(eager, 5);
        });
        expectSameParameters(run.eager, run.captured, false);
        // The host-side step counts follow the replays (state dicts stay right).
        const state = run.optimizers[1]!.getState(run.captured.parameters()[0]!) as { step: number };
        expect(state.step).toBe(12);
        run.step.dispose();
      }),
  );

  it.skipIf(!hasCuda)('captures again when the learning rate changes', () =>
    tidy(() => {
      const run = trainBoth((m) => new SGD(m.parameters(), { lr: 0.05 }), batches(10), {
        lrAt: (step) => (step < 6 ? 0.05 : 0.01),
      });
      expect(run.step.captures).toBe(2);
      expectSameParameters(run.eager, run.captured, true);
      run.step.dispose();
    }),
  );

  it.skipIf(!hasCuda)('refuses other shapes and a host read inside the step, and stays usable', () => {
    const before = liveTensorCount();
    const model = mlp('cuda');
    const optimizer = new SGD(model.parameters(), { lr: 0.05 });
    const criterion = new CrossEntropyLoss();
    const step = new CapturedStep(optimizer, ([x, y]) => criterion.forward(model.forward(x!), y!), {
      warmup: 1,
    });
    const data = batches(4);
    tidy(() => {
      step.run(data[0]!);
      step.run(data[1]!);
      const [short] = batches(1, 9);
      expect(() => step.run(short!)).toThrowError(code('ERR_CUDA_GRAPH'));
      expect(step.run(data[2]!).item()).toBeGreaterThan(0);
    });
    const reads = new CapturedStep(
      optimizer,
      ([x, y]) => {
        const loss = criterion.forward(model.forward(x!), y!);
        if ((loss.item() as number) > 1e9) throw new Error('unreachable');
        return loss;
      },
      { warmup: 1 },
    );
    tidy(() => {
      reads.run(data[0]!);
      expect(() => reads.run(data[1]!)).toThrowError(code('ERR_CUDA_GRAPH'));
      expect(model.forward(data[0]![0]!).sum().item()).toEqual(expect.any(Number));
    });
    for (const s of [step, reads]) s.dispose();
    optimizer.dispose();
    for (const batch of data) for (const t of batch) t.dispose();
    for (const param of model.parameters()) param.zeroGrad();
    model.dispose?.();
    expect(liveTensorCount()).toBeLessThanOrEqual(before + model.parameters().length);
  });

  it.skipIf(!hasCuda)('keeps the live tensor count flat over many replays', () => {
    const model = mlp('cuda');
    const optimizer = new Adam(model.parameters(), { lr: 1e-3, fused: true });
    const criterion = new CrossEntropyLoss();
    const step = new CapturedStep(optimizer, ([x, y]) => criterion.forward(model.forward(x!), y!));
    const data = batches(2);
    let after10 = 0;
    for (let k = 0; k < 60; k++) {
      tidy(() => step.run(data[k % 2]!).item());
      if (k === 10) after10 = liveTensorCount();
    }
    expect(liveTensorCount()).toBe(after10);
    step.dispose();
    optimizer.dispose();
  });
});
