// Convolutions over 1, 2 and 3 spatial dims, and their transposes.
import {
  conv1d,
  conv2d,
  conv3d,
  convTranspose1d,
  convTranspose2d,
  convTranspose3d,
  pad,
} from '@flodl/autograd';
import { empty, FlodlError, type Tensor } from '@flodl/tensor-native';
import * as init from '../init.js';
import { Module } from '../module.js';
import { Parameter } from '../parameter.js';
import {
  checkOptions,
  FACTORY_KEYS,
  type FactoryOptions,
  factoryOf,
  positiveInteger,
  pythonTuple,
  tuple,
} from './common.js';

/** How a convolution layer fills its padding (PyTorch's `padding_mode`). */
export type PaddingMode = 'zeros' | 'reflect' | 'replicate' | 'circular';

const PADDING_MODES: readonly PaddingMode[] = ['zeros', 'reflect', 'replicate', 'circular'];

/** Options of the convolution layers (PyTorch's keywords and defaults). */
export interface ConvLayerOptions extends FactoryOptions {
  /** Default 1. */
  stride?: number | number[];
  /** Zero padding on each side (or 'valid' / 'same' for non-transposed convs). Default 0. */
  padding?: number | number[] | 'valid' | 'same';
  /** Default 1. */
  dilation?: number | number[];
  /** Blocked connections: inChannels and outChannels must divide by it. Default 1. */
  groups?: number;
  /** Default true. */
  bias?: boolean;
  /** How padding is filled: 'zeros' (default), 'reflect', 'replicate' or 'circular'. */
  paddingMode?: PaddingMode;
}

/** Options of the transposed convolution layers. */
export interface ConvTransposeLayerOptions extends FactoryOptions {
  stride?: number | number[];
  padding?: number | number[];
  /** Extra size added to one side of the output. Default 0. */
  outputPadding?: number | number[];
  groups?: number;
  bias?: boolean;
  dilation?: number | number[];
}

type ConvFunction = typeof conv2d;
type ConvTransposeFunction = typeof convTranspose2d;

abstract class ConvBase extends Module {
  readonly inChannels: number;
  readonly outChannels: number;
  readonly kernelSize: number[];
  readonly stride: number[];
  readonly dilation: number[];
  readonly groups: number;
  weight: Tensor;
  bias: Tensor | null;

  protected constructor(
    layer: string,
    dims: number,
    inChannels: number,
    outChannels: number,
    kernelSize: number | number[],
    options: {
      stride?: number | number[];
      dilation?: number | number[];
      groups?: number;
      bias?: boolean;
    } & FactoryOptions,
    transposed: boolean,
  ) {
    super();
    this.inChannels = positiveInteger(layer, 'inChannels', inChannels);
    this.outChannels = positiveInteger(layer, 'outChannels', outChannels);
    this.kernelSize = tuple(layer, 'kernelSize', kernelSize, dims);
    this.stride = tuple(layer, 'stride', options.stride ?? 1, dims);
    this.dilation = tuple(layer, 'dilation', options.dilation ?? 1, dims);
    this.groups = positiveInteger(layer, 'groups', options.groups ?? 1);
    if (inChannels % this.groups !== 0 || outChannels % this.groups !== 0) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'inChannels and outChannels must be divisible by groups', {
        op: layer,
        expected: `multiples of groups (${this.groups})`,
        got: `inChannels ${inChannels}, outChannels ${outChannels}`,
      });
    }
    const shape = transposed
      ? [inChannels, outChannels / this.groups, ...this.kernelSize]
      : [outChannels, inChannels / this.groups, ...this.kernelSize];
    const factory = factoryOf(layer, options);
    this.weight = new Parameter(empty(shape, factory));
    this.bias = options.bias === false ? null : new Parameter(empty([outChannels], factory));
    this.resetParameters();
  }

  /** PyTorch's default: Kaiming uniform (a = √5) weights, U(±1/√fanIn) bias. */
  resetParameters(): void {
    init.kaimingUniform_(this.weight, { a: Math.sqrt(5) });
    if (this.bias !== null) {
      const [fanIn] = init.calculateFanInAndFanOut(this.weight);
      if (fanIn !== 0) {
        const bound = 1 / Math.sqrt(fanIn);
        init.uniform_(this.bias, -bound, bound);
      }
    }
  }

  protected reprParts(padding: string | number[], outputPadding?: number[]): string[] {
    const parts = [
      `${this.inChannels}, ${this.outChannels}, kernel_size=${pythonTuple(this.kernelSize)}, stride=${pythonTuple(this.stride)}`,
    ];
    if (typeof padding === 'string') parts.push(`padding=${padding}`);
    else if (padding.some((size) => size !== 0)) parts.push(`padding=${pythonTuple(padding)}`);
    if (this.dilation.some((size) => size !== 1)) parts.push(`dilation=${pythonTuple(this.dilation)}`);
    if (outputPadding?.some((size) => size !== 0)) parts.push(`output_padding=${pythonTuple(outputPadding)}`);
    if (this.groups !== 1) parts.push(`groups=${this.groups}`);
    if (this.bias === null) parts.push('bias=False');
    return parts;
  }
}

