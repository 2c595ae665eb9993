import { FlodlError, invalidArgument, Tensor } from '@flodl/tensor-native';

/**
 * A tensor that autograd records. As in PyTorch since 0.4, a Variable *is* a Tensor: every
 * Tensor op works on it and is differentiable, and `.grad`, `.requiresGrad`, `.isLeaf`,
 * `backward()` are Tensor members. `new Variable(tensor, requiresGrad)` makes a new leaf that
 * shares `tensor`'s memory (the original's flags are untouched).
 *
 * @example
 * ```ts
 * const w = new Variable(randn([3, 1]), true);
 * const loss = x.matmul(w).sub(y).square().mean();
 * loss.backward();
 * w.grad; // d loss / d w
 * ```
 * @throws FlodlError ERR_AUTOGRAD when an integer tensor is asked to require gradients
 * PyTorch: `torch.autograd.Variable(tensor, requires_grad=...)`.
 */
export type Variable = Tensor;

export interface VariableConstructor {
  new (data: Tensor, requiresGrad?: boolean): Variable;
  /** `value instanceof Variable` holds for every Tensor. */
  [Symbol.hasInstance](value: unknown): boolean;
}

function VariableFactory(this: unknown, data: Tensor, requiresGrad = false): Variable {
  if (new.target === undefined) {
    throw new FlodlError(
      'ERR_INVALID_ARGUMENT',
      'Variable is a constructor: use new Variable(tensor, requiresGrad)',
      {
        op: 'Variable',
      },
    );
  }
  if (!(data instanceof Tensor)) throw invalidArgument('Variable', 'data', 'a Tensor', data);
  if (typeof requiresGrad !== 'boolean')
    throw invalidArgument('Variable', 'requiresGrad', 'a boolean', requiresGrad);
  const leaf = data.detach();
  if (requiresGrad) {
    try {
      leaf.requiresGrad_(true);
    } catch (error) {
      leaf.dispose();
      throw error;
    }
  }
  return leaf;
}
Object.defineProperty(VariableFactory, Symbol.hasInstance, {
  value: (value: unknown) => value instanceof Tensor,
});

/** See {@link Variable}. */
export const Variable = VariableFactory as unknown as VariableConstructor;
