// Linear maps (PyTorch: torch.nn.functional.linear, bilinear) and flatten, the usual bridge
// from convolutional features to them.
import { aten, type Tensor } from '@flodl/tensor-native';
import {
  checkInteger,
  checkMinimumRank,
  checkOptionalTensor,
  checkRank,
  checkShape,
  checkTensor,
  shapeError,
  shapeText,
} from './arguments.js';

/**
 * Applies an affine map: `y = x Wᵀ + b`.
 *
 * @param input - `(*, in_features)`.
 * @param weight - `(out_features, in_features)`.
 * @param bias - optional `(out_features)`.
 *
 * **Shape**: `(*, in_features) → (*, out_features)`.
 *
 * @throws FlodlError `ERR_SHAPE` when `weight` is not 2-d or its `in_features` differ from the
 *   input's last dim, or `bias` is not `(out_features)`.
 * @example
 * ```ts
 * const y = linear(randn([8, 4]), randn([3, 4]), zeros([3])); // [8, 3]
 * ```
 * PyTorch: `torch.nn.functional.linear(input, weight, bias)`.
 */
export function linear(input: Tensor, weight: Tensor, bias?: Tensor): Tensor {
  checkTensor('linear', 'input', input);
  checkTensor('linear', 'weight', weight);
  const biasTensor = checkOptionalTensor('linear', 'bias', bias);
  checkRank('linear', 'weight', weight, { 2: '(out_features, in_features)' });
  checkMinimumRank('linear', 'input', input, 1, '(*, in_features)');
  const [outFeatures, inFeatures] = weight.shape as [number, number];
  const last = input.shape[input.ndim - 1];
  if (last !== inFeatures) {
    throw shapeError(
      'linear',
      'input and weight disagree on in_features',
      `input [..., ${inFeatures}] (weight.shape[1])`,
      `input ${shapeText(input.shape)}`,
    );
  }
  if (biasTensor !== undefined)
    checkShape('linear', 'bias', biasTensor, [outFeatures], 'out_features of weight');
  return aten.call('linear', input, weight, biasTensor);
}

/**
 * Applies a bilinear map: `y_k = x1ᵀ A_k x2 + b_k`.
 *
 * @param input1 - `(*, in1_features)`.
 * @param input2 - `(*, in2_features)`, the same leading dims as `input1`.
 * @param weight - `(out_features, in1_features, in2_features)`.
 * @param bias - optional `(out_features)`.
 *
 * **Shape**: `(*, in1), (*, in2) → (*, out_features)`.
 *
 * @throws FlodlError `ERR_SHAPE` when the feature sizes or leading dims disagree.
 * @example
 * ```ts
 * const y = bilinear(randn([8, 2]), randn([8, 5]), randn([3, 2, 5])); // [8, 3]
 * ```
 * PyTorch: `torch.nn.functional.bilinear(input1, input2, weight, bias)`.
 */
export function bilinear(input1: Tensor, input2: Tensor, weight: Tensor, bias?: Tensor): Tensor {
  checkTensor('bilinear', 'input1', input1);
  checkTensor('bilinear', 'input2', input2);
  checkTensor('bilinear', 'weight', weight);
  const biasTensor = checkOptionalTensor('bilinear', 'bias', bias);
  checkRank('bilinear', 'weight', weight, { 3: '(out_features, in1_features, in2_features)' });
  const [outFeatures, in1, in2] = weight.shape as [number, number, number];
  if (input1.ndim === 0 || input1.shape[input1.ndim - 1] !== in1) {
    throw shapeError(
      'bilinear',
      'input1 does not fit weight',
      `input1 [..., ${in1}] (weight.shape[1])`,
      `input1 ${shapeText(input1.shape)}`,
    );
  }
  if (input2.ndim === 0 || input2.shape[input2.ndim - 1] !== in2) {
    throw shapeError(
      'bilinear',
      'input2 does not fit weight',
      `input2 [..., ${in2}] (weight.shape[2])`,
      `input2 ${shapeText(input2.shape)}`,
    );
  }
  const leading1 = input1.shape.slice(0, -1);
  const leading2 = input2.shape.slice(0, -1);
  if (leading1.length !== leading2.length || leading1.some((size, k) => size !== leading2[k])) {
    throw shapeError(
      'bilinear',
      'input1 and input2 have different leading dims',
      `input2 [${[...leading1, in2].join(', ')}]`,
      `input2 ${shapeText(input2.shape)}`,
    );
  }
  if (biasTensor !== undefined)
    checkShape('bilinear', 'bias', biasTensor, [outFeatures], 'out_features of weight');
  return aten.call('bilinear', input1, input2, weight, biasTensor);
}

/**
 * Merges the dims `startDim..endDim` into one: `(d0, …, d_s, …, d_e, …) → (d0, …, d_s·…·d_e, …)`.
 *
 * @param input - any tensor.
 * @param startDim - the first dim to merge (default 0; negative counts from the end).
 * @param endDim - the last dim to merge (default -1).
 *
 * **Shape**: `(*, S_start, …, S_end, *) → (*, S_start·…·S_end, *)`; a 0-d input becomes `(1)`.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` when a dim is out of range or `startDim` comes after `endDim`.
 * @example
 * ```ts
 * const features = flatten(randn([8, 16, 4, 4]), 1); // [8, 256]
 * ```
 * PyTorch: `torch.flatten(input, start_dim, end_dim)` (`nn.Flatten` uses `startDim = 1`).
 */
export function flatten(input: Tensor, startDim = 0, endDim = -1): Tensor {
  checkTensor('flatten', 'input', input);
  checkInteger('flatten', 'startDim', startDim);
  checkInteger('flatten', 'endDim', endDim);
  return input.flatten(startDim, endDim);
}
