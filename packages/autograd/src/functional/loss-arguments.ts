// Argument checks shared by the loss, recurrent and attention ops: each names the argument and
// says what was expected and what was given, before anything reaches native code.
import { broadcastShapes, FlodlError, invalidArgument, isFloatingPoint, Tensor } from '@flodl/tensor-native';

/** How a loss reduces its per-element values: none (keep them), their mean, or their sum. */
export type Reduction = 'none' | 'mean' | 'sum';

const REDUCTIONS: readonly Reduction[] = ['none', 'mean', 'sum'];

/** `[2, 3]` */
export function shapeText(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/** Rejects anything but a plain options object, and option names the op does not know. */
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
        expected: `one of ${allowed.join(', ')}`,
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

export function checkOptionalTensor(op: string, name: string, value: unknown): Tensor | undefined {
  return value === undefined ? undefined : checkTensor(op, name, value);
}

/** A tensor of a floating dtype (what gradients flow through). */
export function checkFloating(op: string, name: string, value: unknown): Tensor {
  const tensor = checkTensor(op, name, value);
  if (!isFloatingPoint(tensor.dtype)) {
    throw new FlodlError('ERR_DTYPE', `${name} must have a floating dtype`, {
      op,
      expected: 'float16, bfloat16, float32 or float64',
      got: tensor.dtype,
    });
  }
  return tensor;
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
    throw new FlodlError('ERR_DTYPE', `${name} must have the dtype of ${referenceName}`, {
      op,
      expected: reference.dtype,
      got: tensor.dtype,
    });
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
    throw new FlodlError('ERR_DTYPE', `${name} must hold ${allowed.join(' or ')} values`, {
      op,
      expected: allowed.join(' or '),
      got: tensor.dtype,
    });
  }
}

export function checkNumber(
  op: string,
  name: string,
  value: unknown,
  fallback: number,
  range: { min?: number; max?: number } = {},
): number {
  if (value === undefined) return fallback;
  const { min = Number.NEGATIVE_INFINITY, max = Number.POSITIVE_INFINITY } = range;
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

export function checkInteger(
  op: string,
  name: string,
  value: unknown,
  fallback: number,
  min = Number.MIN_SAFE_INTEGER,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
    throw invalidArgument(
      op,
      name,
      min > Number.MIN_SAFE_INTEGER ? `an integer >= ${min}` : 'an integer',
      value,
    );
  }
  return value;
}

export function checkBoolean(op: string, name: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw invalidArgument(op, name, 'a boolean', value);
  return value;
}

/** The `reduction` option: 'mean' when absent. */
export function checkReduction<T extends string = Reduction>(
  op: string,
  value: unknown,
  allowed: readonly T[] = REDUCTIONS as readonly string[] as readonly T[],
): T {
  if (value === undefined) return 'mean' as T;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw invalidArgument(op, 'reduction', `one of ${allowed.map((item) => `'${item}'`).join(', ')}`, value);
  }
  return value as T;
}

/** An ERR_SHAPE error with the expected and the given shape. */
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

export function checkShape(op: string, name: string, tensor: Tensor, expected: readonly number[]): void {
  const shape = tensor.shape;
  if (shape.length !== expected.length || shape.some((size, dim) => size !== expected[dim])) {
    throw shapeError(op, `${name} has the wrong shape`, shapeText(expected), shape);
  }
}

export function checkRank(
  op: string,
  name: string,
  tensor: Tensor,
  ranks: readonly number[],
  meaning: string,
): void {
  if (!ranks.includes(tensor.ndim)) {
    throw shapeError(op, `${name} must be ${ranks.join('-d or ')}-d`, meaning, tensor.shape);
  }
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
  if (shape === null || shape.length !== target.length || shape.some((size, dim) => size !== target[dim])) {
    throw shapeError(
      op,
      `${name} does not broadcast to ${shapeText(target)}`,
      `a shape that broadcasts to ${shapeText(target)}`,
      tensor.shape,
    );
  }
}
