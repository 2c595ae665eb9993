// The cooperative Worker on one device (floDl's cooperative tests, ported) and its parity with
// the managed Trainer.
import { describe, expect, it } from 'vitest';
import {
  FlodlError,
  Linear,
  liveTensorCount,
  manualSeed,
  mseLoss,
  randn,
  SGD,
  type Tensor,
  TensorDataset,
  Trainer,
  toBytes,
} from '../src/index.js';

/** floDl's DeterministicDataset: inputs full(v), targets full(v·0.5 + 0.2), v a function of the index. */
function deterministic(n: number): TensorDataset {
  const values = Array.from({ length: n }, (_, index) => (index % 17) * 0.05 + 0.1);
  const x = randn([n, 4]).mul(0);
  const y = randn([n, 2]).mul(0);
  values.forEach((value, row) => {
    x.narrow(0, row, 1).fill_(value);
    y.narrow(0, row, 1).fill_(value * 0.5 + 0.2);
  });
  return new TensorDataset([x, y]);
}

const builder = (data: TensorDataset, epochs = 2) =>
  Trainer.builder(
    () => new Linear(4, 2),
    (params) => new SGD(params, { lr: 0.01 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  )
    .dataset(data)
    .batchSize(4)
    .numEpochs(epochs)
    .devices(['cpu']);

const hex = (tensors: Tensor[]) => tensors.map((tensor) => Buffer.from(toBytes(tensor)).toString('hex'));

describe('cooperative Worker, one device', () => {
  it('trains and finishes: every step says no shutdown, 8 steps, 2 parameters', async () => {
    const worker = await builder(deterministic(16)).intoWorker();
    let steps = 0;
    for (let plan = await worker.nextPlan(); plan; plan = await worker.nextPlan()) {
      for (let batch = await worker.nextBatch(); batch; batch = await worker.nextBatch()) {
        const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
        loss.backward();
        expect((await worker.step(loss)).shutdown).toBe(false);
        steps += 1;
      }
    }
    const state = await worker.finish();
    expect(steps).toBe(8);
    expect(state.params.length).toBe(2);
    expect(state.buffers.length).toBe(0);
    // One device: every epoch the Worker ended, oldest first, then none until the next.
    const polled = worker.pollMetrics();
    expect(polled.map((metrics) => metrics.epoch)).toEqual(polled.map((_, epoch) => epoch));
    expect(polled.length).toBeGreaterThan(0);
    expect(worker.epochMetrics()).toBe(polled.at(-1));
    expect(worker.pollMetrics()).toEqual([]);
  });

  it('nextPlan stops after numEpochs and stays stopped', async () => {
    const worker = await builder(deterministic(16), 3).intoWorker();
    const plans = [];
    for (let index = 0; index < 5; index++) plans.push(await worker.nextPlan());
    expect(plans.map((plan) => plan?.epoch ?? null)).toEqual([0, 1, 2, null, null]);
    expect(plans[0]).toEqual({ epoch: 0, partitionOffset: 0, partitionSize: 16 });
    await worker.finish();
  });

  it('step without a batch in flight is a typed error; calls after finish are refused', async () => {
    const worker = await builder(deterministic(16)).intoWorker();
    const loss = randn([1]).sum();
    await expect(worker.step(loss)).rejects.toSatisfy(
      (error: unknown) => FlodlError.isInstance(error) && /no batch in flight/.test(error.message),
    );
    await worker.nextPlan();
    await worker.finish();
    await expect(worker.nextPlan()).rejects.toThrow(/after finish/);
    expect(() => worker.model).toThrow(/Worker.model after finish/);
  });

  it('the async iterators walk the same loop, and a finished loop leaks no tensors', async () => {
    const data = deterministic(32);
    const run = async () => {
      const worker = await builder(data).intoWorker();
      let steps = 0;
      for await (const _plan of worker.plans()) {
        for await (const batch of worker.batches()) {
          const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
          loss.backward();
          await worker.step(loss);
          steps += 1;
        }
      }
      // finish() frees the run's model and optimizer: only the returned state is the caller's.
      const state = await worker.finish();
      for (const tensor of state.params) tensor.dispose();
      return steps;
    };
    expect(await run()).toBe(16);
    const before = liveTensorCount();
    await run();
    expect(liveTensorCount()).toBe(before);
  });

  it('matches the managed Trainer over the same seed, data and options, bit for bit', async () => {
    manualSeed(5);
    const data = deterministic(48);
    const managed = await builder(data, 3).run().join();
    const worker = await builder(data, 3).intoWorker();
    for await (const _plan of worker.plans()) {
      for await (const batch of worker.batches()) {
        const loss = mseLoss(worker.model.forward(batch.at(0)), batch.at(1));
        loss.backward();
        await worker.step(loss);
      }
    }
    const cooperative = await worker.finish();
    expect(hex(cooperative.params)).toEqual(hex(managed.params));
  });

  it("trainStep() runs the builder's trainStep as the managed Trainer does, bit for bit", async () => {
    manualSeed(5);
    const data = deterministic(48);
    const managed = await builder(data, 2).run().join();
    const worker = await builder(data, 2).intoWorker();
    await expect(worker.trainStep()).rejects.toThrow(/no batch in flight/);
    const losses: number[] = [];
    for await (const _plan of worker.plans()) {
      for await (const _batch of worker.batches()) {
        const outcome = await worker.trainStep();
        expect(outcome.shutdown).toBe(false);
        losses.push(outcome.loss);
      }
    }
    const cooperative = await worker.finish();
    expect(losses.length).toBe(24);
    expect(hex(cooperative.params)).toEqual(hex(managed.params));
  });

  it('cudaGraph is refused off CUDA, before anything starts', async () => {
    await expect(builder(deterministic(16)).cudaGraph().intoWorker()).rejects.toSatisfy(
      (error: unknown) =>
        FlodlError.isInstance(error) && /CUDA graph step needs CUDA devices/.test(error.message),
    );
    expect(() =>
      builder(deterministic(16))
        .cudaGraph('yes' as never)
        .run(),
    ).toThrow(/cudaGraph/);
  });
});
