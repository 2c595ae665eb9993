// Argument checks shared by the functional ops: each names the argument and says what was
// expected and what was given, before anything reaches native code. Not exported from the package.
import {
  broadcastShapes,
  checkOneOf,
  FlodlError,
  invalidArgument,
  isFloatingPoint,
  Tensor,
} from '@flodl/tensor-native';

export { checkBoolean, checkInteger, checkOneOf, checkOptions } from '@flodl/tensor-native';

/** How a loss reduces its per-element values: none (keep them), their mean, or their sum. */
export type Reduction = 'none' | 'mean' | 'sum';

const REDUCTIONS: readonly Reduction[] = ['none', 'mean', 'sum'];

// Options

// Tensors and dtypes

export function checkTensor(op: string, name: string, value: unknown): Tensor {
  if (!(value instanceof Tensor)) throw invalidArgument(op, name, 'a Tensor', value);
  return value;
}

/** `undefined` and `null` both mean "not given", as `None` does in PyTorch. */
export function checkOptionalTensor(op: string, name: string, value: unknown): Tensor | undefined {
  if (value === undefined || value === null) return undefined;
  return checkTensor(op, name, value);
}

/** Only `undefined` means "not given": unlike {@link checkOptionalTensor}, `null` is refused. */
export function checkTensorOrUndefined(op: string, name: string, value: unknown): Tensor | undefined {
  return value === undefined ? undefined : checkTensor(op, name, value);
}

function dtypeError(op: string, message: string, expected: string, got: string): FlodlError {
  return new FlodlError('ERR_DTYPE', message, { op, expected, got });
}

/**
 * A tensor of a floating dtype (what gradients flow through). `message` replaces the default
 * headline, `<name> must have a floating dtype`.
 */
export function checkFloating(
  op: string,
  name: string,
  value: unknown,
  message = `${name} must have a floating dtype`,
): Tensor {
  const tensor = checkTensor(op, name, value);
  if (!isFloatingPoint(tensor.dtype)) {
    throw dtypeError(op, message, 'float16, bfloat16, float32 or float64', tensor.dtype);
  }
  return tensor;
}

/** A tensor of indices: int64 or int32. */
export function checkIndices(op: string, name: string, tensor: Tensor): void {
  if (tensor.dtype !== 'int64' && tensor.dtype !== 'int32') {
    throw dtypeError(op, `${name} must hold integer indices`, 'int64 or int32', tensor.dtype);
  }
}

/** A tensor of an integer dtype: class indices, lengths. */
export function checkIntegerDtype(
  op: string,
  name: string,
  tensor: Tensor,
  allowed: readonly string[],
): void {
  if (!allowed.includes(tensor.dtype)) {
    const expected = allowed.join(' or ');
    throw dtypeError(op, `${name} must hold ${expected} values`, expected, tensor.dtype);
  }
}

/** A tensor with the same dtype as `reference` (weights of a layer, masks added to scores). */
export function checkSameDtype(
  op: string,
  name: string,
  tensor: Tensor,
  reference: Tensor,
  referenceName: string,
): void {
  if (tensor.dtype !== reference.dtype) {
    throw dtypeError(op, `${name} must have the dtype of ${referenceName}`, reference.dtype, tensor.dtype);
  }
}

// Shapes

/** `[2, 3]`, the way messages print shapes. */
export function shapeText(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/** An ERR_SHAPE error with what was expected and what was given (a shape or words). */
export function shapeError(
  op: string,
  message: string,
  expected: string,
  got: readonly number[] | string,
): FlodlError {
  return new FlodlError('ERR_SHAPE', message, {
    op,
    expected,
    got: typeof got === 'string' ? got : shapeText(got),
  });
}

function sameShape(shape: readonly number[], expected: readonly number[]): boolean {
  return shape.length === expected.length && shape.every((size, dim) => size === expected[dim]);
}

/**
 * Checks an exact shape. With `meaning` (where the expected sizes come from) the error says the
 * tensor does not fit; without, that it has the wrong shape.
 */
export function checkShape(
  op: string,
  name: string,
  tensor: Tensor,
  expected: readonly number[],
  meaning?: string,
): void {
  const shape = tensor.shape;
  if (sameShape(shape, expected)) return;
  if (meaning === undefined) throw shapeError(op, `${name} has the wrong shape`, shapeText(expected), shape);
  throw shapeError(op, `${name} does not fit`, `shape ${shapeText(expected)} (${meaning})`, shape);
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
    throw shapeError(
      op,
      `${name} has the wrong number of dimensions`,
      `a ${accepted.join(' or ')} tensor`,
      `a ${rank}-d tensor of shape ${shapeText(tensor.shape)}`,
    );
  }
  return rank;
}

