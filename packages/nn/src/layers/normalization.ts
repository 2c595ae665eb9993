// Batch, layer, group, instance and RMS normalisation layers.
import { batchNorm, groupNorm, instanceNorm, layerNorm, rmsNorm } from '@flodl/autograd';
import { FlodlError, ones, type Tensor, tidy, zeros } from '@flodl/tensor-native';
import { Module } from '../module.js';
import { Buffer, Parameter } from '../parameter.js';
import {
  checkOptions,
  FACTORY_KEYS,
  type FactoryOptions,
  factoryOf,
  positiveInteger,
  pythonBool,
  pythonFloat,
  pythonTuple,
} from './common.js';

/** Options of the batch and instance norm layers (PyTorch's defaults differ per layer). */
export interface BatchNormLayerOptions extends FactoryOptions {
  /** Default 1e-5. */
  eps?: number;
  /** Running-average weight of the batch statistics; null gives a cumulative average. Default 0.1. */
  momentum?: number | null;
  /** Learnable per-channel scale and shift. Default true (InstanceNorm: false). */
  affine?: boolean;
  /** Keep running statistics for evaluation. Default true (InstanceNorm: false). */
  trackRunningStats?: boolean;
}

const BATCH_KEYS = ['eps', 'momentum', 'affine', 'trackRunningStats', ...FACTORY_KEYS];

abstract class NormBase extends Module {
  readonly numFeatures: number;
  readonly eps: number;
  readonly momentum: number | null;
  readonly affine: boolean;
  readonly trackRunningStats: boolean;
  weight: Tensor | null;
  bias: Tensor | null;

  protected constructor(
    layer: string,
    numFeatures: number,
    options: BatchNormLayerOptions,
    defaults: { affine: boolean; track: boolean },
  ) {
    super();
    checkOptions(layer, options, BATCH_KEYS);
    this.numFeatures = positiveInteger(layer, 'numFeatures', numFeatures);
    this.eps = options.eps ?? 1e-5;
    this.momentum = options.momentum === undefined ? 0.1 : options.momentum;
    this.affine = options.affine ?? defaults.affine;
    this.trackRunningStats = options.trackRunningStats ?? defaults.track;
    const factory = factoryOf(layer, options);
    this.weight = this.affine ? new Parameter(ones([numFeatures], factory)) : null;
    this.bias = this.affine ? new Parameter(zeros([numFeatures], factory)) : null;
    if (this.trackRunningStats) {
      this.register('running_mean', new Buffer(zeros([numFeatures], factory)));
      this.register('running_var', new Buffer(ones([numFeatures], factory)));
      const counter = {
        dtype: 'int64' as const,
        ...(factory.device === undefined ? {} : { device: factory.device }),
      };
      this.register('num_batches_tracked', new Buffer(zeros([], counter)));
    }
  }

  /** The running mean (PyTorch's `running_mean`), or null without running statistics. */
  get runningMean(): Tensor | null {
    return this.registered<Tensor | undefined>('running_mean') ?? null;
  }
  /** The running variance (`running_var`), or null. */
  get runningVar(): Tensor | null {
    return this.registered<Tensor | undefined>('running_var') ?? null;
  }
  /** Batches seen in training (`num_batches_tracked`), or null. */
  get numBatchesTracked(): Tensor | null {
    return this.registered<Tensor | undefined>('num_batches_tracked') ?? null;
  }

  /** The momentum of this step: PyTorch's cumulative average when momentum is null. */
  protected stepMomentum(): number {
    const tracked = this.numBatchesTracked;
    if (this.isTraining && tracked !== null) {
      tracked.add_(1);
      if (this.momentum === null) return 1 / (tracked.item() as number);
    }
    return this.momentum ?? 0;
  }

  override extraRepr(): string {
    return `${this.numFeatures}, eps=${pythonFloat(this.eps)}, momentum=${this.momentum === null ? 'None' : pythonFloat(this.momentum)}, affine=${pythonBool(this.affine)}, track_running_stats=${pythonBool(this.trackRunningStats)}`;
  }
}

abstract class BatchNormNd extends NormBase {
  protected abstract checkRank(input: Tensor): void;

  forward(input: Tensor): Tensor {
    this.checkRank(input);
    const momentum = this.stepMomentum();
    // Batch statistics in training, or when no running statistics exist; running ones otherwise.
    const useBatch = this.isTraining || this.runningMean === null;
    return batchNorm(
      input,
      this.isTraining || !useBatch ? (this.runningMean ?? undefined) : undefined,
      this.isTraining || !useBatch ? (this.runningVar ?? undefined) : undefined,
      this.weight ?? undefined,
      this.bias ?? undefined,
      { training: useBatch, momentum, eps: this.eps },
    );
  }
}

