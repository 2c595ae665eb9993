// Matrix products and dense solvers on Tensor.

import { arithmeticMethod, call, callMany } from './internal/methods.js';
import { nativeOps } from './internal/native-ops.js';
import { checkOneOf, checkScalar } from './internal/validate.js';
import { Tensor } from './tensor.js';

// The addon entries this file calls (see internal/native-ops.ts).
const native = nativeOps(
  'matmul',
  'mm',
  'bmm',
  'mv',
  'dot',
  'outer',
  't',
  'trace',
  'addmm',
  'solve',
  'inv',
  'det',
  'cholesky',
  'pinv',
  'qr',
);

declare module './tensor.js' {
  interface Tensor {
    /**
     * Matrix product with NumPy broadcasting of batch dims. PyTorch: `torch.matmul`.
     * **Shape**: `(…, n, k) @ (…, k, m) → (…, n, m)`; 1-d operands are vectors.
     * @throws FlodlError ERR_SHAPE when the inner dims differ
     */
    matmul(other: Tensor): Tensor;
    /** 2-d matrix product. **Shape**: `(n, k) @ (k, m) → (n, m)`. PyTorch: `torch.mm`. */
    mm(other: Tensor): Tensor;
    /** Batched matrix product. **Shape**: `(b, n, k) @ (b, k, m) → (b, n, m)`. PyTorch: `torch.bmm`. */
    bmm(other: Tensor): Tensor;
    /** Matrix-vector product. PyTorch: `torch.mv`. */
    mv(vector: Tensor): Tensor;
    /** Inner product of two 1-d tensors. PyTorch: `torch.dot`. */
    dot(other: Tensor): Tensor;
    /** Outer product of two 1-d tensors. PyTorch: `torch.outer`. */
    outer(other: Tensor): Tensor;
    /** Transpose of a ≤2-d tensor. PyTorch: `Tensor.t`. */
    t(): Tensor;
    /** Sum of the diagonal. PyTorch: `torch.trace`. */
    trace(): Tensor;
    /** `beta * self + alpha * (mat1 @ mat2)`. PyTorch: `torch.addmm`. */
    addmm(mat1: Tensor, mat2: Tensor, options?: { beta?: number; alpha?: number }): Tensor;
  }
}

const proto = Tensor.prototype;
proto.matmul = arithmeticMethod('matmul', native.matmul, null, 'matmul');
proto.mm = arithmeticMethod('mm', native.mm, null, 'matmul');
proto.bmm = arithmeticMethod('bmm', native.bmm, null, 'matmul');
proto.mv = arithmeticMethod('mv', native.mv, null, 'matmul');
proto.dot = arithmeticMethod('dot', native.dot, null, 'matmul');
proto.outer = arithmeticMethod('outer', native.outer, null, 'none');
proto.t = function t(this: Tensor): Tensor {
  return call('t', { self: this }, () => native.t(this._h));
};
proto.trace = function trace(this: Tensor): Tensor {
  return call('trace', { self: this }, () => native.trace(this._h));
};
proto.addmm = function addmm(
  this: Tensor,
  mat1: Tensor,
  mat2: Tensor,
  options: { beta?: number; alpha?: number } = {},
): Tensor {
  const beta = checkScalar('addmm', 'beta', options.beta ?? 1);
  const alpha = checkScalar('addmm', 'alpha', options.alpha ?? 1);
  return call(
    'addmm',
    { self: this, mat1, mat2 },
    () => native.addmm(this._h, mat1._h, mat2._h, beta, alpha),
    'none',
  );
};

/** Dense linear algebra. PyTorch: `torch.linalg`. */
export const linalg = {
  /** Solves `A X = B` for square `A`. PyTorch: `torch.linalg.solve`. */
  solve(A: Tensor, B: Tensor): Tensor {
    return call('linalg.solve', { A, B }, () => native.solve(A._h, B._h));
  },
  /** Inverse of a square matrix. PyTorch: `torch.linalg.inv`. */
  inv(A: Tensor): Tensor {
    return call('linalg.inv', { A }, () => native.inv(A._h));
  },
  /** Determinant. PyTorch: `torch.linalg.det`. */
  det(A: Tensor): Tensor {
    return call('linalg.det', { A }, () => native.det(A._h));
  },
  /** Cholesky factor (lower unless `upper`). PyTorch: `torch.linalg.cholesky`. */
  cholesky(A: Tensor, options: { upper?: boolean } = {}): Tensor {
    return call('linalg.cholesky', { A }, () => native.cholesky(A._h, options.upper === true));
  },
  /** Moore-Penrose pseudo-inverse. PyTorch: `torch.linalg.pinv`. */
  pinv(A: Tensor): Tensor {
    return call('linalg.pinv', { A }, () => native.pinv(A._h));
  },
  /** QR decomposition. PyTorch: `torch.linalg.qr`. */
  qr(A: Tensor, mode: 'reduced' | 'complete' | 'r' = 'reduced'): { Q: Tensor; R: Tensor } {
    const [Q, R] = callMany('linalg.qr', { A }, () =>
      native.qr(A._h, checkOneOf('linalg.qr', 'mode', mode, ['reduced', 'complete', 'r'])),
    );
    return { Q: Q!, R: R! };
  },
};
