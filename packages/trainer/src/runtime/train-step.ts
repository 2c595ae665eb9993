// One managed step: the user's trainStep in a tidy scope, the loss it returns checked, and
// where a throwing one threw.

import { FlodlError, type Tensor, tidy } from '@flodl/tensor-native';
import type { Batch } from '../data/batch.js';
import type { AnyModule, TrainStep } from './types.js';

/**
 * The error of a throwing `trainStep`, naming where it threw: a FlodlError (a wrong shape, a
 * tensor on another device) keeps its code; the user's own error stays a plain Error. The
 * original is the `cause` either way.
 */
export function whereTrainStepThrew(error: unknown, where: { epoch: number; batch: number }): Error {
  const message = `trainStep threw at epoch ${where.epoch}, batch ${where.batch}: ${error instanceof Error ? error.message : String(error)}`;
  if (FlodlError.isInstance(error)) return new FlodlError(error.code, message, { cause: error });
  return new Error(message, { cause: error });
}

/**
 * The loss tensor `trainStep` returned, checked without a call into libtorch (its element
 * count is checked by `backward`, see {@link nonScalarLoss}).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for anything but a tensor
 */
export function checkLoss(output: unknown): Tensor {
  const tensor = output as Tensor | undefined;
  if (
    typeof tensor !== 'object' ||
    tensor === null ||
    typeof tensor.backward !== 'function' ||
    typeof tensor.item !== 'function'
  ) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'trainStep must return the loss tensor', {
      op: 'trainStep',
      expected: 'a scalar Tensor that requires grad (forward + loss only)',
      got: tensor === null ? 'null' : typeof tensor,
    });
  }
  return tensor;
}

/**
 * The error of a loss that is not a scalar, or undefined. Asked only once `backward` failed
 * (it refuses a non-scalar output): the step that succeeds pays no extra call for it.
 */
export function nonScalarLoss(loss: Tensor): FlodlError | undefined {
  if (loss.numel === 1) return undefined;
  return new FlodlError('ERR_SHAPE', 'trainStep must return a scalar loss', {
    op: 'trainStep',
    expected: 'a tensor of one element',
    got: `shape [${loss.shape.join(', ')}]`,
  });
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * One managed step in a tidy scope: `trainStep` (forward + loss), its checks, backward, then
 * `tail` (the optimizer step and the counters); → the loss value. `epoch` and `batch` name
 * the step in the error of a throwing `trainStep`.
 */
export function runTrainStep<M extends AnyModule>(
  model: M,
  trainStep: TrainStep<M>,
  batch: Batch,
  epoch: number,
  index: number,
  tail: () => void,
): number {
  return tidy(() => {
    let output: unknown;
    try {
      output = trainStep(model, batch);
    } catch (error) {
      throw whereTrainStepThrew(error, { epoch, batch: index });
    }
    const loss = checkLoss(output);
    try {
      loss.backward();
    } catch (error) {
      throw nonScalarLoss(loss) ?? error;
    }
    tail();
    // Read after the step is queued: on a GPU an earlier read would wait for the forward
    // before backward and the step could be launched.
    return loss.item() as number;
  });
}