function rankError(layer: string, expected: string, input: Tensor): FlodlError {
  return new FlodlError('ERR_SHAPE', 'wrong input rank', {
    op: layer,
    expected,
    got: `[${input.shape.join(', ')}]`,
  });
}

/**
 * Batch normalisation over `(N, C)` or `(N, C, L)` inputs, with running statistics.
 * PyTorch: `nn.BatchNorm1d(num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True)`.
 */
export class BatchNorm1d extends BatchNormNd {
  constructor(numFeatures: number, options: BatchNormLayerOptions = {}) {
    super('BatchNorm1d', numFeatures, options, { affine: true, track: true });
  }
  protected checkRank(input: Tensor): void {
    if (input.ndim !== 2 && input.ndim !== 3) throw rankError('BatchNorm1d', '(N, C) or (N, C, L)', input);
  }
}

/**
 * Batch normalisation over `(N, C, H, W)` inputs, with running statistics.
 * PyTorch: `nn.BatchNorm2d(num_features, ...)`.
 */
export class BatchNorm2d extends BatchNormNd {
  constructor(numFeatures: number, options: BatchNormLayerOptions = {}) {
    super('BatchNorm2d', numFeatures, options, { affine: true, track: true });
  }
  protected checkRank(input: Tensor): void {
    if (input.ndim !== 4) throw rankError('BatchNorm2d', '(N, C, H, W)', input);
  }
}

abstract class InstanceNormNd extends NormBase {
  /** The rank of an input without a batch dim: 2 for `(C, L)`, 3 for `(C, H, W)`. */
  protected abstract readonly unbatchedRank: number;
  protected abstract checkRank(input: Tensor): void;

  forward(input: Tensor): Tensor {
    this.checkRank(input);
    // As PyTorch: instance norm passes its momentum as is and counts no batches.
    const momentum = this.momentum ?? 0;
    const useInputStats = this.isTraining || this.runningMean === null;
    const normalize = (batched: Tensor) =>
      instanceNorm(
        batched,
        this.runningMean ?? undefined,
        this.runningVar ?? undefined,
        this.weight ?? undefined,
        this.bias ?? undefined,
        {
          useInputStats,
          momentum,
          eps: this.eps,
        },
      );
    if (input.ndim !== this.unbatchedRank) return normalize(input);
    // An unbatched input is a batch of one (PyTorch's _handle_no_batch_input).
    return tidy(() => normalize(input.unsqueeze(0)).squeeze(0));
  }
}

/**
 * Per-instance normalisation of `(N, C, L)` or unbatched `(C, L)` inputs.
 * PyTorch: `nn.InstanceNorm1d(num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False)`.
 */
export class InstanceNorm1d extends InstanceNormNd {
  protected readonly unbatchedRank = 2;
  constructor(numFeatures: number, options: BatchNormLayerOptions = {}) {
    super('InstanceNorm1d', numFeatures, options, { affine: false, track: false });
  }
  protected checkRank(input: Tensor): void {
    if (input.ndim !== 2 && input.ndim !== 3) throw rankError('InstanceNorm1d', '(N, C, L) or (C, L)', input);
  }
}

/** Per-instance normalisation of `(N, C, H, W)` or unbatched `(C, H, W)` inputs. PyTorch: `nn.InstanceNorm2d`. */
export class InstanceNorm2d extends InstanceNormNd {
  protected readonly unbatchedRank = 3;
  constructor(numFeatures: number, options: BatchNormLayerOptions = {}) {
    super('InstanceNorm2d', numFeatures, options, { affine: false, track: false });
  }
  protected checkRank(input: Tensor): void {
    if (input.ndim !== 3 && input.ndim !== 4)
      throw rankError('InstanceNorm2d', '(N, C, H, W) or (C, H, W)', input);
  }
}

/** Options of LayerNorm and RMSNorm. */
export interface LayerNormOptions extends FactoryOptions {
  /** Default 1e-5 (RMSNorm: machine epsilon of the input dtype, as PyTorch). */
  eps?: number;
  /** Learnable scale (and, for LayerNorm, shift). Default true. */
  elementwiseAffine?: boolean;
  /** LayerNorm only: learn the shift. Default true. */
  bias?: boolean;
}