/** Checks that the rank of `tensor` is one of `ranks`; `layout` describes them all. */
export function checkRankAmong(
  op: string,
  name: string,
  tensor: Tensor,
  ranks: readonly number[],
  layout: string,
): void {
  if (!ranks.includes(tensor.ndim)) {
    throw shapeError(op, `${name} must be ${ranks.join('-d or ')}-d`, layout, tensor.shape);
  }
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
    throw shapeError(
      op,
      `${name} has too few dimensions`,
      `at least ${minimum} dimensions ${layout}`,
      `a ${rank}-d tensor of shape ${shapeText(tensor.shape)}`,
    );
  }
  return rank;
}

/** Two tensors whose shapes broadcast together; returns the broadcast shape. */
export function checkBroadcast(op: string, nameA: string, a: Tensor, nameB: string, b: Tensor): number[] {
  const shape = broadcastShapes(a.shape, b.shape);
  if (shape === null) {
    throw shapeError(
      op,
      `${nameA} and ${nameB} do not broadcast`,
      'shapes that broadcast together',
      `${shapeText(a.shape)} and ${shapeText(b.shape)}`,
    );
  }
  return shape;
}

/** A tensor that broadcasts to `target` without changing it (a weight applied per element). */
export function checkBroadcastsTo(op: string, name: string, tensor: Tensor, target: readonly number[]): void {
  const shape = broadcastShapes(tensor.shape, target);
  if (shape === null || !sameShape(shape, target)) {
    throw shapeError(
      op,
      `${name} does not broadcast to ${shapeText(target)}`,
      `a shape that broadcasts to ${shapeText(target)}`,
      tensor.shape,
    );
  }
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

// Scalars. Where `fallback` is given it stands for an absent (`undefined`) value; without it
// the value is required.

/** Bounds of a number, both inclusive, and what an absent value means. */
export interface NumberSpec {
  fallback?: number;
  min?: number;
  max?: number;
}

/** A number that is not NaN, within `min` and `max` (infinities pass unless bounded). */
export function checkNumber(op: string, name: string, value: unknown, spec: NumberSpec = {}): number {
  const { fallback, min = Number.NEGATIVE_INFINITY, max = Number.POSITIVE_INFINITY } = spec;
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'number' || Number.isNaN(value) || value < min || value > max) {
    const bounds = [
      min > Number.NEGATIVE_INFINITY ? `>= ${min}` : '',
      max < Number.POSITIVE_INFINITY ? `<= ${max}` : '',
    ]
      .filter((bound) => bound !== '')
      .join(' and ');
    throw invalidArgument(op, name, bounds === '' ? 'a number' : `a number ${bounds}`, value);
  }
  return value;
}

export function checkPositive(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value > 0)) throw invalidArgument(op, name, 'a number > 0', value);
  return value;
}

export function checkProbability(op: string, name: string, value: unknown): number {
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) {
    throw invalidArgument(op, name, 'a probability in [0, 1]', value);
  }
  return value;
}

/** The `reduction` option: 'mean' when absent. */
export function checkReduction<T extends string = Reduction>(
  op: string,
  value: unknown,
  allowed: readonly T[] = REDUCTIONS as readonly string[] as readonly T[],
): T {
  return value === undefined ? ('mean' as T) : checkOneOf(op, 'reduction', value, allowed);
}
