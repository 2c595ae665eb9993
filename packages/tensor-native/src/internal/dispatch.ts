// Native ops by name, Tensors in and out: the dispatch behind `aten` (see aten.ts). A Tensor
// argument (or an array holding Tensors) is passed as its handle; a numeric result becomes a
// Tensor, an array result a Tensor[] (null and booleans kept); a failure is diagnosed against
// the Tensor arguments. The types follow NativeOpTable (binding-types.ts), tensors as Tensors.
import { invalidArgument } from '../errors.js';
import { Tensor } from '../tensor.js';
import { native } from './binding.js';
import type { NativeOpTable, ReplaceTensors, TensorHandle } from './binding-types.js';
import { diagnose } from './diagnose.js';

type Entry<K extends keyof NativeOpTable> = NonNullable<NativeOpTable[K]>;

// fromNative makes a Tensor of every number it is handed, and of every element of an array
// other than null and a boolean: an entry that returns plain numbers would come back as
// Tensors that hold no tensor, so aten.call does not take it.
type Convertible<R> = R extends TensorHandle
  ? true
  : R extends number
    ? false
    : R extends readonly unknown[]
      ? Convertible<R[number]>
      : true;

/** The native ops `aten.call` takes: every entry whose result it can hand back as Tensors. */
export type AtenOp = {
  [K in keyof NativeOpTable]-?: false extends Convertible<ReturnType<Entry<K>>> ? never : K;
}[keyof NativeOpTable];

/** The arguments of the native op `K` through `aten.call`: its tensors as Tensors. */
export type AtenArgs<K extends AtenOp> = ReplaceTensors<Parameters<Entry<K>>, Tensor>;

/** The result of the native op `K` through `aten.call`: its tensors as Tensors. */
export type AtenResult<K extends AtenOp> = ReplaceTensors<ReturnType<Entry<K>>, Tensor>;

function toNative(value: unknown): unknown {
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
 * @example aten.call('conv', input, weight, bias, [1, 1], [0, 0], [1, 1], 1)
 */
export function callByName<K extends AtenOp>(name: K, ...args: AtenArgs<K>): AtenResult<K> {
  const fn = (native as Record<string, unknown>)[name];
  if (typeof fn !== 'function') throw invalidArgument('aten.call', 'name', 'the name of a native op', name);
  let result: unknown;
  try {
    result = (fn as (...values: unknown[]) => unknown)(...(args as readonly unknown[]).map(toNative));
  } catch (error) {
    const tensors: Record<string, unknown> = {};
    (args as readonly unknown[]).forEach((arg, k) => {
      if (arg instanceof Tensor) tensors[`argument ${k}`] = arg;
    });
    throw diagnose(name, tensors, error);
  }
  return fromNative(result) as AtenResult<K>;
}

/** True when the addon has a native op of this name. */
export function hasNativeOp(name: string): boolean {
  return typeof (native as Record<string, unknown>)[name] === 'function';
}
