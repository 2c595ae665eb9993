// A loss module for every loss function (PyTorch: nn.MSELoss, nn.CrossEntropyLoss, ...).
// Each holds its options and calls the functional form in forward; class weights are buffers
// named as PyTorch names them (`weight`, `pos_weight`), so state dicts carry over.
import {
  type BinaryCrossEntropyOptions,
  type BinaryCrossEntropyWithLogitsOptions,
  binaryCrossEntropy,
  binaryCrossEntropyWithLogits,
  type CrossEntropyOptions,
  type CtcLossOptions,
  cosineEmbeddingLoss,
  crossEntropy,
  ctcLoss,
  type HuberLossOptions,
  huberLoss,
  type KlDivOptions,
  klDiv,
  type LossOptions,
  l1Loss,
  type MarginLossOptions,
  marginRankingLoss,
  mseLoss,
  type NllLossOptions,
  nllLoss,
  noGrad,
  type PoissonNllLossOptions,
  poissonNllLoss,
  type SmoothL1LossOptions,
  smoothL1Loss,
  type TripletMarginLossOptions,
  tripletMarginLoss,
} from '@flodl/autograd';
import type { Tensor } from '@flodl/tensor-native';
import { checkOptions } from '../layers/common.js';
import { Module } from '../module.js';
import { Buffer } from '../parameter.js';

abstract class Loss<Options extends object, Inputs extends unknown[] = [Tensor, Tensor]> extends Module<
  Inputs,
  Tensor
> {
  /** The options as given; tensors in them are copied into buffers (see WeightedLoss). */
  readonly options: Options;

  /** Rejects misspelled options at construction, as the layers do, not at the first forward. */
  protected constructor(
    layer: string,
    options: Options | undefined,
    keys: readonly (keyof Options & string)[],
  ) {
    super();
    checkOptions(layer, options, keys);
    this.options = options ?? ({} as Options);
  }
}

/**
 * A loss with class weights: PyTorch keeps `weight` (and BCEWithLogitsLoss `pos_weight`) as
 * buffers, so they are in `stateDict()` under those names and move with `to()`. The module
 * holds its own copies; the caller keeps ownership of the tensors it passed.
 */
abstract class WeightedLoss<
  Options extends { weight?: Tensor },
  Inputs extends unknown[] = [Tensor, Tensor],
> extends Loss<Options, Inputs> {
  protected constructor(
    layer: string,
    options: Options | undefined,
    keys: readonly (keyof Options & string)[],
  ) {
    super(layer, options, keys);
    this.registerWeight('weight', this.options.weight);
  }

  /** The per-class (or per-element) weight buffer, or undefined. PyTorch: `loss.weight`. */
  get weight(): Tensor | undefined {
    return this.registered<Tensor | undefined>('weight');
  }

  protected registerWeight(name: string, tensor: Tensor | undefined): void {
    if (tensor !== undefined) this.register(name, new Buffer(noGrad(() => tensor.detach().clone())));
  }

  /** The options with the buffers in place of the tensors passed in. */
  protected functionalOptions(): Options {
    return this.weight === undefined ? this.options : { ...this.options, weight: this.weight };
  }
}

/** Mean squared error. PyTorch: `nn.MSELoss(reduction='mean')`. */
export class MSELoss extends Loss<LossOptions> {
  constructor(options?: LossOptions) {
    super('MSELoss', options, ['reduction']);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return mseLoss(input, target, this.options);
  }
}

/** Mean absolute error. PyTorch: `nn.L1Loss`. */
export class L1Loss extends Loss<LossOptions> {
  constructor(options?: LossOptions) {
    super('L1Loss', options, ['reduction']);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return l1Loss(input, target, this.options);
  }
}

/** Smooth L1 (quadratic below `beta`). PyTorch: `nn.SmoothL1Loss(beta=1.0)`. */
export class SmoothL1Loss extends Loss<SmoothL1LossOptions> {
  constructor(options?: SmoothL1LossOptions) {
    super('SmoothL1Loss', options, ['reduction', 'beta']);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return smoothL1Loss(input, target, this.options);
  }
}

/** Huber loss (quadratic below `delta`). PyTorch: `nn.HuberLoss(delta=1.0)`. */
export class HuberLoss extends Loss<HuberLossOptions> {
  constructor(options?: HuberLossOptions) {
    super('HuberLoss', options, ['reduction', 'delta']);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return huberLoss(input, target, this.options);
  }
}

/**
 * Cross entropy of logits against class indices or class probabilities, with class weights,
 * `ignoreIndex` and label smoothing. PyTorch: `nn.CrossEntropyLoss`.
 */
export class CrossEntropyLoss extends WeightedLoss<CrossEntropyOptions> {
  constructor(options?: CrossEntropyOptions) {
    super('CrossEntropyLoss', options, ['weight', 'ignoreIndex', 'reduction', 'labelSmoothing']);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return crossEntropy(input, target, this.functionalOptions());
  }
}

