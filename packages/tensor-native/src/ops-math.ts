// Element-wise math, activations, comparisons and logical ops on Tensor.
import type { DType } from './dtype.js';
import { invalidArgument } from './errors.js';
import { dtypeCode } from './internal/codes.js';
import { diagnose } from './internal/diagnose.js';
import { arithmeticMethod, call, unaryMethod } from './internal/methods.js';
import { nativeOps } from './internal/native-ops.js';
import { checkInt, checkOneOf, checkOptions, checkScalar } from './internal/validate.js';
import { Tensor } from './tensor.js';

// The addon entries this file calls (see internal/native-ops.ts).
const native = nativeOps(
  'add',
  'addScalar',
  'sub',
  'subScalar',
  'mul',
  'mulScalar',
  'div',
  'divScalar',
  'pow',
  'powScalar',
  'remainder',
  'remainderScalar',
  'fmod',
  'fmodScalar',
  'atan2',
  'maximum',
  'minimum',
  'eq',
  'eqScalar',
  'ne',
  'neScalar',
  'lt',
  'ltScalar',
  'le',
  'leScalar',
  'gt',
  'gtScalar',
  'ge',
  'geScalar',
  'logicalAnd',
  'logicalOr',
  'logicalXor',
  'lerp',
  'gelu',
  'leakyRelu',
  'elu',
  'softplus',
  'round',
  'clamp',
  'clampTensor',
  'allclose',
  'scalarTensor',
  'where',
);

type Operand = Tensor | number | boolean;

declare module './tensor.js' {
  interface Tensor {
    /** `self + alpha * other`, broadcasting. PyTorch: `torch.add`. @throws FlodlError ERR_SHAPE when shapes do not broadcast */
    add(other: Operand, alpha?: number): Tensor;
    /** `self - alpha * other`, broadcasting. PyTorch: `torch.sub`. */
    sub(other: Operand, alpha?: number): Tensor;
    /** `self * other`, broadcasting. PyTorch: `torch.mul`. */
    mul(other: Operand): Tensor;
    /** `self / other`; `roundingMode` `'trunc'` or `'floor'` for integer-style division. PyTorch: `torch.div`. */
    div(other: Operand, options?: { roundingMode?: 'trunc' | 'floor' }): Tensor;
    /** `self ** exponent`. PyTorch: `torch.pow`. */
    pow(exponent: Operand): Tensor;
    /** Python-style modulus (sign of the divisor). PyTorch: `torch.remainder`. */
    remainder(other: Operand): Tensor;
    /** C-style modulus (sign of the dividend). PyTorch: `torch.fmod`. */
    fmod(other: Operand): Tensor;
    /** Element-wise `atan2(self, other)`. */
    atan2(other: Tensor): Tensor;
    /** Element-wise maximum. PyTorch: `torch.maximum`. */
    maximum(other: Tensor): Tensor;
    /** Element-wise minimum. PyTorch: `torch.minimum`. */
    minimum(other: Tensor): Tensor;
    /** `self + weight * (end - self)`. PyTorch: `torch.lerp`. */
    lerp(end: Tensor, weight: number): Tensor;
    neg(): Tensor;
    abs(): Tensor;
    sign(): Tensor;
    exp(): Tensor;
    expm1(): Tensor;
    log(): Tensor;
    log1p(): Tensor;
    log2(): Tensor;
    log10(): Tensor;
    sqrt(): Tensor;
    rsqrt(): Tensor;
    square(): Tensor;
    reciprocal(): Tensor;
    sin(): Tensor;
    cos(): Tensor;
    tan(): Tensor;
    asin(): Tensor;
    acos(): Tensor;
    atan(): Tensor;
    sinh(): Tensor;
    cosh(): Tensor;
    tanh(): Tensor;
    erf(): Tensor;
    /** Inverse error function. PyTorch: `torch.erfinv`. */
    erfinv(): Tensor;
    sigmoid(): Tensor;
    /** `max(0, x)`. PyTorch: `torch.relu`. */
    relu(): Tensor;
    /** `x * sigmoid(x)`. PyTorch: `F.silu`. */
    silu(): Tensor;
    /** Gaussian error linear unit, exact (`'none'`) or the tanh approximation. PyTorch: `F.gelu`. */
    gelu(approximate?: 'none' | 'tanh'): Tensor;
    /** `max(0, x) + negativeSlope * min(0, x)`. PyTorch: `F.leaky_relu`. */
    leakyRelu(negativeSlope?: number): Tensor;
    /** PyTorch: `F.elu`. */
    elu(alpha?: number): Tensor;
    /** `log(1 + exp(beta * x)) / beta`, linear above `threshold`. PyTorch: `F.softplus`. */
    softplus(beta?: number, threshold?: number): Tensor;
    floor(): Tensor;
    ceil(): Tensor;
    trunc(): Tensor;
    frac(): Tensor;
    /** Round half to even, optionally to `decimals` places. PyTorch: `torch.round`. */
    round(decimals?: number): Tensor;
    /** Limits values to `[min, max]` (either may be omitted). PyTorch: `torch.clamp`. */
    clamp(min?: number | Tensor, max?: number | Tensor): Tensor;
    isnan(): Tensor;
    isinf(): Tensor;
    isfinite(): Tensor;
    eq(other: Operand): Tensor;
    ne(other: Operand): Tensor;
    lt(other: Operand): Tensor;
    le(other: Operand): Tensor;
    gt(other: Operand): Tensor;
    ge(other: Operand): Tensor;
    logicalAnd(other: Tensor): Tensor;
    logicalOr(other: Tensor): Tensor;
    logicalXor(other: Tensor): Tensor;
    logicalNot(): Tensor;
    bitwiseNot(): Tensor;
    /** True when all elements are within `atol + rtol * |other|`. PyTorch: `torch.allclose`. */
    allclose(other: Tensor, options?: { rtol?: number; atol?: number; equalNan?: boolean }): boolean;
    /** Picks `self` where `condition` holds, else `other`. PyTorch: `torch.where(condition, self, other)`. */
    where(condition: Tensor, other: Operand): Tensor;
  }
}

