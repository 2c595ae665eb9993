// A rank's parameters and buffers as the averaging sees them: copies out, averages in, the norm.

import { noGrad } from '@flodl/autograd';
import { FlodlError, type Tensor, tidy } from '@flodl/tensor-native';
import type { AnyModule, TrainedState } from './types.js';

/** CPU copies of the model's parameters and buffers (never aliasing them). */
export function snapshotState(model: AnyModule): TrainedState {
  const copy = (tensors: Tensor[]): Tensor[] =>
    noGrad(() => tidy(() => tensors.map((tensor) => tensor.detach().to('cpu').clone())));
  return { params: copy(model.parameters()), buffers: copy(model.buffers()) };
}

/**
 * Overwrites the model's parameters (and buffers) with an averaged state.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT when the counts differ from the model's
 */
export function loadState(model: AnyModule, update: TrainedState, op: string): void {
  const parameters = model.parameters();
  const buffers = model.buffers();
  if (update.params.length !== parameters.length || update.buffers.length !== buffers.length) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the averaged state does not match the model', {
      op,
      expected: `${parameters.length} parameters and ${buffers.length} buffers`,
      got: `${update.params.length} and ${update.buffers.length}`,
    });
  }
  noGrad(() => {
    parameters.forEach((parameter, index) => {
      parameter.copy_(update.params[index] as Tensor);
    });
    buffers.forEach((buffer, index) => {
      buffer.copy_(update.buffers[index] as Tensor);
    });
  });
}

/**
 * The global L2 norm of `parameters`: each tensor's norm in its own precision (half
 * precision in float32), the norms combined in float64, as floDl's foreach norm. One kernel
 * per tensor and no copies: the rank reports it every tenth step.
 */
export function paramNorm(parameters: readonly Tensor[]): number {
  return tidy(() => {
    let sum = 0;
    for (const parameter of parameters) {
      const values = parameter.detach();
      const wide = values.dtype === 'float16' || values.dtype === 'bfloat16' ? values.to('float32') : values;
      const norm = wide.norm().item() as number;
      sum += norm * norm;
    }
    return Math.sqrt(sum);
  });
}