abstract class ConvNd extends ConvBase {
  readonly padding: number[] | 'valid' | 'same';
  readonly paddingMode: PaddingMode;
  /** `F.pad` amounts for the non-zero modes: last dim first, (before, after) each; PyTorch's `_reversed_padding_repeated_twice`. */
  private readonly padAmounts: number[];
  private readonly convolve: ConvFunction;

  protected constructor(
    layer: string,
    dims: number,
    convolve: ConvFunction,
    inChannels: number,
    outChannels: number,
    kernelSize: number | number[],
    options: ConvLayerOptions,
  ) {
    checkOptions(layer, options, [
      'stride',
      'padding',
      'dilation',
      'groups',
      'bias',
      'paddingMode',
      ...FACTORY_KEYS,
    ]);
    super(layer, dims, inChannels, outChannels, kernelSize, options, false);
    const padding = options.padding ?? 0;
    this.padding =
      padding === 'valid' || padding === 'same' ? padding : tuple(layer, 'padding', padding, dims);
    this.paddingMode = options.paddingMode ?? 'zeros';
    if (!PADDING_MODES.includes(this.paddingMode)) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'unknown paddingMode', {
        op: layer,
        expected: "'zeros', 'reflect', 'replicate' or 'circular'",
        got: String(this.paddingMode),
      });
    }
    if (this.padding === 'same' && this.stride.some((step) => step !== 1)) {
      throw new FlodlError(
        'ERR_INVALID_ARGUMENT',
        "padding 'same' is not supported for strided convolutions",
        {
          op: layer,
          expected: 'stride 1',
          got: `stride ${pythonTuple(this.stride)}`,
        },
      );
    }
    // 'same' pads dilation·(kernel − 1) in all, the odd one after, as PyTorch does.
    const sides = this.kernelSize.map((kernel, k): [number, number] => {
      if (this.padding === 'valid') return [0, 0];
      if (this.padding === 'same') {
        const total = this.dilation[k]! * (kernel - 1);
        return [Math.floor(total / 2), total - Math.floor(total / 2)];
      }
      return [this.padding[k]!, this.padding[k]!];
    });
    this.padAmounts = sides.reverse().flat();
    this.convolve = convolve;
  }

  forward(input: Tensor): Tensor {
    const bias = this.bias ?? undefined;
    const base = { stride: this.stride, dilation: this.dilation, groups: this.groups };
    if (this.paddingMode === 'zeros')
      return this.convolve(input, this.weight, bias, { ...base, padding: this.padding });
    // The other modes pad first, then convolve unpadded (PyTorch's _conv_forward).
    const padded = pad(input, this.padAmounts, { mode: this.paddingMode });
    try {
      return this.convolve(padded, this.weight, bias, { ...base, padding: 0 });
    } finally {
      padded.dispose();
    }
  }

  override extraRepr(): string {
    // PyTorch prints a padding string bare: `padding=same`.
    const parts = this.reprParts(this.padding);
    if (this.paddingMode !== 'zeros') parts.push(`padding_mode=${this.paddingMode}`);
    return parts.join(', ');
  }
}

