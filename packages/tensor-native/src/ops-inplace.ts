// In-place updates (names end in `_`, as in PyTorch). They return the same Tensor object.
import { invalidArgument } from './errors.js';
import { callInPlace } from './internal/methods.js';
import { nativeOps } from './internal/native-ops.js';
import { checkBoolean, checkNumber, checkScalar } from './internal/validate.js';
import { Tensor } from './tensor.js';

// The addon entries this file calls (see internal/native-ops.ts).
const native = nativeOps(
  'add_',
  'addScalar_',
  'sub_',
  'mul_',
  'mulScalar_',
  'div_',
  'divScalar_',
  'pow_',
  'addcmul_',
  'addcdiv_',
  'lerp_',
  'copy_',
  'zero_',
  'fill_',
  'clamp_',
  'maskedFill_',
  'uniform_',
  'normal_',
);

declare module './tensor.js' {
  interface Tensor {
    /** `self += alpha * other` in place. PyTorch: `Tensor.add_`. */
    add_(other: Tensor | number, alpha?: number): Tensor;
    /** `self -= alpha * other` in place. */
    sub_(other: Tensor | number, alpha?: number): Tensor;
    /** `self *= other` in place. */
    mul_(other: Tensor | number): Tensor;
    /** `self /= other` in place. */
    div_(other: Tensor | number): Tensor;
    /** `self **= exponent` in place. */
    pow_(exponent: number): Tensor;
    /** `self += value * t1 * t2` in place. PyTorch: `Tensor.addcmul_`. */
    addcmul_(tensor1: Tensor, tensor2: Tensor, value?: number): Tensor;
    /** `self += value * t1 / t2` in place. PyTorch: `Tensor.addcdiv_`. */
    addcdiv_(tensor1: Tensor, tensor2: Tensor, value?: number): Tensor;
    /** `self += weight * (end - self)` in place. */
    lerp_(end: Tensor, weight: number): Tensor;
    /** Copies `src` (broadcast, cast, across devices) into `self`. PyTorch: `Tensor.copy_`. */
    copy_(src: Tensor, nonBlocking?: boolean): Tensor;
    /** Fills with zeros. */
    zero_(): Tensor;
    /** Fills with `value`. */
    fill_(value: number | boolean): Tensor;
    /** Clamps in place. */
    clamp_(min?: number, max?: number): Tensor;
    sqrt_(): Tensor;
    neg_(): Tensor;
    exp_(): Tensor;
    relu_(): Tensor;
    erfinv_(): Tensor;
    tanh_(): Tensor;
    sigmoid_(): Tensor;
    /** Writes `value` where `mask` is true. */
    maskedFill_(mask: Tensor, value: number | boolean): Tensor;
    /** Fills with samples of U(low, high). */
    uniform_(low?: number, high?: number): Tensor;
    /** Fills with samples of N(mean, std²). */
    normal_(mean?: number, std?: number): Tensor;
  }
}

const proto = Tensor.prototype;

function tensorOrScalar(
  op: string,
  tensorFn: (h: number, o: number, a?: number) => void,
  scalarFn: (h: number, s: number | boolean, a?: number) => void,
) {
  return function (this: Tensor, other: Tensor | number, alpha?: number): Tensor {
    if (alpha !== undefined) checkScalar(op, 'alpha', alpha);
    if (other instanceof Tensor) {
      return callInPlace(op, this, { other }, () =>
        alpha === undefined ? tensorFn(this._h, other._h) : tensorFn(this._h, other._h, alpha),
      );
    }
    checkScalar(op, 'other', other);
    return callInPlace(op, this, {}, () =>
      alpha === undefined ? scalarFn(this._h, other) : scalarFn(this._h, other, alpha),
    );
  };
}

proto.add_ = tensorOrScalar('add_', native.add_, native.addScalar_);
proto.sub_ = tensorOrScalar('sub_', native.sub_, (h, s, a) => native.addScalar_(h, -Number(s) * (a ?? 1)));
proto.mul_ = tensorOrScalar('mul_', native.mul_, native.mulScalar_);
proto.div_ = tensorOrScalar('div_', native.div_, native.divScalar_);

