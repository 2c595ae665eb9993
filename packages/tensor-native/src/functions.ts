// Free functions that take several tensors: cat, stack, where, and the PyTorch-style
// function forms of the Tensor methods users most often call as functions.
import { FlodlError, invalidArgument } from './errors.js';
import { call } from './internal/methods.js';
import { nativeOps } from './internal/native-ops.js';
import { checkInt } from './internal/validate.js';
import { whereOf } from './ops-math.js';
import { normalizeDim, Tensor } from './tensor.js';

// The addon entries this file calls (see internal/native-ops.ts).
const native = nativeOps('cat', 'stack', 'einsum', 'rsubScalar', 'scalarTensor', 'div', 'powScalarBase');

function checkList(op: string, tensors: unknown): Tensor[] {
  if (!Array.isArray(tensors) || tensors.length === 0)
    throw invalidArgument(op, 'tensors', 'a non-empty array of Tensors', tensors);
  tensors.forEach((item, k) => {
    if (!(item instanceof Tensor)) throw invalidArgument(op, `tensors[${k}]`, 'a Tensor', item);
  });
  return tensors as Tensor[];
}

/**
 * Joins tensors along an existing `dim`; all other dims must match. PyTorch: `torch.cat`.
 * @throws FlodlError ERR_SHAPE naming the first tensor whose shape differs
 */
export function cat(tensors: readonly Tensor[], dim = 0): Tensor {
  const list = checkList('cat', tensors);
  checkInt('cat', 'dim', dim);
  const first = list[0]!.shape;
  const d = normalizeDim('cat', dim, first.length);
  list.forEach((tensor, k) => {
    const shape = tensor.shape;
    const ok = shape.length === first.length && shape.every((size, j) => j === d || size === first[j]);
    if (!ok) {
      throw new FlodlError('ERR_SHAPE', `tensors[${k}] does not match tensors[0] outside dim ${dim}`, {
        op: 'cat',
        expected: `shape [${first.map((size, j) => (j === d ? '*' : size)).join(', ')}]`,
        got: `[${shape.join(', ')}]`,
      });
    }
  });
  return call('cat', Object.fromEntries(list.map((tensor, k) => [`tensors[${k}]`, tensor])), () =>
    native.cat(
      list.map((tensor) => tensor._h),
      dim,
    ),
  );
}

/** Stacks same-shaped tensors along a new `dim`. PyTorch: `torch.stack`. @throws FlodlError ERR_SHAPE */
export function stack(tensors: readonly Tensor[], dim = 0): Tensor {
  const list = checkList('stack', tensors);
  checkInt('stack', 'dim', dim);
  const first = list[0]!.shape;
  normalizeDim('stack', dim, first.length + 1);
  list.forEach((tensor, k) => {
    const shape = tensor.shape;
    if (shape.length !== first.length || shape.some((size, j) => size !== first[j])) {
      throw new FlodlError('ERR_SHAPE', `tensors[${k}] has a different shape from tensors[0]`, {
        op: 'stack',
        expected: `[${first.join(', ')}]`,
        got: `[${shape.join(', ')}]`,
      });
    }
  });
  return call('stack', {}, () =>
    native.stack(
      list.map((tensor) => tensor._h),
      dim,
    ),
  );
}

/** `input` where `condition` holds, else `other` (numbers broadcast). PyTorch: `torch.where`. */
export function where(
  condition: Tensor,
  input: Tensor | number | boolean,
  other: Tensor | number | boolean,
): Tensor {
  if (!(condition instanceof Tensor)) throw invalidArgument('where', 'condition', 'a bool Tensor', condition);
  return whereOf(condition, input, other);
}

/** Einstein summation. PyTorch: `torch.einsum`. */
export function einsum(equation: string, ...operands: Tensor[]): Tensor {
  if (typeof equation !== 'string')
    throw invalidArgument('einsum', 'equation', 'a string such as "ij,jk->ik"', equation);
  const list = checkList('einsum', operands);
  return call('einsum', {}, () =>
    native.einsum(
      equation,
      list.map((tensor) => tensor._h),
    ),
  );
}

/** PyTorch: `torch.matmul(a, b)`. */
export function matmul(a: Tensor, b: Tensor): Tensor {
  return a.matmul(b);
}

/** PyTorch: `torch.add(a, b, alpha=...)`; a leading number is allowed. */
export function add(a: Tensor | number, b: Tensor | number, alpha?: number): Tensor {
  if (a instanceof Tensor) return a.add(b, alpha);
  if (b instanceof Tensor) return alpha === undefined ? b.add(a) : b.mul(alpha).add(a);
  throw invalidArgument('add', 'a', 'at least one Tensor operand', a);
}

/** PyTorch: `torch.sub(a, b)`; a leading number computes `a - b`. */
export function sub(a: Tensor | number, b: Tensor | number, alpha?: number): Tensor {
  if (a instanceof Tensor) return a.sub(b, alpha);
  if (b instanceof Tensor) {
    if (alpha !== undefined)
      throw invalidArgument('sub', 'alpha', 'no alpha when the first operand is a number', alpha);
    return call('sub', { b }, () => native.rsubScalar(b._h, a));
  }
  throw invalidArgument('sub', 'a', 'at least one Tensor operand', a);
}

/** PyTorch: `torch.mul(a, b)`. */
export function mul(a: Tensor | number, b: Tensor | number): Tensor {
  if (a instanceof Tensor) return a.mul(b);
  if (b instanceof Tensor) return b.mul(a);
  throw invalidArgument('mul', 'a', 'at least one Tensor operand', a);
}

/** PyTorch: `torch.div(a, b)`; a leading number computes `a / b`. */
export function div(a: Tensor | number, b: Tensor | number): Tensor {
  if (a instanceof Tensor) return a.div(b);
  if (b instanceof Tensor) {
    const numerator = new Tensor(native.scalarTensor(a, undefined));
    try {
      return call('div', { b }, () => native.div(numerator._h, b._h), 'none');
    } finally {
      numerator.dispose();
    }
  }
  throw invalidArgument('div', 'a', 'at least one Tensor operand', a);
}

/** PyTorch: `torch.pow(base, exponent)`; the base may be a number. */
export function pow(base: Tensor | number, exponent: Tensor | number): Tensor {
  if (base instanceof Tensor) return base.pow(exponent);
  if (exponent instanceof Tensor)
    return call('pow', { exponent }, () => native.powScalarBase(base, exponent._h));
  throw invalidArgument('pow', 'base', 'at least one Tensor operand', base);
}

/** PyTorch: `torch.maximum`. */
export function maximum(a: Tensor, b: Tensor): Tensor {
  return a.maximum(b);
}
/** PyTorch: `torch.minimum`. */
export function minimum(a: Tensor, b: Tensor): Tensor {
  return a.minimum(b);
}
