import { interpolate, pixelShuffle, pixelUnshuffle } from '@flodl/autograd';
import type { Tensor } from '@flodl/tensor-native';
import { Module } from '../module.js';
import { checkOptions, positiveInteger, pythonFloat, pythonSize, pythonTuple } from './common.js';

/** Options of `Upsample`. */
export interface UpsampleOptions {
  size?: number | number[];
  scaleFactor?: number | number[];
  /** Default 'nearest'. */
  mode?: 'nearest' | 'bilinear' | 'linear' | 'bicubic' | 'trilinear';
  alignCorners?: boolean;
}

/** Resizes by `size` or `scaleFactor`. PyTorch: `nn.Upsample(size=None, scale_factor=None, mode='nearest')`. */
export class Upsample extends Module {
  constructor(readonly options: UpsampleOptions) {
    super();
    checkOptions('Upsample', options, ['size', 'scaleFactor', 'mode', 'alignCorners']);
  }
  forward(input: Tensor): Tensor {
    return interpolate(input, { mode: 'nearest', ...this.options });
  }
  override extraRepr(): string {
    const { size, scaleFactor, mode = 'nearest' } = this.options;
    // PyTorch stores scale factors as floats and (in 1.13) prints the mode bare.
    const scale =
      scaleFactor === undefined
        ? undefined
        : typeof scaleFactor === 'number'
          ? pythonFloat(scaleFactor)
          : pythonTuple(scaleFactor.map(pythonFloat));
    const setting =
      scale === undefined
        ? `size=${size === undefined ? 'None' : pythonSize(size)}`
        : `scale_factor=${scale}`;
    return `${setting}, mode=${mode}`;
  }
}

/** `(N, C·r², H, W)` → `(N, C, H·r, W·r)`. PyTorch: `nn.PixelShuffle(upscale_factor)`. */
export class PixelShuffle extends Module {
  readonly upscaleFactor: number;
  constructor(upscaleFactor: number) {
    super();
    this.upscaleFactor = positiveInteger('PixelShuffle', 'upscaleFactor', upscaleFactor);
  }
  forward(input: Tensor): Tensor {
    return pixelShuffle(input, this.upscaleFactor);
  }
  override extraRepr(): string {
    return `upscale_factor=${this.upscaleFactor}`;
  }
}

/** The inverse of PixelShuffle. PyTorch: `nn.PixelUnshuffle(downscale_factor)`. */
export class PixelUnshuffle extends Module {
  readonly downscaleFactor: number;
  constructor(downscaleFactor: number) {
    super();
    this.downscaleFactor = positiveInteger('PixelUnshuffle', 'downscaleFactor', downscaleFactor);
  }
  forward(input: Tensor): Tensor {
    return pixelUnshuffle(input, this.downscaleFactor);
  }
  override extraRepr(): string {
    return `downscale_factor=${this.downscaleFactor}`;
  }
}
