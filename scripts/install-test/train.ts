// TypeScript user script, type-checked (tsc --noEmit) under node16 and bundler resolution.
import {
  Adam,
  crossEntropy,
  type LaunchOptions,
  Linear,
  manualSeed,
  ReLU,
  randint,
  randn,
  Sequential,
  type Tensor,
  tidy,
} from '@flodl/cooperative';

manualSeed(1);
const model = new Sequential(new Linear(4, 16), new ReLU(), new Linear(16, 3));
const optimizer = new Adam(model.parameters(), { lr: 0.05 });
using x = randn([64, 4]);
const y: Tensor = randint(0, 3, [64]);
const losses: number[] = [];
for (let step = 0; step < 40; step++) {
  losses.push(
    tidy(() => {
      const loss = crossEntropy(model.forward(x), y);
      optimizer.zeroGrad();
      loss.backward();
      optimizer.step();
      return loss.item() as number;
    }),
  );
}
const options: LaunchOptions = { nproc: 2, script: 'train.js' };
console.log(losses.at(-1), options.nproc);

// The types are real, not `any`: each line below must be a type error.
// @ts-expect-error Linear takes numbers
new Linear('4', 16);
// @ts-expect-error nproc is a number
const bad: LaunchOptions = { nproc: 'two', script: 'train.js' };
console.log(bad);
