// Max, average and adaptive pooling layers over the functional ops.
import {
  adaptiveAvgPool1d,
  adaptiveAvgPool2d,
  adaptiveMaxPool2d,
  avgPool1d,
  avgPool2d,
  maxPool1d,
  maxPool2d,
} from '@flodl/autograd';
import type { Tensor, ValuesIndices } from '@flodl/tensor-native';
import { Module } from '../module.js';
import { checkOptions, pythonBool, pythonTuple } from './common.js';

type Size = number | number[];

/** Options of the max-pooling layers. */
export interface MaxPoolLayerOptions {
  /** Default: the kernel size. */
  stride?: Size;
  padding?: Size;
  dilation?: Size;
  ceilMode?: boolean;
  /** Return `{ values, indices }` (for MaxUnpool). Default false. */
  returnIndices?: boolean;
}

/** Options of the average-pooling layers. */
export interface AvgPoolLayerOptions {
  stride?: Size;
  padding?: Size;
  ceilMode?: boolean;
  countIncludePad?: boolean;
  /** 2-d only. */
  divisorOverride?: number;
}

const MAX_KEYS = ['stride', 'padding', 'dilation', 'ceilMode', 'returnIndices'];
const AVG1D_KEYS = ['stride', 'padding', 'ceilMode', 'countIncludePad'];
const AVG_KEYS = [...AVG1D_KEYS, 'divisorOverride'];

function show(value: Size | undefined, fallback: string): string {
  if (value === undefined) return fallback;
  return Array.isArray(value) ? pythonTuple(value) : String(value);
}

abstract class MaxPoolNd extends Module<[Tensor], any> {
  constructor(
    layer: string,
    readonly kernelSize: Size,
    readonly options: MaxPoolLayerOptions,
  ) {
    super();
    checkOptions(layer, options, MAX_KEYS);
  }
  override extraRepr(): string {
    const { stride, padding = 0, dilation = 1, ceilMode = false } = this.options;
    return `kernel_size=${show(this.kernelSize, '')}, stride=${show(stride, show(this.kernelSize, ''))}, padding=${show(padding, '0')}, dilation=${show(dilation, '1')}, ceil_mode=${pythonBool(ceilMode)}`;
  }
}

/** Max over sliding windows of a 1-d signal. **Shape**: `(N, C, L)` → `(N, C, L_out)`. PyTorch: `nn.MaxPool1d`. */
export class MaxPool1d extends MaxPoolNd {
  constructor(kernelSize: Size, options: MaxPoolLayerOptions = {}) {
    super('MaxPool1d', kernelSize, options);
  }
  forward(input: Tensor): Tensor | ValuesIndices {
    return maxPool1d(input, this.kernelSize, this.options as never);
  }
}

/** Max over sliding windows. **Shape**: `(N, C, H, W)` → `(N, C, H_out, W_out)`. PyTorch: `nn.MaxPool2d`. */
export class MaxPool2d extends MaxPoolNd {
  constructor(kernelSize: Size, options: MaxPoolLayerOptions = {}) {
    super('MaxPool2d', kernelSize, options);
  }
  forward(input: Tensor): Tensor | ValuesIndices {
    return maxPool2d(input, this.kernelSize, this.options as never);
  }
}

abstract class AvgPoolNd extends Module {
  constructor(
    layer: string,
    readonly kernelSize: Size,
    readonly options: AvgPoolLayerOptions,
    keys: string[],
  ) {
    super();
    checkOptions(layer, options, keys);
  }
  override extraRepr(): string {
    const { stride, padding = 0 } = this.options;
    return `kernel_size=${show(this.kernelSize, '')}, stride=${show(stride, show(this.kernelSize, ''))}, padding=${show(padding, '0')}`;
  }
}

/** Mean over sliding windows of a 1-d signal. PyTorch: `nn.AvgPool1d` (no divisor_override). */
export class AvgPool1d extends AvgPoolNd {
  constructor(kernelSize: Size, options: AvgPoolLayerOptions = {}) {
    super('AvgPool1d', kernelSize, options, AVG1D_KEYS);
  }
  override extraRepr(): string {
    // PyTorch stores AvgPool1d's sizes as 1-tuples: `kernel_size=(3,)`.
    const single = (value: Size) => pythonTuple(typeof value === 'number' ? [value] : value);
    const { stride = this.kernelSize, padding = 0 } = this.options;
    return `kernel_size=${single(this.kernelSize)}, stride=${single(stride)}, padding=${single(padding)}`;
  }
  forward(input: Tensor): Tensor {
    return avgPool1d(input, this.kernelSize, this.options);
  }
}

/** Mean over sliding windows. PyTorch: `nn.AvgPool2d`. */
export class AvgPool2d extends AvgPoolNd {
  constructor(kernelSize: Size, options: AvgPoolLayerOptions = {}) {
    super('AvgPool2d', kernelSize, options, AVG_KEYS);
  }
  forward(input: Tensor): Tensor {
    return avgPool2d(input, this.kernelSize, this.options);
  }
}

/** Average pooling to a fixed output length. PyTorch: `nn.AdaptiveAvgPool1d(output_size)`. */
export class AdaptiveAvgPool1d extends Module {
  constructor(readonly outputSize: number) {
    super();
  }
  forward(input: Tensor): Tensor {
    return adaptiveAvgPool1d(input, this.outputSize);
  }
  override extraRepr(): string {
    return `output_size=${this.outputSize}`;
  }
}

/** Average pooling to a fixed output size (null keeps a dim). PyTorch: `nn.AdaptiveAvgPool2d(output_size)`. */
export class AdaptiveAvgPool2d extends Module {
  constructor(readonly outputSize: number | (number | null)[]) {
    super();
  }
  forward(input: Tensor): Tensor {
    return adaptiveAvgPool2d(input, this.outputSize);
  }
  override extraRepr(): string {
    return `output_size=${Array.isArray(this.outputSize) ? `(${this.outputSize.map((size) => size ?? 'None').join(', ')})` : this.outputSize}`;
  }
}

/** Max pooling to a fixed output size. PyTorch: `nn.AdaptiveMaxPool2d(output_size, return_indices=False)`. */
export class AdaptiveMaxPool2d extends Module<[Tensor], any> {
  constructor(
    readonly outputSize: number | (number | null)[],
    readonly options: { returnIndices?: boolean } = {},
  ) {
    super();
    checkOptions('AdaptiveMaxPool2d', options, ['returnIndices']);
  }
  forward(input: Tensor): Tensor | ValuesIndices {
    return adaptiveMaxPool2d(input, this.outputSize, this.options as never);
  }
  override extraRepr(): string {
    return `output_size=${Array.isArray(this.outputSize) ? `(${this.outputSize.map((size) => size ?? 'None').join(', ')})` : this.outputSize}`;
  }
}
