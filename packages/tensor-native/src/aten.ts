// The low-level door to the addon's native ops for packages built on this one (the
// functional layer of @flodl/autograd, optimizers in @flodl/nn): tensors in, tensors out,
// no argument validation beyond what libtorch does. Prefer the Tensor methods in user code.
import { invalidArgument } from './errors.js';
import { native } from './internal/binding.js';
import { diagnose } from './internal/diagnose.js';
import { Tensor } from './tensor.js';

type NativeArgument =
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
  if (Array.isArray(value)) return value.map((item) => (item === null ? null : new Tensor(item as number)));
  return value;
}

/**
 * Calls the native op `name` with Tensors passed as tensors (arrays of Tensors too); a
 * numeric result is a new Tensor, an array result a Tensor[]. Failures are FlodlErrors.
 *
 * @example aten.call('conv2d', input, weight, bias, [1, 1], [0, 0], [1, 1], 1)
 */
function callAten(name: string, ...args: NativeArgument[]): any {
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
function hasAten(name: string): boolean {
  return typeof (native as Record<string, unknown>)[name] === 'function';
}

/** Low-level access to native ops for the packages of this framework. */
export const aten = { call: callAten, has: hasAten };
