// Argument checks shared by the functional ops: each names the argument and says what was
// expected and what came, before any native call. Not exported from the package.
import { type DType, FlodlError, invalidArgument, Tensor } from '@flodl/tensor-native';

/** `[2, 3]`, the way messages print shapes. */
export function shapeText(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/**
 * Checks that `options` is absent or a plain object whose keys the op knows (catching
 * misspellings such as `{ strides: 2 }`), and returns it (`{}` when absent).
 */
export function checkOptions<T extends object>(
  op: string,
  options: T | undefined,
  allowed: readonly (keyof T & string)[],
): T {
  if (options === undefined) return {} as T;
  if (
    options === null ||
    typeof options !== 'object' ||
    Array.isArray(options) ||
    options instanceof Tensor
  ) {
    throw invalidArgument(op, 'options', 'an options object', options);
  }
  for (const key of Object.keys(options)) {
    if (!(allowed as readonly string[]).includes(key)) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `unknown option '${key}'`, {
        op,
        expected: allowed.length === 0 ? 'no options' : `one of ${allowed.join(', ')}`,
        got: key,
      });
    }
  }
  return options;
}

export function checkTensor(op: string, name: string, value: unknown): Tensor {
  if (!(value instanceof Tensor)) throw invalidArgument(op, name, 'a Tensor', value);
  return value;
}

/** `undefined` and `null` both mean "not given", as `None` does in PyTorch. */
export function checkOptionalTensor(op: string, name: string, value: unknown): Tensor | undefined {
  if (value === undefined || value === null) return undefined;
  return checkTensor(op, name, value);
}

/**
 * Checks the rank of `tensor` against `layouts`, which maps each accepted rank to its
 * symbolic shape, e.g. `{ 3: '(C, H, W)', 4: '(N, C, H, W)' }`. Returns the rank.
 */
export function checkRank(
  op: string,
  name: string,
  tensor: Tensor,
  layouts: Readonly<Record<number, string>>,
): number {
  const rank = tensor.ndim;
  if (layouts[rank] === undefined) {
    const accepted = Object.entries(layouts).map(([accepted, layout]) => `${accepted}-d ${layout}`);
    throw new FlodlError('ERR_SHAPE', `${name} has the wrong number of dimensions`, {
      op,
      expected: `a ${accepted.join(' or ')} tensor`,
      got: `a ${rank}-d tensor of shape ${shapeText(tensor.shape)}`,
    });
  }
  return rank;
}

/** Checks that `tensor.ndim >= minimum`, naming the layout. */
export function checkMinimumRank(
  op: string,
  name: string,
  tensor: Tensor,
  minimum: number,
  layout: string,
): number {
  const rank = tensor.ndim;
  if (rank < minimum) {
    throw new FlodlError('ERR_SHAPE', `${name} has too few dimensions`, {
      op,
      expected: `at least ${minimum} dimensions ${layout}`,
      got: `a ${rank}-d tensor of shape ${shapeText(tensor.shape)}`,
    });
  }
  return rank;
}

/** Checks an exact shape; `meaning` says where the expected sizes come from. */
export function checkShape(
  op: string,
  name: string,
  tensor: Tensor,
  expected: readonly number[],
  meaning: string,
): void {
  const shape = tensor.shape;
  if (shape.length !== expected.length || shape.some((size, k) => size !== expected[k])) {
    throw new FlodlError('ERR_SHAPE', `${name} does not fit`, {
      op,
      expected: `shape ${shapeText(expected)} (${meaning})`,
      got: shapeText(shape),
    });
  }
}

/** A shape error about one size: `expected` and `got` describe it in words. */
export function sizeMismatch(op: string, message: string, expected: string, got: string): FlodlError {
  return new FlodlError('ERR_SHAPE', message, { op, expected, got });
}

const FLOATING: readonly DType[] = ['float16', 'bfloat16', 'float32', 'float64'];

export function checkFloating(op: string, name: string, tensor: Tensor): void {
  if (!FLOATING.includes(tensor.dtype)) {
    throw new FlodlError('ERR_DTYPE', `${name} must be floating point`, {
      op,
      expected: 'float16, bfloat16, float32 or float64',
      got: tensor.dtype,
    });
  }
}

export function checkIndices(op: string, name: string, tensor: Tensor): void {
  if (tensor.dtype !== 'int64' && tensor.dtype !== 'int32') {
    throw new FlodlError('ERR_DTYPE', `${name} must hold integer indices`, {
      op,
      expected: 'int64 or int32',
      got: tensor.dtype,
    });
  }
}

export function checkInteger(
  op: string,
  name: string,
  value: unknown,
  minimum = Number.MIN_SAFE_INTEGER,
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
    const expected = minimum === Number.MIN_SAFE_INTEGER ? 'an integer' : `an integer >= ${minimum}`;
    throw invalidArgument(op, name, expected, value);
  }
  return value;
}

/** A number that is not NaN (infinities are allowed: `softplus` thresholds, norms). */
export function checkNumber(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || Number.isNaN(value)) throw invalidArgument(op, name, 'a number', value);
  return value;
}

export function checkPositive(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value > 0)) throw invalidArgument(op, name, 'a number > 0', value);
  return value;
}

export function checkBoolean(op: string, name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw invalidArgument(op, name, 'a boolean', value);
  return value;
}

export function checkOneOf<T extends string>(
  op: string,
  name: string,
  value: unknown,
  allowed: readonly T[],
): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidArgument(op, name, `one of ${allowed.map((item) => `'${item}'`).join(', ')}`, value);
  }
  return value as T;
}

export function checkProbability(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    throw invalidArgument(op, name, 'a probability in [0, 1]', value);
  }
  return value;
}

/**
 * One integer per spatial dim: a number is repeated, an array must have `length` entries
 * (PyTorch's `_single` / `_pair` / `_triple`). Every entry must be >= `minimum`.
 */
export function expandSizes(
  op: string,
  name: string,
  value: unknown,
  length: number,
  minimum: number,
): number[] {
  const list = typeof value === 'number' ? new Array<unknown>(length).fill(value) : value;
  const valid =
    Array.isArray(list) &&
    list.length === length &&
    list.every((item) => typeof item === 'number' && Number.isSafeInteger(item) && item >= minimum);
  if (!valid) {
    const bound = minimum === 0 ? 'non-negative' : `>= ${minimum}`;
    throw invalidArgument(op, name, `an integer ${bound} or an array of ${length} such integers`, value);
  }
  return list as number[];
}

const BATCHED = ['(N, C, L)', '(N, C, H, W)', '(N, C, D, H, W)'];
const UNBATCHED = ['(C, L)', '(C, H, W)', '(C, D, H, W)'];

/** The accepted layouts of an input with `spatial` spatial dims: unbatched or batched. */
export function spatialLayouts(spatial: number): Record<number, string> {
  return { [spatial + 1]: UNBATCHED[spatial - 1]!, [spatial + 2]: BATCHED[spatial - 1]! };
}
