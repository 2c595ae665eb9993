// Trainer: the managed tier's entry point.

import type { AnyModule, ModelFactory, TrainStep } from '../runtime/types.js';
import { TrainerBuilder } from './builder.js';
import type { OptimizerFactory } from './spec.js';

/**
 * The managed training tier: the framework owns the loop (backward, clipping, the LR schedule,
 * the optimizer step, zero-grad, timing and averaging), on one device or many.
 *
 * @example
 * ```ts
 * const handle = Trainer.builder(
 *   (device) => new Sequential(new Linear(784, 128), new ReLU(), new Linear(128, 10)).to(device),
 *   (params) => new Adam(params, { lr: 1e-3 }),
 *   (model, batch) => crossEntropy(model.forward(batch.get('image').flatten(1)), batch.get('label')),
 * )
 *   .dataset(train).batchSize(64).numEpochs(5)
 *   .run();
 * for await (const m of handle.metrics()) console.log(m.epoch, m.avgLoss);
 * const state = await handle.join();
 * ```
 * floDl: `Trainer::builder(model_factory, optim_factory, train_fn)`; Lightning: `Trainer.fit`.
 */
export const Trainer = {
  /** A builder over the three user functions: the model per device, the optimizer, and forward + loss. */
  builder<M extends AnyModule>(
    modelFactory: ModelFactory<M>,
    optimizerFactory: OptimizerFactory,
    trainStep: TrainStep<M>,
  ): TrainerBuilder<M> {
    return new TrainerBuilder(modelFactory, optimizerFactory, trainStep);
  },
};