proto.pow_ = function pow_(this: Tensor, exponent: number): Tensor {
  checkScalar('pow_', 'exponent', exponent);
  return callInPlace('pow_', this, {}, () => native.pow_(this._h, exponent));
};
proto.addcmul_ = function addcmul_(this: Tensor, tensor1: Tensor, tensor2: Tensor, value = 1): Tensor {
  checkScalar('addcmul_', 'value', value);
  return callInPlace('addcmul_', this, { tensor1, tensor2 }, () =>
    native.addcmul_(this._h, tensor1._h, tensor2._h, value),
  );
};
proto.addcdiv_ = function addcdiv_(this: Tensor, tensor1: Tensor, tensor2: Tensor, value = 1): Tensor {
  checkScalar('addcdiv_', 'value', value);
  return callInPlace('addcdiv_', this, { tensor1, tensor2 }, () =>
    native.addcdiv_(this._h, tensor1._h, tensor2._h, value),
  );
};
proto.lerp_ = function lerp_(this: Tensor, end: Tensor, weight: number): Tensor {
  checkScalar('lerp_', 'weight', weight);
  return callInPlace('lerp_', this, { end }, () => native.lerp_(this._h, end._h, weight));
};
proto.copy_ = function copy_(this: Tensor, src: Tensor, nonBlocking = false): Tensor {
  checkBoolean('copy_', 'nonBlocking', nonBlocking, false);
  return callInPlace('copy_', this, { src }, () => native.copy_(this._h, src._h, nonBlocking));
};
proto.zero_ = function zero_(this: Tensor): Tensor {
  return callInPlace('zero_', this, {}, () => native.zero_(this._h));
};
proto.fill_ = function fill_(this: Tensor, value: number | boolean): Tensor {
  checkScalar('fill_', 'value', value);
  return callInPlace('fill_', this, {}, () => native.fill_(this._h, value));
};
proto.clamp_ = function clamp_(this: Tensor, min?: number, max?: number): Tensor {
  if (min === undefined && max === undefined)
    throw invalidArgument('clamp_', 'min/max', 'at least one bound', 'neither');
  if (min !== undefined) checkScalar('clamp_', 'min', min);
  if (max !== undefined) checkScalar('clamp_', 'max', max);
  return callInPlace('clamp_', this, {}, () => native.clamp_(this._h, min, max));
};
const UNARY_IN_PLACE = ['sqrt_', 'neg_', 'exp_', 'relu_', 'erfinv_', 'tanh_', 'sigmoid_'] as const;
const unaryInPlaceNative = nativeOps(...UNARY_IN_PLACE);
for (const name of UNARY_IN_PLACE) {
  const run = unaryInPlaceNative[name];
  proto[name] = function (this: Tensor): Tensor {
    return callInPlace(name, this, {}, () => run(this._h));
  };
}
proto.maskedFill_ = function maskedFill_(this: Tensor, mask: Tensor, value: number | boolean): Tensor {
  checkScalar('maskedFill_', 'value', value);
  return callInPlace('maskedFill_', this, { mask }, () => native.maskedFill_(this._h, mask._h, value));
};
proto.uniform_ = function uniform_(this: Tensor, low = 0, high = 1): Tensor {
  checkNumber('uniform_', 'low', low);
  checkNumber('uniform_', 'high', high);
  if (!(low <= high)) throw invalidArgument('uniform_', 'high', `a number >= low (${low})`, high);
  return callInPlace('uniform_', this, {}, () => native.uniform_(this._h, low, high));
};
proto.normal_ = function normal_(this: Tensor, mean = 0, std = 1): Tensor {
  checkNumber('normal_', 'mean', mean);
  checkNumber('normal_', 'std', std);
  if (!(std >= 0)) throw invalidArgument('normal_', 'std', 'a number >= 0', std);
  return callInPlace('normal_', this, {}, () => native.normal_(this._h, mean, std));
};
