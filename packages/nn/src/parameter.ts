import { FlodlError, invalidArgument, isFloatingPoint, keep, Tensor } from '@flodl/tensor-native';

const parameters = new WeakSet<Tensor>();
const buffers = new WeakMap<Tensor, { persistent: boolean }>();

/**
 * A tensor that a Module trains: a leaf that requires grad (unless `requiresGrad` is false),
 * owned by its module (kept out of tidy scopes; `module.dispose()` frees it). Like PyTorch's
 * `nn.Parameter`, it *is* a Tensor: a leaf tensor passed in becomes the parameter itself (no
 * copy); a result of recorded ops is detached first.
 * @example this.weight = new Parameter(empty([out, in]));
 * @throws FlodlError ERR_AUTOGRAD for integer tensors that should require grad
 */
export type Parameter = Tensor;

export interface ParameterConstructor {
  new (data: Tensor, requiresGrad?: boolean): Parameter;
  [Symbol.hasInstance](value: unknown): boolean;
}

function ParameterFactory(this: unknown, data: Tensor, requiresGrad = true): Parameter {
  if (new.target === undefined) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'Parameter is a constructor: use new Parameter(tensor)', {
      op: 'Parameter',
    });
  }
  if (!(data instanceof Tensor)) throw invalidArgument('Parameter', 'data', 'a Tensor', data);
  if (requiresGrad && !isFloatingPoint(data.dtype)) {
    throw new FlodlError('ERR_AUTOGRAD', 'a parameter that requires grad must be floating point', {
      op: 'Parameter',
      expected: 'float16, bfloat16, float32 or float64 (or requiresGrad false)',
      got: data.dtype,
    });
  }
  // A leaf is adopted as it is (no copy, no second handle to manage); a result of recorded
  // ops is detached first, as a parameter must be a leaf.
  const leaf = keep(data.isLeaf ? data : data.detach());
  if (leaf.requiresGrad !== requiresGrad) leaf.requiresGrad_(requiresGrad);
  parameters.add(leaf);
  return leaf;
}
Object.defineProperty(ParameterFactory, Symbol.hasInstance, {
  value: (value: unknown) => value instanceof Tensor && parameters.has(value),
});

/** See {@link Parameter}. PyTorch: `nn.Parameter`. */
export const Parameter = ParameterFactory as unknown as ParameterConstructor;

/**
 * Module state that is not trained (running statistics, masks): saved in `stateDict()` when
 * `persistent`, moved by `module.to(...)`, never handed to optimizers. It *is* a Tensor.
 * PyTorch: `module.register_buffer(name, tensor, persistent)`.
 */
export type Buffer = Tensor;

export interface BufferConstructor {
  new (data: Tensor, options?: { persistent?: boolean }): Buffer;
  [Symbol.hasInstance](value: unknown): boolean;
}

function BufferFactory(this: unknown, data: Tensor, options: { persistent?: boolean } = {}): Buffer {
  if (new.target === undefined) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'Buffer is a constructor: use new Buffer(tensor)', {
      op: 'Buffer',
    });
  }
  if (!(data instanceof Tensor)) throw invalidArgument('Buffer', 'data', 'a Tensor', data);
  const tensor = keep(data.isLeaf && !data.requiresGrad ? data : data.detach());
  buffers.set(tensor, { persistent: options.persistent !== false });
  return tensor;
}
Object.defineProperty(BufferFactory, Symbol.hasInstance, {
  value: (value: unknown) => value instanceof Tensor && buffers.has(value),
});

/** See {@link Buffer}. */
export const Buffer = BufferFactory as unknown as BufferConstructor;

/** @internal */
export function isParameter(value: unknown): value is Tensor {
  return value instanceof Tensor && parameters.has(value);
}

/** @internal */
export function bufferInfo(value: unknown): { persistent: boolean } | undefined {
  return value instanceof Tensor ? buffers.get(value) : undefined;
}
