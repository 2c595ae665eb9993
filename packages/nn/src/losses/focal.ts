import { binaryCrossEntropyWithLogits } from '@flodl/autograd';
import { FlodlError, invalidArgument, type Tensor, tidy, unknownOptionError } from '@flodl/tensor-native';
import { checkOptions } from '../layers/common.js';
import { Module } from '../module.js';

/** Options of `focalLoss` (the defaults of the RetinaNet paper and torchvision). */
export interface FocalLossOptions {
  /** Weight of the positive class in [0, 1]; negative turns weighting off. Default 0.25. */
  alpha?: number;
  /** Focusing exponent: how much easy examples are down-weighted. Default 2. */
  gamma?: number;
  /** Default 'none' (as torchvision). */
  reduction?: 'none' | 'mean' | 'sum';
}

/**
 * Sigmoid focal loss for binary and multi-label classification:
 * `FL = −α_t (1 − p_t)^γ log(p_t)`, with `p = σ(input)`, `p_t = p·t + (1−p)(1−t)` and
 * `α_t = α·t + (1−α)(1−t)`.
 * **Shape**: input and target (probabilities in [0, 1]) of the same shape.
 * @throws FlodlError ERR_SHAPE for different shapes, ERR_INVALID_ARGUMENT for bad options
 * PyTorch: `torchvision.ops.sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2, reduction='none')`.
 */
export function focalLoss(input: Tensor, target: Tensor, options: FocalLossOptions = {}): Tensor {
  for (const key of Object.keys(options)) {
    if (!['alpha', 'gamma', 'reduction'].includes(key))
      throw unknownOptionError('focalLoss', key, ['alpha', 'gamma', 'reduction']);
  }
  const { alpha = 0.25, gamma = 2, reduction = 'none' } = options;
  if (!(gamma >= 0)) throw invalidArgument('focalLoss', 'gamma', 'a number >= 0', gamma);
  if (!(alpha <= 1))
    throw invalidArgument('focalLoss', 'alpha', 'a number <= 1 (negative turns it off)', alpha);
  if (!['none', 'mean', 'sum'].includes(reduction))
    throw invalidArgument('focalLoss', 'reduction', "'none', 'mean' or 'sum'", reduction);
  if (input.shape.join(',') !== target.shape.join(',')) {
    throw new FlodlError('ERR_SHAPE', 'input and target must have the same shape', {
      op: 'focalLoss',
      expected: `[${input.shape.join(', ')}]`,
      got: `[${target.shape.join(', ')}]`,
    });
  }
  return tidy(() => {
    const probability = input.sigmoid();
    const crossEntropy = binaryCrossEntropyWithLogits(input, target, { reduction: 'none' });
    const probabilityOfTruth = probability.mul(target).add(probability.neg().add(1).mul(target.neg().add(1)));
    let loss = crossEntropy.mul(probabilityOfTruth.neg().add(1).pow(gamma));
    if (alpha >= 0)
      loss = target
        .mul(alpha)
        .add(
          target
            .neg()
            .add(1)
            .mul(1 - alpha),
        )
        .mul(loss);
    return reduction === 'mean' ? loss.mean() : reduction === 'sum' ? loss.sum() : loss;
  });
}

/**
 * The module form of `focalLoss`.
 * @example const criterion = new FocalLoss({ alpha: 0.25, gamma: 2, reduction: 'mean' });
 * PyTorch: `torchvision.ops.sigmoid_focal_loss` (a function there; no module).
 */
export class FocalLoss extends Module<[Tensor, Tensor], Tensor> {
  constructor(readonly options: FocalLossOptions = {}) {
    super();
    checkOptions('FocalLoss', options, ['alpha', 'gamma', 'reduction']);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return focalLoss(input, target, this.options);
  }
}