/** 1-d convolution. **Shape**: `(N, C_in, L)` → `(N, C_out, L_out)`. PyTorch: `nn.Conv1d`. */
export class Conv1d extends ConvNd {
  constructor(
    inChannels: number,
    outChannels: number,
    kernelSize: number | number[],
    options: ConvLayerOptions = {},
  ) {
    super('Conv1d', 1, conv1d, inChannels, outChannels, kernelSize, options);
  }
}

/**
 * 2-d convolution (cross-correlation) with PyTorch's default initialisation.
 * **Shape**: `(N, C_in, H, W)` → `(N, C_out, H_out, W_out)`.
 * @example const conv = new Conv2d(1, 32, 3, { padding: 1 });
 * PyTorch: `nn.Conv2d(in_channels, out_channels, kernel_size, stride=1, padding=0, ...)`.
 */
export class Conv2d extends ConvNd {
  constructor(
    inChannels: number,
    outChannels: number,
    kernelSize: number | number[],
    options: ConvLayerOptions = {},
  ) {
    super('Conv2d', 2, conv2d, inChannels, outChannels, kernelSize, options);
  }
}

/** 3-d convolution. **Shape**: `(N, C_in, D, H, W)` → `(N, C_out, D_out, H_out, W_out)`. PyTorch: `nn.Conv3d`. */
export class Conv3d extends ConvNd {
  constructor(
    inChannels: number,
    outChannels: number,
    kernelSize: number | number[],
    options: ConvLayerOptions = {},
  ) {
    super('Conv3d', 3, conv3d, inChannels, outChannels, kernelSize, options);
  }
}

abstract class ConvTransposeNd extends ConvBase {
  readonly padding: number[];
  readonly outputPadding: number[];
  private readonly convolve: ConvTransposeFunction;

  protected constructor(
    layer: string,
    dims: number,
    convolve: ConvTransposeFunction,
    inChannels: number,
    outChannels: number,
    kernelSize: number | number[],
    options: ConvTransposeLayerOptions,
  ) {
    checkOptions(layer, options, [
      'stride',
      'padding',
      'outputPadding',
      'groups',
      'bias',
      'dilation',
      ...FACTORY_KEYS,
    ]);
    super(layer, dims, inChannels, outChannels, kernelSize, options, true);
    this.padding = tuple(layer, 'padding', options.padding ?? 0, dims);
    this.outputPadding = tuple(layer, 'outputPadding', options.outputPadding ?? 0, dims);
    this.convolve = convolve;
  }

  forward(input: Tensor): Tensor {
    return this.convolve(input, this.weight, this.bias ?? undefined, {
      stride: this.stride,
      padding: this.padding,
      outputPadding: this.outputPadding,
      groups: this.groups,
      dilation: this.dilation,
    });
  }

  override extraRepr(): string {
    return this.reprParts(this.padding, this.outputPadding).join(', ');
  }
}

/** Transposed 1-d convolution. PyTorch: `nn.ConvTranspose1d`. */
export class ConvTranspose1d extends ConvTransposeNd {
  constructor(
    inChannels: number,
    outChannels: number,
    kernelSize: number | number[],
    options: ConvTransposeLayerOptions = {},
  ) {
    super('ConvTranspose1d', 1, convTranspose1d, inChannels, outChannels, kernelSize, options);
  }
}

/** Transposed 2-d convolution ("deconvolution"). PyTorch: `nn.ConvTranspose2d`. */
export class ConvTranspose2d extends ConvTransposeNd {
  constructor(
    inChannels: number,
    outChannels: number,
    kernelSize: number | number[],
    options: ConvTransposeLayerOptions = {},
  ) {
    super('ConvTranspose2d', 2, convTranspose2d, inChannels, outChannels, kernelSize, options);
  }
}

/** Transposed 3-d convolution. PyTorch: `nn.ConvTranspose3d`. */
export class ConvTranspose3d extends ConvTransposeNd {
  constructor(
    inChannels: number,
    outChannels: number,
    kernelSize: number | number[],
    options: ConvTransposeLayerOptions = {},
  ) {
    super('ConvTranspose3d', 3, convTranspose3d, inChannels, outChannels, kernelSize, options);
  }
}
