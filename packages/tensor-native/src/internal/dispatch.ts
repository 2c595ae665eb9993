// Native ops by name, Tensors in and out: the dispatch behind `aten` (see aten.ts). A Tensor
// argument (or an array holding Tensors) is passed as its handle; a numeric result becomes a
// Tensor, an array result a Tensor[] (null and booleans kept); a failure is diagnosed against
// the Tensor arguments.
import { invalidArgument } from '../errors.js';
import { Tensor } from '../tensor.js';
import { native } from './binding.js';
import { diagnose } from './diagnose.js';

export type NativeArgument =
  | Tensor
  | readonly (Tensor | null | undefined)[]
  | number
  | boolean
  | string
  | readonly number[]
  | null
  | undefined;

function toNative(value: NativeArgument): unknown {
  if (value instanceof Tensor) return value._h;
  if (Array.isArray(value) && value.length > 0 && value.some((item) => item instanceof Tensor)) {
    return value.map((item) => (item instanceof Tensor ? item._h : item));
  }
  return value;
}

function fromNative(value: unknown): unknown {
  if (typeof value === 'number') return new Tensor(value);
  if (Array.isArray(value)) {
    return value.map((item) =>
      item === null || typeof item === 'boolean' ? item : new Tensor(item as number),
    );
  }
  return value;
}

/**
 * Calls the native op `name` with Tensors passed as tensors (arrays of Tensors too); a
 * numeric result is a new Tensor, an array result a Tensor[] (its nulls and booleans kept).
 * Failures are FlodlErrors.
 *
 * @example aten.call('conv2d', input, weight, bias, [1, 1], [0, 0], [1, 1], 1)
 */
export function callByName(name: string, ...args: NativeArgument[]): any {
  const fn = (native as Record<string, unknown>)[name];
  if (typeof fn !== 'function') throw invalidArgument('aten.call', 'name', 'the name of a native op', name);
  let result: unknown;
  try {
    result = (fn as (...values: unknown[]) => unknown)(...args.map(toNative));
  } catch (error) {
    const tensors: Record<string, unknown> = {};
    args.forEach((arg, k) => {
      if (arg instanceof Tensor) tensors[`argument ${k}`] = arg;
    });
    throw diagnose(name, tensors, error);
  }
  return fromNative(result);
}

/** True when the addon has a native op of this name. */
export function hasNativeOp(name: string): boolean {
  return typeof (native as Record<string, unknown>)[name] === 'function';
}
