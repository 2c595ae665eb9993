import { dropout, dropout2d } from '@flodl/autograd';
import { FlodlError, type Tensor } from '@flodl/tensor-native';
import { Module } from '../module.js';
import { pythonFloat } from './common.js';

function probability(layer: string, p: number): number {
  if (typeof p !== 'number' || !(p >= 0 && p <= 1)) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'p must be a probability', {
      op: layer,
      expected: 'a number in [0, 1]',
      got: String(p),
    });
  }
  return p;
}

/**
 * Zeroes each element with probability `p` in training mode and scales the rest by 1/(1−p);
 * the identity in evaluation mode. Draws from libtorch's generator (`manualSeed`).
 * PyTorch: `nn.Dropout(p=0.5)`.
 */
export class Dropout extends Module {
  readonly p: number;
  constructor(p = 0.5) {
    super();
    this.p = probability('Dropout', p);
  }
  forward(input: Tensor): Tensor {
    return dropout(input, { p: this.p, training: this.isTraining });
  }
  override extraRepr(): string {
    return `p=${pythonFloat(this.p)}, inplace=False`;
  }
}

/** Zeroes whole channels of `(N, C, H, W)` inputs with probability `p`. PyTorch: `nn.Dropout2d(p=0.5)`. */
export class Dropout2d extends Module {
  readonly p: number;
  constructor(p = 0.5) {
    super();
    this.p = probability('Dropout2d', p);
  }
  forward(input: Tensor): Tensor {
    return dropout2d(input, { p: this.p, training: this.isTraining });
  }
  override extraRepr(): string {
    return `p=${pythonFloat(this.p)}, inplace=False`;
  }
}
