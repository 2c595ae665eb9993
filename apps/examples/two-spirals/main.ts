// Two interleaved spirals, classified by a small MLP trained with a hand-written loop:
// forward, cross entropy, backward, Adam step, in tidy scopes so nothing leaks.
import { crossEntropy } from '@flodl/autograd';
import { Adam, Linear, Sequential, Tanh } from '@flodl/nn';
import {
  arange,
  cat,
  keep,
  liveTensorCount,
  manualSeed,
  ones,
  randn,
  type Tensor,
  tidy,
  zeros,
} from '@flodl/tensor-native';

const pointsPerClass = 500;
const steps = 600;

manualSeed(7);

/** Two spirals of `pointsPerClass` points each, with a little noise; labels 0 and 1. */
function spirals(): { points: Tensor; labels: Tensor } {
  return tidy(() => {
    const t = arange(pointsPerClass, { dtype: 'float32' })
      .div(pointsPerClass)
      .mul(3 * Math.PI)
      .add(0.5);
    const radius = t.div(3 * Math.PI);
    const arm = (phase: number) =>
      cat([radius.mul(t.add(phase).cos()).unsqueeze(1), radius.mul(t.add(phase).sin()).unsqueeze(1)], 1);
    const points = cat([arm(0), arm(Math.PI)], 0).add(randn([2 * pointsPerClass, 2]).mul(0.02));
    const labels = cat([
      zeros([pointsPerClass], { dtype: 'int64' }),
      ones([pointsPerClass], { dtype: 'int64' }),
    ]);
    return { points, labels };
  });
}

const { points, labels } = spirals();
keep(points);
keep(labels);
const model = new Sequential(
  new Linear(2, 64),
  new Tanh(),
  new Linear(64, 64),
  new Tanh(),
  new Linear(64, 2),
);
const optimizer = new Adam(model.parameters(), { lr: 0.01 });
console.log(`two spirals: ${2 * pointsPerClass} points; model:\n${model}`);

const started = performance.now();
for (let step = 1; step <= steps; step++) {
  const loss = tidy(() => {
    const loss = crossEntropy(model.forward(points), labels);
    optimizer.zeroGrad();
    loss.backward();
    optimizer.step();
    return loss.item() as number;
  });
  if (step === 1 || step % 100 === 0)
    console.log(`step ${String(step).padStart(4)}  loss ${loss.toFixed(4)}`);
}
const accuracy = tidy(() => model.forward(points).argmax(1).eq(labels).float().mean().item() as number);
console.log(
  `accuracy ${(accuracy * 100).toFixed(1)}% after ${steps} full-batch Adam steps in ${((performance.now() - started) / 1000).toFixed(1)} s`,
);
optimizer.dispose();
model.dispose();
points.dispose();
labels.dispose();
console.log(`live tensors left: ${liveTensorCount()}`);
