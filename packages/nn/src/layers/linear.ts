import { bilinear, linear } from '@flodl/autograd';
import { empty, type Tensor } from '@flodl/tensor-native';
import * as init from '../init.js';
import { Module } from '../module.js';
import { Parameter } from '../parameter.js';
import {
  checkOptions,
  FACTORY_KEYS,
  type FactoryOptions,
  factoryOf,
  positiveInteger,
  pythonBool,
  pythonTuple,
} from './common.js';

/** Options of `Linear` and `Bilinear`: `bias`, and PyTorch's factory options `dtype` and `device`. */
export interface LinearOptions extends FactoryOptions {
  /** Learn an additive bias. Default true. */
  bias?: boolean;
}

/**
 * `y = x Wᵀ + b`.
 *
 * **Shape**: input `(*, inFeatures)`, output `(*, outFeatures)`.
 * Weights start as PyTorch's: W ~ U(-1/√inFeatures, 1/√inFeatures) (Kaiming uniform with
 * a = √5), b likewise; with the same `manualSeed` they equal `nn.Linear`'s.
 * @example const fc = new Linear(784, 256); const y = fc.forward(x);
 * @example new Linear(4, 2, { dtype: 'float64', device: 'cuda' })
 * @throws FlodlError ERR_INVALID_ARGUMENT for non-positive sizes or unknown options
 * PyTorch: `nn.Linear(in_features, out_features, bias=True, device=None, dtype=None)`.
 */
export class Linear extends Module {
  readonly inFeatures: number;
  readonly outFeatures: number;
  weight: Tensor;
  bias: Tensor | null;

  constructor(inFeatures: number, outFeatures: number, options: LinearOptions = {}) {
    super();
    checkOptions('Linear', options, ['bias', ...FACTORY_KEYS]);
    const factory = factoryOf('Linear', options);
    this.inFeatures = positiveInteger('Linear', 'inFeatures', inFeatures);
    this.outFeatures = positiveInteger('Linear', 'outFeatures', outFeatures);
    this.weight = new Parameter(empty([outFeatures, inFeatures], factory));
    this.bias = options.bias === false ? null : new Parameter(empty([outFeatures], factory));
    this.resetParameters();
  }

  /** Draws fresh weights with PyTorch's default initialisation. */
  resetParameters(): void {
    init.kaimingUniform_(this.weight, { a: Math.sqrt(5) });
    if (this.bias !== null) {
      const bound = 1 / Math.sqrt(this.inFeatures);
      init.uniform_(this.bias, -bound, bound);
    }
  }

  forward(input: Tensor): Tensor {
    return linear(input, this.weight, this.bias ?? undefined);
  }

  override extraRepr(): string {
    return `in_features=${this.inFeatures}, out_features=${this.outFeatures}, bias=${pythonBool(this.bias !== null)}`;
  }
}

/**
 * `y = x₁ᵀ A x₂ + b`.
 * **Shape**: inputs `(*, in1)` and `(*, in2)`, output `(*, out)`.
 * PyTorch: `nn.Bilinear(in1_features, in2_features, out_features, bias=True)`.
 */
export class Bilinear extends Module<[Tensor, Tensor], Tensor> {
  readonly in1Features: number;
  readonly in2Features: number;
  readonly outFeatures: number;
  weight: Tensor;
  bias: Tensor | null;

  constructor(in1Features: number, in2Features: number, outFeatures: number, options: LinearOptions = {}) {
    super();
    checkOptions('Bilinear', options, ['bias', ...FACTORY_KEYS]);
    const factory = factoryOf('Bilinear', options);
    this.in1Features = positiveInteger('Bilinear', 'in1Features', in1Features);
    this.in2Features = positiveInteger('Bilinear', 'in2Features', in2Features);
    this.outFeatures = positiveInteger('Bilinear', 'outFeatures', outFeatures);
    this.weight = new Parameter(empty([outFeatures, in1Features, in2Features], factory));
    this.bias = options.bias === false ? null : new Parameter(empty([outFeatures], factory));
    this.resetParameters();
  }

  resetParameters(): void {
    const bound = 1 / Math.sqrt(this.in1Features);
    init.uniform_(this.weight, -bound, bound);
    if (this.bias !== null) init.uniform_(this.bias, -bound, bound);
  }

  forward(input1: Tensor, input2: Tensor): Tensor {
    return bilinear(input1, input2, this.weight, this.bias ?? undefined);
  }

  override extraRepr(): string {
    return `in1_features=${this.in1Features}, in2_features=${this.in2Features}, out_features=${this.outFeatures}, bias=${pythonBool(this.bias !== null)}`;
  }
}

/** Returns its input unchanged (the same tensor). PyTorch: `nn.Identity`. */
export class Identity extends Module {
  forward(input: Tensor): Tensor {
    return input;
  }
}

/** Flattens dims `startDim..endDim`. PyTorch: `nn.Flatten(start_dim=1, end_dim=-1)`. */
export class Flatten extends Module {
  constructor(
    readonly startDim = 1,
    readonly endDim = -1,
  ) {
    super();
  }

  forward(input: Tensor): Tensor {
    return input.flatten(this.startDim, this.endDim);
  }

  override extraRepr(): string {
    return `start_dim=${this.startDim}, end_dim=${this.endDim}`;
  }
}

/** Splits dim `dim` into `sizes`. PyTorch: `nn.Unflatten(dim, unflattened_size)`. */
export class Unflatten extends Module {
  constructor(
    readonly dim: number,
    readonly sizes: number[],
  ) {
    super();
  }

  forward(input: Tensor): Tensor {
    return input.unflatten(this.dim, this.sizes);
  }

  override extraRepr(): string {
    return `dim=${this.dim}, unflattened_size=${pythonTuple(this.sizes)}`;
  }
}
