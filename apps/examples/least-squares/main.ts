// Least-squares regression with the tensor core: build a noisy linear data set, solve the
// normal equations (XᵀX) w = Xᵀy in libtorch, then refine a second fit by gradient descent
// written with plain tensor ops, and report both against the true coefficients.
import {
  buildInfo,
  cat,
  keep,
  linalg,
  liveTensorCount,
  manualSeed,
  ones,
  randn,
  Tensor,
  tidy,
} from '@flodl/tensor-native';

const samples = 4096;
const trueWeights = [2.0, -3.0, 0.5, 1.25];
const trueBias = 0.75;
const noise = 0.1;

function format(values: ArrayLike<number>): string {
  return `[${Array.from(values, (value) => value.toFixed(4).padStart(8)).join(', ')}]`;
}

manualSeed(42);
const info = buildInfo();
console.log(`flodl tensor core on libtorch ${info.torchVersion} (${info.cuda ? 'CUDA' : 'CPU'} build)`);
console.log(`data: ${samples} samples, ${trueWeights.length} features, y = X·w + b + N(0, ${noise}²)`);

const started = performance.now();
const { features, targets } = tidy(() => {
  const features = randn([samples, trueWeights.length], { dtype: 'float64' });
  const weights = Tensor.from(trueWeights, [trueWeights.length, 1], { dtype: 'float64' });
  const targets = features
    .matmul(weights)
    .add(trueBias)
    .add(randn([samples, 1], { dtype: 'float64' }).mul(noise));
  return { features, targets };
});

// 1. Closed form: append a column of ones for the bias and solve the normal equations.
const closedForm = tidy(() => {
  const design = cat([features, ones([samples, 1], { dtype: 'float64' })], 1);
  const gram = design.t().matmul(design);
  const moment = design.t().matmul(targets);
  const solution = linalg.solve(gram, moment);
  const residual = design.matmul(solution).sub(targets);
  return { solution: solution.flatten(), rms: residual.square().mean().sqrt().item() };
});
const closedFormValues = closedForm.solution.toTypedArray() as Float64Array;
console.log('\nnormal equations (linalg.solve):');
console.log(`  fitted  w, b = ${format(closedFormValues)}`);
console.log(`  true    w, b = ${format([...trueWeights, trueBias])}`);
console.log(`  residual RMS = ${closedForm.rms.toFixed(4)} (noise level ${noise})`);

// 2. Gradient descent on the mean squared error, gradients written out as tensor ops.
let weights = keep(Tensor.from(new Float64Array(trueWeights.length), [trueWeights.length, 1]));
let bias = 0;
const learningRate = 0.1;
for (let step = 1; step <= 200; step++) {
  const loss = tidy(() => {
    const error = features.matmul(weights).add(bias).sub(targets);
    const gradWeights = features
      .t()
      .matmul(error)
      .mul(2 / samples);
    const gradBias = error.mean().item() * 2;
    const next = keep(weights.sub(gradWeights, learningRate));
    weights.dispose();
    weights = next;
    bias -= learningRate * gradBias;
    return error.square().mean().item();
  });
  if (step === 1 || step % 50 === 0)
    console.log(`  gradient descent step ${String(step).padStart(3)}: mse ${loss.toFixed(6)}`);
}
const descentValues = [...(weights.toTypedArray() as Float64Array), bias];
console.log('gradient descent (200 steps, lr 0.1):');
console.log(`  fitted  w, b = ${format(descentValues)}`);
const gap = Math.max(...descentValues.map((value, k) => Math.abs(value - closedFormValues[k]!)));
console.log(`  largest gap to the closed form: ${gap.toExponential(2)}`);

for (const tensor of [features, targets, closedForm.solution, weights]) tensor.dispose();
console.log(
  `\ndone in ${(performance.now() - started).toFixed(0)} ms; live tensors left: ${liveTensorCount()}`,
);
