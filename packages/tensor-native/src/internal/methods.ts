// Builders for Tensor methods: the native call on the hot path, diagnosis on failure.
import { invalidArgument } from '../errors.js';
import { Tensor } from '../tensor.js';
import type { Handle, Scalar } from './binding-types.js';
import { type Check, diagnose } from './diagnose.js';

type UnaryNative = (h: Handle) => Handle;
type BinaryNative = (a: Handle, b: Handle) => Handle;
type ScalarNative = (a: Handle, s: Scalar) => Handle;

/** `t.op()` */
export function unaryMethod(op: string, fn: UnaryNative): (this: Tensor) => Tensor {
  return function (this: Tensor) {
    try {
      return new Tensor(fn(this._h));
    } catch (error) {
      throw diagnose(op, { self: this }, error);
    }
  };
}

/** `t.op(other)` with other a Tensor (broadcast) or a number. */
export function arithmeticMethod(
  op: string,
  tensorFn: BinaryNative,
  scalarFn: ScalarNative | null,
  check: Check = 'broadcast',
): (this: Tensor, other: Tensor | number | boolean) => Tensor {
  return function (this: Tensor, other: Tensor | number | boolean) {
    try {
      if (other instanceof Tensor) return new Tensor(tensorFn(this._h, other._h));
      if (scalarFn !== null && (typeof other === 'number' || typeof other === 'boolean')) {
        return new Tensor(scalarFn(this._h, other));
      }
    } catch (error) {
      throw diagnose(op, { self: this, other }, error, check);
    }
    throw invalidArgument(op, 'other', scalarFn === null ? 'a Tensor' : 'a Tensor or a number', other);
  };
}

/**
 * Runs a native call that returns one handle, diagnosing a failure against `tensors`.
 * `explain`, when given, runs only after a failure and throws a more precise error if it can.
 */
export function call(
  op: string,
  tensors: Record<string, unknown>,
  run: () => Handle,
  check: Check = 'sameDevice',
  explain?: () => void,
): Tensor {
  try {
    return new Tensor(run());
  } catch (error) {
    const diagnosed = diagnose(op, tensors, error, check);
    if (diagnosed === error && explain !== undefined) explain();
    throw diagnosed;
  }
}

/** Like `call` for natives that return several handles. */
export function callMany(op: string, tensors: Record<string, unknown>, run: () => Handle[]): Tensor[] {
  let handles: Handle[];
  try {
    handles = run();
  } catch (error) {
    throw diagnose(op, tensors, error);
  }
  return handles.map((handle) => new Tensor(handle));
}

/** Like `call` for in-place natives: returns `self`. */
export function callInPlace(
  op: string,
  self: Tensor,
  tensors: Record<string, unknown>,
  run: () => void,
): Tensor {
  try {
    run();
  } catch (error) {
    throw diagnose(op, { self, ...tensors }, error, 'broadcast');
  }
  return self;
}