const proto = Tensor.prototype;

proto.add = function add(this: Tensor, other: Operand, alpha?: number): Tensor {
  if (alpha === undefined) return addPlain.call(this, other);
  checkScalar('add', 'alpha', alpha);
  if (other instanceof Tensor)
    return call('add', { self: this, other }, () => native.add(this._h, other._h, alpha), 'broadcast');
  return call('add', { self: this }, () =>
    native.addScalar(this._h, checkScalar('add', 'other', other), alpha),
  );
};
const addPlain = arithmeticMethod('add', native.add, native.addScalar);

proto.sub = function sub(this: Tensor, other: Operand, alpha?: number): Tensor {
  if (alpha === undefined) return subPlain.call(this, other);
  checkScalar('sub', 'alpha', alpha);
  if (other instanceof Tensor)
    return call('sub', { self: this, other }, () => native.sub(this._h, other._h, alpha), 'broadcast');
  return call('sub', { self: this }, () =>
    native.subScalar(this._h, checkScalar('sub', 'other', other), alpha),
  );
};
const subPlain = arithmeticMethod('sub', native.sub, native.subScalar);

proto.mul = arithmeticMethod('mul', native.mul, native.mulScalar);

proto.div = function div(
  this: Tensor,
  other: Operand,
  options?: { roundingMode?: 'trunc' | 'floor' },
): Tensor {
  if (options === undefined) return divPlain.call(this, other);
  checkOptions('div', options, ['roundingMode']);
  const mode =
    options.roundingMode === undefined
      ? undefined
      : checkOneOf('div', 'roundingMode', options.roundingMode, ['trunc', 'floor']);
  for (const key of Object.keys(options)) {
    if (key !== 'roundingMode') throw invalidArgument('div', 'options', "only 'roundingMode'", key);
  }
  if (other instanceof Tensor)
    return call('div', { self: this, other }, () => native.div(this._h, other._h, mode), 'broadcast');
  return call('div', { self: this }, () =>
    native.divScalar(this._h, checkScalar('div', 'other', other), mode),
  );
};
const divPlain = arithmeticMethod('div', native.div, native.divScalar);

proto.pow = arithmeticMethod('pow', native.pow, native.powScalar);
proto.remainder = arithmeticMethod('remainder', native.remainder, native.remainderScalar);
proto.fmod = arithmeticMethod('fmod', native.fmod, native.fmodScalar);
proto.atan2 = arithmeticMethod('atan2', native.atan2, null);
proto.maximum = arithmeticMethod('maximum', native.maximum, null);
proto.minimum = arithmeticMethod('minimum', native.minimum, null);
proto.eq = arithmeticMethod('eq', native.eq, native.eqScalar);
proto.ne = arithmeticMethod('ne', native.ne, native.neScalar);
proto.lt = arithmeticMethod('lt', native.lt, native.ltScalar);
proto.le = arithmeticMethod('le', native.le, native.leScalar);
proto.gt = arithmeticMethod('gt', native.gt, native.gtScalar);
proto.ge = arithmeticMethod('ge', native.ge, native.geScalar);
proto.logicalAnd = arithmeticMethod('logicalAnd', native.logicalAnd, null);
proto.logicalOr = arithmeticMethod('logicalOr', native.logicalOr, null);
proto.logicalXor = arithmeticMethod('logicalXor', native.logicalXor, null);

proto.lerp = function lerp(this: Tensor, end: Tensor, weight: number): Tensor {
  checkScalar('lerp', 'weight', weight);
  return call('lerp', { self: this, end }, () => native.lerp(this._h, end._h, weight), 'broadcast');
};

