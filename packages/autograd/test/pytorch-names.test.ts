// The PyTorch names of the Tensor API on a Variable (a Variable is a Tensor): T, mT, tolist and
// the options forms of the reductions are recorded and differentiable. Their values are checked
// against PyTorch in tensor-native's test/pytorch-names.test.ts; here their gradients are
// checked against finite differences.
import { randn, tidy } from '@flodl/tensor-native';
import { captureWarnings } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { gradcheck, Variable } from '../src/index.js';

const leaf = (shape: number[]) => new Variable(randn(shape, { dtype: 'float64' }), true);

describe('PyTorch names on a Variable', () => {
  // T on a 3-d tensor below: PyTorch's deprecation warning, once per process.
  captureWarnings([/Tensor\.T on a 3-d tensor reverses all its dims/]);

  it('T and mT are differentiable views', () =>
    tidy(() => {
      expect(gradcheck((x) => x.T.mul(2), [leaf([2, 3])])).toBe(true);
      expect(gradcheck((x) => x.T, [leaf([2, 3, 4])])).toBe(true);
      expect(gradcheck((x) => x.mT.matmul(x), [leaf([2, 3, 2])])).toBe(true);
      const x = leaf([2, 3]);
      expect(x.mT.gradFn).toBe('TransposeBackward0');
      expect(x.T.gradFn).toBe('PermuteBackward0');
    }));

  it('reductions in their options form are differentiable', () =>
    tidy(() => {
      const x = () => leaf([3, 4]);
      expect(gradcheck((t) => t.mean({ dim: 1, keepdim: true }), [x()])).toBe(true);
      expect(gradcheck((t) => t.sum({ keepdim: true }), [x()])).toBe(true);
      expect(gradcheck((t) => t.std({ dim: 0, correction: 0 }), [x()])).toBe(true);
      expect(gradcheck((t) => t.var({ dim: [0, 1], correction: 2 }), [x()])).toBe(true);
      expect(gradcheck((t) => t.norm({ p: 3, dim: 1, keepdim: true }), [x()])).toBe(true);
      expect(gradcheck((t) => t.amax({ dim: 0 }), [x()])).toBe(true);
      expect(gradcheck((t) => t.max({ dim: 1 }).values, [x()])).toBe(true);
      expect(gradcheck((t) => t.logsumexp({ dim: [0, 1] }), [x()])).toBe(true);
      expect(gradcheck((t) => t.softmax({ dim: 0 }), [x()])).toBe(true);
      expect(gradcheck((t) => t.cumprod({ dim: 1 }), [x()])).toBe(true);
      expect(x().mean({ dim: 0 }).gradFn).toBe('MeanBackward1');
    }));

  it('tolist reads a Variable without touching its graph', () =>
    tidy(() => {
      const x = leaf([2, 2]);
      const y = x.mul(2);
      const values = x.tolist() as number[][];
      expect(y.tolist()).toEqual(values.map((row) => row.map((value) => value * 2)));
      expect(y.requiresGrad).toBe(true);
    }));
});
