// Fashion-MNIST with the cooperative Worker: the loop is ours (here: gradient accumulation over
// two batches per optimizer step, and a running training accuracy the managed tier does not
// track), the coordinator stays in charge of which samples, when to average, who evaluates.
//
//   node --import tsx cooperative/main.ts [--nproc N] [--mode MODE] [--epochs N] [--limit N]
//                                        [--accumulate K] [--batch-size N] [--lr X]
import { parseArgs } from 'node:util';
import {
  Adam,
  type BatchDataset,
  crossEntropy,
  cuda,
  type Device,
  FashionMnist,
  Flatten,
  type LaunchMode,
  Linear,
  ReLU,
  recordScalar,
  Sequential,
  setNumThreads,
  Trainer,
  tidy,
} from '@flodl/cooperative';

const { values: args } = parseArgs({
  options: {
    nproc: { type: 'string', default: '1' },
    mode: { type: 'string' },
    epochs: { type: 'string', default: '2' },
    limit: { type: 'string' },
    accumulate: { type: 'string', default: '2' },
    'batch-size': { type: 'string', default: '64' },
    lr: { type: 'string', default: '0.001' },
  },
});
const nproc = Number(args.nproc);
const accumulate = Number(args.accumulate);
if (nproc > 1 && !cuda.isAvailable()) setNumThreads(1);
const devices: Device[] = Array.from({ length: nproc }, (_, index) =>
  cuda.isAvailable() && cuda.deviceCount() >= nproc ? (`cuda:${index}` as Device) : 'cpu',
);

const train = new FashionMnist({ split: 'train', normalize: true });
const test = new FashionMnist({ split: 'test', normalize: true });
const limit = args.limit === undefined ? train.length : Math.min(Number(args.limit), train.length);
const data: BatchDataset = {
  length: limit,
  names: train.names,
  getBatch: (indices) => train.getBatch(indices),
};
const testBatch = Array.from({ length: 2000 }, (_, index) => index);

const builder = Trainer.builder(
  (device) => new Sequential(new Flatten(), new Linear(784, 256), new ReLU(), new Linear(256, 10)).to(device),
  (params) => new Adam(params, { lr: Number(args.lr) }),
  (model, batch) => crossEntropy(model.forward(batch.get('image')), batch.get('label')), // the managed tier's step
)
  .dataset(data)
  .batchSize(Number(args['batch-size']))
  .numEpochs(Number(args.epochs))
  .devices(devices)
  .evalFn((model) =>
    tidy(() => {
      const [images, labels] = test.getBatch(testBatch);
      return model.forward(images!).argmax(1).eq(labels!).float().mean().item() as number;
    }),
  );
if (args.mode) builder.mode(args.mode as LaunchMode);
const worker = await builder.intoWorker(); // the launcher of a --nproc run waits here, then exits

let correct = 0;
let seen = 0;
for (let plan = await worker.nextPlan(); plan; plan = await worker.nextPlan()) {
  let pending = 0;
  for (let batch = await worker.nextBatch(); batch; batch = await worker.nextBatch()) {
    const logits = worker.model.forward(batch.get('image'));
    const labels = batch.get('label');
    // Gradient accumulation: the loss of each of `accumulate` batches adds to the gradients.
    const loss = crossEntropy(logits, labels).div(accumulate);
    loss.backward();
    const hits = logits.argmax(1).eq(labels).sum().item() as number;
    correct += hits;
    seen += labels.shape[0] as number;
    recordScalar('trainAccuracy', hits / (labels.shape[0] as number)); // reaches EpochMetrics.scalars on a cluster
    pending += 1;
    if (pending < accumulate) continue; // the next nextBatch() frees this batch's tensors; the gradients stay
    pending = 0;
    if ((await worker.step(loss)).shutdown) break;
  }
  for (const metrics of worker.pollMetrics()) {
    console.log(
      `epoch ${metrics.epoch + 1}: loss ${metrics.avgLoss.toFixed(4)} (cohort), train accuracy ${(100 * (metrics.scalars.trainAccuracy ?? 0)).toFixed(1)}%`,
    );
  }
  console.log(
    `plan of epoch ${plan.epoch + 1} (${plan.partitionSize} samples): running train accuracy ${((100 * correct) / seen).toFixed(1)}%`,
  );
}
for (const [epoch, metric] of worker.pollEval())
  console.log(`eval after epoch ${epoch}: ${(metric * 100).toFixed(1)}%`);
const state = await worker.finish();
console.log(`done: ${state.params.length} trained tensors`);
train.dispose();
test.dispose();