/** Negative log likelihood of log-probabilities. PyTorch: `nn.NLLLoss`. */
export class NLLLoss extends WeightedLoss<NllLossOptions> {
  constructor(options?: NllLossOptions) {
    super('NLLLoss', options, ['weight', 'ignoreIndex', 'reduction']);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return nllLoss(input, target, this.functionalOptions());
  }
}

/** Binary cross entropy of probabilities. PyTorch: `nn.BCELoss`. */
export class BCELoss extends WeightedLoss<BinaryCrossEntropyOptions> {
  constructor(options?: BinaryCrossEntropyOptions) {
    super('BCELoss', options, ['weight', 'reduction']);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return binaryCrossEntropy(input, target, this.functionalOptions());
  }
}

/** Binary cross entropy of logits (stable), with `posWeight`. PyTorch: `nn.BCEWithLogitsLoss`. */
export class BCEWithLogitsLoss extends WeightedLoss<BinaryCrossEntropyWithLogitsOptions> {
  constructor(options?: BinaryCrossEntropyWithLogitsOptions) {
    super('BCEWithLogitsLoss', options, ['weight', 'posWeight', 'reduction']);
    this.registerWeight('pos_weight', this.options.posWeight);
  }
  /** The positive-class weight buffer (PyTorch's `pos_weight`), or undefined. */
  get posWeight(): Tensor | undefined {
    return this.registered<Tensor | undefined>('pos_weight');
  }
  forward(input: Tensor, target: Tensor): Tensor {
    const posWeight = this.posWeight;
    return binaryCrossEntropyWithLogits(input, target, {
      ...this.functionalOptions(),
      ...(posWeight === undefined ? {} : { posWeight }),
    });
  }
}

/** Kullback-Leibler divergence of log-probabilities. PyTorch: `nn.KLDivLoss(reduction='mean', log_target=False)`. */
export class KLDivLoss extends Loss<KlDivOptions> {
  constructor(options?: KlDivOptions) {
    super('KLDivLoss', options, ['reduction', 'logTarget']);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return klDiv(input, target, this.options);
  }
}

/** PyTorch: `nn.CosineEmbeddingLoss(margin=0.0)`. */
export class CosineEmbeddingLoss extends Loss<MarginLossOptions, [Tensor, Tensor, Tensor]> {
  constructor(options?: MarginLossOptions) {
    super('CosineEmbeddingLoss', options, ['margin', 'reduction']);
  }
  forward(input1: Tensor, input2: Tensor, target: Tensor): Tensor {
    return cosineEmbeddingLoss(input1, input2, target, this.options);
  }
}

/** PyTorch: `nn.MarginRankingLoss(margin=0.0)`. */
export class MarginRankingLoss extends Loss<MarginLossOptions, [Tensor, Tensor, Tensor]> {
  constructor(options?: MarginLossOptions) {
    super('MarginRankingLoss', options, ['margin', 'reduction']);
  }
  forward(input1: Tensor, input2: Tensor, target: Tensor): Tensor {
    return marginRankingLoss(input1, input2, target, this.options);
  }
}

/** PyTorch: `nn.TripletMarginLoss(margin=1.0, p=2.0, eps=1e-6, swap=False)`. */
export class TripletMarginLoss extends Loss<TripletMarginLossOptions, [Tensor, Tensor, Tensor]> {
  constructor(options?: TripletMarginLossOptions) {
    super('TripletMarginLoss', options, ['margin', 'p', 'eps', 'swap', 'reduction']);
  }
  forward(anchor: Tensor, positive: Tensor, negative: Tensor): Tensor {
    return tripletMarginLoss(anchor, positive, negative, this.options);
  }
}

/** Connectionist temporal classification. PyTorch: `nn.CTCLoss(blank=0, reduction='mean', zero_infinity=False)`. */
export class CTCLoss extends Loss<CtcLossOptions, [Tensor, Tensor, Tensor | number[], Tensor | number[]]> {
  constructor(options?: CtcLossOptions) {
    super('CTCLoss', options, ['blank', 'reduction', 'zeroInfinity']);
  }
  forward(
    logProbs: Tensor,
    targets: Tensor,
    inputLengths: Tensor | number[],
    targetLengths: Tensor | number[],
  ): Tensor {
    return ctcLoss(logProbs, targets, inputLengths, targetLengths, this.options);
  }
}

/** Poisson negative log likelihood. PyTorch: `nn.PoissonNLLLoss(log_input=True, full=False)`. */
export class PoissonNLLLoss extends Loss<PoissonNllLossOptions> {
  constructor(options?: PoissonNllLossOptions) {
    super('PoissonNLLLoss', options, ['reduction', 'logInput', 'full', 'eps']);
  }
  forward(input: Tensor, target: Tensor): Tensor {
    return poissonNllLoss(input, target, this.options);
  }
}
