// Deep copies of modules, as Python's copy.deepcopy makes them (PyTorch's `_get_clones`).
import { Tensor, tidy } from '@flodl/tensor-native';
import { Module } from './module.js';
import { Buffer, bufferInfo, isParameter, Parameter } from './parameter.js';

/**
 * A deep copy of `module`: the same class and settings, every child copied, every parameter
 * and buffer a new tensor with the same values, dtype, device and `requiresGrad` (gradients
 * are not copied). A tensor held twice (tied weights) is copied once and held twice in the copy.
 * Other values (numbers, strings, functions, plain objects) are shared, as they are settings.
 * The constructor is not run again, so the copy draws nothing from the random generator.
 * PyTorch: `copy.deepcopy(module)`.
 * @internal
 */
export function cloneModule<M extends Module<any, any>>(module: M): M {
  return copyValue(module, new Map()) as M;
}

function copyValue(value: unknown, memo: Map<unknown, unknown>): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (memo.has(value)) return memo.get(value);
  if (value instanceof Tensor) {
    const info = bufferInfo(value);
    if (!isParameter(value) && info === undefined) return value;
    const data = tidy(() => value.detach().clone());
    const copy = isParameter(value) ? new Parameter(data, value.requiresGrad) : new Buffer(data, info);
    memo.set(value, copy);
    return copy;
  }
  if (value instanceof Module) {
    const copy = Object.create(Object.getPrototypeOf(value)) as object;
    memo.set(value, copy);
    const descriptors = Object.getOwnPropertyDescriptors(value);
    for (const key of Reflect.ownKeys(descriptors)) {
      const descriptor = descriptors[key as keyof typeof descriptors]!;
      if ('value' in descriptor) descriptor.value = copyValue(descriptor.value, memo);
      Object.defineProperty(copy, key, descriptor);
    }
    return copy;
  }
  if (value instanceof Map) {
    const copy = new Map();
    memo.set(value, copy);
    for (const [key, item] of value) copy.set(key, copyValue(item, memo));
    return copy;
  }
  if (Array.isArray(value)) {
    const copy: unknown[] = [];
    memo.set(value, copy);
    for (const item of value) copy.push(copyValue(item, memo));
    return copy;
  }
  return value;
}