function shapeOf(layer: string, normalizedShape: number | number[]): number[] {
  const shape = typeof normalizedShape === 'number' ? [normalizedShape] : [...normalizedShape];
  return shape.map((size, k) => positiveInteger(layer, `normalizedShape[${k}]`, size));
}

/**
 * Normalises over the trailing `normalizedShape` dims: `(x − mean)/√(var + eps)·γ + β`.
 * PyTorch: `nn.LayerNorm(normalized_shape, eps=1e-5, elementwise_affine=True)`.
 */
export class LayerNorm extends Module {
  readonly normalizedShape: number[];
  readonly eps: number;
  weight: Tensor | null;
  bias: Tensor | null;
  constructor(normalizedShape: number | number[], options: LayerNormOptions = {}) {
    super();
    checkOptions('LayerNorm', options, ['eps', 'elementwiseAffine', 'bias', ...FACTORY_KEYS]);
    const factory = factoryOf('LayerNorm', options);
    this.normalizedShape = shapeOf('LayerNorm', normalizedShape);
    this.eps = options.eps ?? 1e-5;
    const affine = options.elementwiseAffine !== false;
    this.weight = affine ? new Parameter(ones(this.normalizedShape, factory)) : null;
    this.bias = affine && options.bias !== false ? new Parameter(zeros(this.normalizedShape, factory)) : null;
  }
  forward(input: Tensor): Tensor {
    return layerNorm(input, this.normalizedShape, this.weight ?? undefined, this.bias ?? undefined, {
      eps: this.eps,
    });
  }
  override extraRepr(): string {
    return `${pythonTuple(this.normalizedShape)}, eps=${pythonFloat(this.eps)}, elementwise_affine=${pythonBool(this.weight !== null)}`;
  }
}

/** `x / √(mean(x²) + eps)·γ` over the trailing dims. PyTorch: `nn.RMSNorm(normalized_shape, eps=None)`. */
export class RMSNorm extends Module {
  readonly normalizedShape: number[];
  readonly eps: number | undefined;
  weight: Tensor | null;
  constructor(normalizedShape: number | number[], options: LayerNormOptions = {}) {
    super();
    checkOptions('RMSNorm', options, ['eps', 'elementwiseAffine', ...FACTORY_KEYS]);
    const factory = factoryOf('RMSNorm', options);
    this.normalizedShape = shapeOf('RMSNorm', normalizedShape);
    this.eps = options.eps;
    this.weight =
      options.elementwiseAffine === false ? null : new Parameter(ones(this.normalizedShape, factory));
  }
  forward(input: Tensor): Tensor {
    return rmsNorm(
      input,
      this.normalizedShape,
      this.weight ?? undefined,
      this.eps === undefined ? {} : { eps: this.eps },
    );
  }
  override extraRepr(): string {
    return `${pythonTuple(this.normalizedShape)}, eps=${this.eps === undefined ? 'None' : pythonFloat(this.eps)}, elementwise_affine=${pythonBool(this.weight !== null)}`;
  }
}

/** Normalises channel groups: `(N, C, *)` with C divisible by numGroups. PyTorch: `nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True)`. */
export class GroupNorm extends Module {
  readonly numGroups: number;
  readonly numChannels: number;
  readonly eps: number;
  weight: Tensor | null;
  bias: Tensor | null;
  constructor(
    numGroups: number,
    numChannels: number,
    options: { eps?: number; affine?: boolean } & FactoryOptions = {},
  ) {
    super();
    checkOptions('GroupNorm', options, ['eps', 'affine', ...FACTORY_KEYS]);
    const factory = factoryOf('GroupNorm', options);
    this.numGroups = positiveInteger('GroupNorm', 'numGroups', numGroups);
    this.numChannels = positiveInteger('GroupNorm', 'numChannels', numChannels);
    if (numChannels % numGroups !== 0) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'numChannels must be divisible by numGroups', {
        op: 'GroupNorm',
        expected: `a multiple of ${numGroups}`,
        got: String(numChannels),
      });
    }
    this.eps = options.eps ?? 1e-5;
    const affine = options.affine !== false;
    this.weight = affine ? new Parameter(ones([numChannels], factory)) : null;
    this.bias = affine ? new Parameter(zeros([numChannels], factory)) : null;
  }
  forward(input: Tensor): Tensor {
    return groupNorm(input, this.numGroups, this.weight ?? undefined, this.bias ?? undefined, {
      eps: this.eps,
    });
  }
  override extraRepr(): string {
    return `${this.numGroups}, ${this.numChannels}, eps=${pythonFloat(this.eps)}, affine=${pythonBool(this.weight !== null)}`;
  }
}
