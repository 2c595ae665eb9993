// CommonJS user script (`npm init -y` projects): the same loop through require().
const {
  Adam,
  crossEntropy,
  Linear,
  manualSeed,
  randint,
  randn,
  ReLU,
  Sequential,
  Tensor,
  tidy,
} = require('@flodl/cooperative');

manualSeed(1);
const model = new Sequential(new Linear(4, 16), new ReLU(), new Linear(16, 3));
const optimizer = new Adam(model.parameters(), { lr: 0.05 });
const x = randn([64, 4]);
const y = randint(0, 3, [64]);
if (!(x instanceof Tensor)) throw new Error('cjs: a tensor is not a Tensor');
const losses = [];
for (let step = 0; step < 40; step++) {
  losses.push(
    tidy(() => {
      const loss = crossEntropy(model.forward(x), y);
      optimizer.zeroGrad();
      loss.backward();
      optimizer.step();
      return loss.item();
    }),
  );
}
const [first, last] = [losses[0], losses.at(-1)];
console.log(`cjs: loss ${first.toFixed(4)} -> ${last.toFixed(4)}`);
if (!(last < first * 0.7)) {
  console.error('cjs: the loss did not fall');
  process.exit(1);
}