const UNARY = [
  'neg',
  'abs',
  'sign',
  'exp',
  'expm1',
  'log',
  'log1p',
  'log2',
  'log10',
  'sqrt',
  'rsqrt',
  'square',
  'reciprocal',
  'sin',
  'cos',
  'tan',
  'asin',
  'acos',
  'atan',
  'sinh',
  'cosh',
  'tanh',
  'erf',
  'erfinv',
  'sigmoid',
  'relu',
  'silu',
  'floor',
  'ceil',
  'trunc',
  'frac',
  'isnan',
  'isinf',
  'isfinite',
  'logicalNot',
  'bitwiseNot',
] as const;
const unaryNative = nativeOps(...UNARY);
for (const name of UNARY) {
  (proto as unknown as Record<string, unknown>)[name] = unaryMethod(name, unaryNative[name]);
}

proto.gelu = function gelu(this: Tensor, approximate: 'none' | 'tanh' = 'none'): Tensor {
  const mode = checkOneOf('gelu', 'approximate', approximate, ['none', 'tanh']);
  return call('gelu', { self: this }, () => native.gelu(this._h, mode));
};

proto.leakyRelu = function leakyRelu(this: Tensor, negativeSlope = 0.01): Tensor {
  checkScalar('leakyRelu', 'negativeSlope', negativeSlope);
  return call('leakyRelu', { self: this }, () => native.leakyRelu(this._h, negativeSlope));
};

proto.elu = function elu(this: Tensor, alpha = 1): Tensor {
  checkScalar('elu', 'alpha', alpha);
  return call('elu', { self: this }, () => native.elu(this._h, alpha));
};

proto.softplus = function softplus(this: Tensor, beta = 1, threshold = 20): Tensor {
  checkScalar('softplus', 'beta', beta);
  checkScalar('softplus', 'threshold', threshold);
  return call('softplus', { self: this }, () => native.softplus(this._h, beta, threshold));
};

proto.round = function round(this: Tensor, decimals = 0): Tensor {
  checkInt('round', 'decimals', decimals);
  return call('round', { self: this }, () => native.round(this._h, decimals));
};

proto.clamp = function clamp(this: Tensor, min?: number | Tensor, max?: number | Tensor): Tensor {
  if (min === undefined && max === undefined) {
    throw invalidArgument('clamp', 'min/max', 'at least one bound', 'neither');
  }
  if (min instanceof Tensor || max instanceof Tensor) {
    const low = min instanceof Tensor ? min : undefined;
    const high = max instanceof Tensor ? max : undefined;
    if ((min !== undefined && low === undefined) || (max !== undefined && high === undefined)) {
      throw invalidArgument(
        'clamp',
        'min/max',
        'both Tensors or both numbers',
        `${typeof min} and ${typeof max}`,
      );
    }
    return call(
      'clamp',
      { self: this, min: low, max: high },
      () => native.clampTensor(this._h, low?._h, high?._h),
      'broadcast',
    );
  }
  if (min !== undefined) checkScalar('clamp', 'min', min);
  if (max !== undefined) checkScalar('clamp', 'max', max);
  return call('clamp', { self: this }, () => native.clamp(this._h, min, max));
};

proto.allclose = function allclose(
  this: Tensor,
  other: Tensor,
  options: { rtol?: number; atol?: number; equalNan?: boolean } = {},
): boolean {
  checkOptions('allclose', options, ['rtol', 'atol', 'equalNan']);
  const { rtol = 1e-5, atol = 1e-8, equalNan = false } = options ?? {};
  try {
    return native.allclose(this._h, other._h, rtol, atol, equalNan);
  } catch (error) {
    throw diagnose('allclose', { self: this, other }, error, 'broadcast');
  }
};

proto.where = function where(this: Tensor, condition: Tensor, other: Operand): Tensor {
  return whereOf(condition, this, other);
};

function defaultDtypeOf(a: Operand, b: Operand): DType {
  if (typeof a === 'boolean' && typeof b === 'boolean') return 'bool';
  if (Number.isInteger(a) && Number.isInteger(b) && typeof a === 'number' && typeof b === 'number')
    return 'int64';
  return 'float32';
}

/** Element-wise choice: `input` where `condition` holds, else `other`. PyTorch: `torch.where`. */
export function whereOf(condition: Tensor, input: Operand, other: Operand): Tensor {
  const scratch: Tensor[] = [];
  // One number beside a tensor promotes like a Python number (a wrapped scalar); two numbers
  // take PyTorch's default dtypes (float32, int64, bool), as torch.where(c, 1.5, -0.5) does.
  const bothNumbers = !(input instanceof Tensor) && !(other instanceof Tensor);
  const asTensor = (value: Operand, name: string): Tensor => {
    if (value instanceof Tensor) return value;
    const scalar = checkScalar('where', name, value);
    const dtype = bothNumbers ? dtypeCode(defaultDtypeOf(input, other)) : undefined;
    const wrapped = new Tensor(native.scalarTensor(scalar, dtype));
    scratch.push(wrapped);
    return wrapped;
  };
  try {
    const a = asTensor(input, 'input');
    const b = asTensor(other, 'other');
    return call('where', { condition, input: a, other: b }, () => native.where(condition._h, a._h, b._h));
  } finally {
    for (const tensor of scratch) tensor.dispose();
  }
}
