// Finite-difference gradient checks of the neural-network ops: one entry per op family, each
// building small float64 leaves (inputs that require grad) and the function to differentiate.
import { manualSeed, randn, Tensor } from '@flodl/tensor-native';
import { F } from '../../src/index.js';

export const double = (...shape: number[]): Tensor => randn(shape, { dtype: 'float64' });
const leaf = (...shape: number[]): Tensor => double(...shape).requiresGrad_(true);
export const int64 = (values: number[], shape = [values.length]): Tensor =>
  Tensor.from(values, shape, { dtype: 'int64' });
export const CHECK = { eps: 1e-6, atol: 1e-5, rtol: 1e-3 };

type Check = () => [(...inputs: Tensor[]) => Tensor | Tensor[], Tensor[]];

export const GRADCHECKS: Record<string, Check> = {
  linear: () => [(x, w, b) => F.linear(x!, w!, b), [leaf(2, 3), leaf(2, 3), leaf(2)]],
  bilinear: () => [
    (a, b, w, c) => F.bilinear(a!, b!, w!, c),
    [leaf(2, 2), leaf(2, 3), leaf(2, 2, 3), leaf(2)],
  ],
  flatten: () => [(x) => F.flatten(x!, 1), [leaf(2, 2, 3)]],
  'conv1d stride, padding, dilation, groups': () => [
    (x, w, b) => F.conv1d(x!, w!, b, { stride: 2, padding: 1, dilation: 2, groups: 2 }),
    [leaf(1, 4, 6), leaf(2, 2, 2), leaf(2)],
  ],
  "conv2d padding 'same'": () => [
    (x, w, b) => F.conv2d(x!, w!, b, { padding: 'same' }),
    [leaf(1, 2, 3, 3), leaf(2, 2, 2, 2), leaf(2)],
  ],
  conv3d: () => [
    (x, w) => F.conv3d(x!, w!, undefined, { padding: [0, 1, 0] }),
    [leaf(1, 1, 2, 2, 3), leaf(2, 1, 2, 2, 2)],
  ],
  convTranspose1d: () => [
    (x, w, b) => F.convTranspose1d(x!, w!, b, { stride: 2, padding: 1, outputPadding: 1 }),
    [leaf(1, 2, 3), leaf(2, 2, 3), leaf(2)],
  ],
  'convTranspose2d groups, dilation': () => [
    (x, w) => F.convTranspose2d(x!, w!, undefined, { groups: 2, dilation: 2 }),
    [leaf(1, 2, 2, 2), leaf(2, 1, 2, 2)],
  ],
  convTranspose3d: () => [
    (x, w) => F.convTranspose3d(x!, w!, undefined, { stride: 2 }),
    [leaf(1, 1, 2, 1, 2), leaf(1, 2, 2, 1, 1)],
  ],
  'maxPool1d ceilMode': () => [(x) => F.maxPool1d(x!, 3, { stride: 2, ceilMode: true }), [leaf(1, 2, 6)]],
  'maxPool2d padding, dilation': () => [
    (x) => F.maxPool2d(x!, 2, { padding: 1, dilation: 2, stride: 1 }),
    [leaf(1, 1, 4, 4)],
  ],
  maxPool3d: () => [(x) => F.maxPool3d(x!, 2, { returnIndices: true }).values, [leaf(1, 1, 2, 4, 4)]],
  'avgPool1d countIncludePad false': () => [
    (x) => F.avgPool1d(x!, 3, { stride: 2, padding: 1, countIncludePad: false }),
    [leaf(1, 2, 5)],
  ],
  'avgPool2d divisorOverride': () => [(x) => F.avgPool2d(x!, 2, { divisorOverride: 3 }), [leaf(1, 2, 4, 4)]],
  avgPool3d: () => [(x) => F.avgPool3d(x!, 2, { ceilMode: true }), [leaf(1, 1, 3, 2, 3)]],
  adaptiveAvgPool1d: () => [(x) => F.adaptiveAvgPool1d(x!, 3), [leaf(1, 2, 5)]],
  adaptiveAvgPool2d: () => [(x) => F.adaptiveAvgPool2d(x!, [2, null]), [leaf(1, 1, 5, 3)]],
  adaptiveAvgPool3d: () => [(x) => F.adaptiveAvgPool3d(x!, 2), [leaf(1, 1, 3, 3, 3)]],
  adaptiveMaxPool1d: () => [(x) => F.adaptiveMaxPool1d(x!, 2), [leaf(1, 2, 5)]],
  adaptiveMaxPool2d: () => [(x) => F.adaptiveMaxPool2d(x!, [2, 3]), [leaf(2, 5, 5)]],
  adaptiveMaxPool3d: () => [(x) => F.adaptiveMaxPool3d(x!, [1, 2, 2]), [leaf(1, 1, 2, 3, 3)]],
  'batchNorm training': () => {
    const [mean, variance] = [double(3), double(3).abs()];
    return [
      (x, w, b) => F.batchNorm(x!, mean, variance, w, b, { training: true }),
      [leaf(3, 3, 2), leaf(3), leaf(3)],
    ];
  },
  'batchNorm evaluation': () => {
    const [mean, variance] = [double(2), double(2).abs().add(0.5)];
    return [(x, w, b) => F.batchNorm(x!, mean, variance, w, b), [leaf(3, 2), leaf(2), leaf(2)]];
  },
  instanceNorm: () => [
    (x, w, b) => F.instanceNorm(x!, undefined, undefined, w, b),
    [leaf(2, 2, 4), leaf(2), leaf(2)],
  ],
  layerNorm: () => [(x, w, b) => F.layerNorm(x!, [2, 3], w, b), [leaf(2, 2, 3), leaf(2, 3), leaf(2, 3)]],
  groupNorm: () => [(x, w, b) => F.groupNorm(x!, 2, w, b), [leaf(2, 4, 2), leaf(4), leaf(4)]],
  rmsNorm: () => [(x, w) => F.rmsNorm(x!, 4, w, { eps: 1e-6 }), [leaf(3, 4), leaf(4)]],
  // paddingIdx and scaleGradByFreq change the gradient on purpose: the goldens cover them.
  'embedding, repeated indices': () => [(w) => F.embedding(int64([1, 0, 1, 2], [2, 2]), w!), [leaf(3, 2)]],
  'embeddingBag max': () => [
    (w) => F.embeddingBag(int64([0, 2, 1, 3]), w!, int64([0, 1]), { mode: 'max' }),
    [leaf(4, 2)],
  ],
  'embeddingBag perSampleWeights': () => [
    (w, s) =>
      F.embeddingBag(int64([0, 2, 1, 3], [2, 2]), w!, undefined, { mode: 'sum', perSampleWeights: s }),
    [leaf(4, 2), leaf(2, 2)],
  ],
  activations: () => [
    (x) => [
      F.relu(x!),
      F.leakyRelu(x!, { negativeSlope: 0.2 }),
      F.elu(x!, { alpha: 0.5 }),
      F.selu(x!),
      F.gelu(x!),
      F.gelu(x!, { approximate: 'tanh' }),
      F.silu(x!),
      F.mish(x!),
      F.softplus(x!, { beta: 2, threshold: 1 }),
      F.tanh(x!),
      F.sigmoid(x!),
      F.hardswish(x!.mul(2)),
      F.hardsigmoid(x!.mul(2)),
    ],
    [leaf(2, 3)],
  ],
  prelu: () => [(x, w) => F.prelu(x!, w!), [leaf(2, 3, 2), leaf(3)]],
  'softmax, logSoftmax': () => [(x) => [F.softmax(x!, 1), F.logSoftmax(x!, 0)], [leaf(2, 3)]],
  'pad every mode': () => [
    (x) => [
      F.pad(x!, [1, -1, 2, 0], { value: 0.5 }),
      F.pad(x!, [2, 1], { mode: 'reflect' }),
      F.pad(x!, [1, 2, 1, 0], { mode: 'replicate' }),
      F.pad(x!, [1, 1, 1, 0], { mode: 'circular' }),
    ],
    [leaf(1, 2, 3)],
  ],
  'interpolate every mode': () => [
    (x) => [
      F.interpolate(x!, { scaleFactor: 1.5 }),
      F.interpolate(x!, { size: [3, 4], mode: 'nearest-exact' }),
      F.interpolate(x!, { size: [3, 4], mode: 'bilinear', alignCorners: true }),
      F.interpolate(x!, { scaleFactor: 1.5, mode: 'bicubic' }),
      F.interpolate(x!, { size: [1, 2], mode: 'area' }),
      F.interpolate(x!.reshape(1, 2, 3), { size: 4, mode: 'linear' }),
      F.interpolate(x!.reshape(1, 1, 1, 2, 3), { scaleFactor: 2, mode: 'trilinear' }),
    ],
    [leaf(1, 1, 2, 3)],
  ],
  'pixelShuffle, pixelUnshuffle': () => [
    (x) => [F.pixelShuffle(x!, 2), F.pixelUnshuffle(x!.reshape(1, 1, 4, 4), 2)],
    [leaf(1, 4, 2, 2)],
  ],
  'unfold, fold': () => [
    (x, c) => [F.unfold(x!, 2, { padding: 1, stride: 2 }), F.fold(c!, [3, 3], 2, { dilation: 2 })],
    [leaf(1, 2, 3, 3), leaf(4, 1)],
  ],
  'dropout with a fixed seed': () => [
    (x) => {
      manualSeed(5);
      return [F.dropout(x!, { p: 0.3 }), F.dropout2d(x!.reshape(2, 3, 2, 1), { p: 0.5 })];
    },
    [leaf(2, 6)],
  ],
};
