import { checkPositiveInteger } from '../validate.js';
import { checkEpoch, type Sampler } from './sampler.js';

/**
 * Visits `0, 1, …, length - 1` in order, every epoch.
 *
 * @example new SequentialSampler(4).indices(0) // Int32Array [0, 1, 2, 3]
 * PyTorch: `torch.utils.data.SequentialSampler(data_source)`.
 */
export class SequentialSampler implements Sampler {
  readonly length: number;

  constructor(length: number) {
    this.length = checkPositiveInteger('SequentialSampler', 'length', length);
  }

  indices(epoch: number): Int32Array {
    checkEpoch('SequentialSampler.indices', epoch);
    const order = new Int32Array(this.length);
    for (let index = 0; index < this.length; index++) order[index] = index;
    return order;
  }
}
