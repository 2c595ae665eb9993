// The step of `cudaGraph`: the user's trainStep, backward and the optimizer update captured
// into a CUDA graph once (`CapturedStep`) and replayed per batch.

import { CapturedStep, type Optimizer } from '@flodl/nn';
import { Batch } from '../data/batch.js';
import { checkLoss, nonScalarLoss, whereTrainStepThrew } from './train-step.js';
import type { AnyModule, TrainStep } from './types.js';

/** A rank's captured step; `run` trains one batch and returns its loss value. */
export class CapturedTrainStep<M extends AnyModule> {
  readonly #step: CapturedStep;
  #where = { epoch: 0, batch: 0 };

  constructor(
    model: M,
    optimizer: Optimizer,
    trainStep: TrainStep<M>,
    names: readonly string[],
    maxGradNorm?: number,
  ) {
    this.#step = new CapturedStep(
      optimizer,
      (tensors) => {
        let output: unknown;
        try {
          output = trainStep(model, new Batch(tensors, names));
        } catch (error) {
          throw whereTrainStepThrew(error, this.#where);
        }
        // Checked here, not left to backward: the captured step runs backward itself.
        const loss = checkLoss(output);
        const nonScalar = nonScalarLoss(loss);
        if (nonScalar) throw nonScalar;
        return loss;
      },
      // A last partial batch trains eagerly; the graph stays for the full ones.
      { otherShapes: 'eager', ...(maxGradNorm === undefined ? {} : { maxGradNorm }) },
    );
  }

  /** Trains `batch` (the optimizer's options as the schedule set them); → the loss value. */
  run(batch: Batch, where: { epoch: number; batch: number }): number {
    this.#where = where;
    return this.#step.run([...batch]).item() as number;
  }

  dispose(): void {
    this.#step.dispose();
  }
}
