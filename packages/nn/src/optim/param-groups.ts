// Turning what users pass to an optimizer (tensors, or groups `{ params, ...options }`) into
// checked parameter groups. PyTorch: Optimizer.__init__ and Optimizer.add_param_group.
import { FlodlError, invalidArgument, isFloatingPoint, Tensor } from '@flodl/tensor-native';
import { checkOptionsObject } from './options.js';

/** Options every optimizer has. */
export interface BaseGroupOptions {
  /** Learning rate. */
  lr: number;
}

/**
 * A parameter group: the tensors it updates and the options that apply to them, as in
 * PyTorch's `optimizer.param_groups[i]`. Assigning an option (`group.lr = 0.01`) takes effect
 * at the next `step()`.
 */
export type ParamGroup<TOptions extends BaseGroupOptions = BaseGroupOptions> = TOptions & {
  params: Tensor[];
};

/** A group as given to the constructor or `addParamGroup`: its tensors and the options it overrides. */
export type ParamGroupInput<TOptions extends BaseGroupOptions = BaseGroupOptions> = Partial<TOptions> & {
  params: Iterable<Tensor>;
};

/** What an optimizer is built from: the parameters, or an array of parameter groups. */
export type OptimizerParams<TOptions extends BaseGroupOptions = BaseGroupOptions> =
  | Iterable<Tensor>
  | Iterable<ParamGroupInput<TOptions>>;

/** @internal Splits the constructor's `params` into group inputs, checking the container itself. */
export function splitParams(op: string, params: unknown): { groups: unknown[]; flat: boolean } {
  if (params instanceof Tensor) {
    throw invalidArgument(
      op,
      'params',
      'an iterable of parameter Tensors or of groups { params, ...options }',
      'a single Tensor (wrap it in an array)',
    );
  }
  const iterable = params as { [Symbol.iterator]?: unknown } | null | undefined;
  if (iterable === null || iterable === undefined || typeof iterable[Symbol.iterator] !== 'function') {
    throw invalidArgument(
      op,
      'params',
      'an iterable of parameter Tensors or of groups { params, ...options }',
      params,
    );
  }
  const items = [...(params as Iterable<unknown>)];
  if (items.length === 0) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the optimizer got an empty parameter list', {
      op,
      expected: 'at least one parameter Tensor (check that the model has parameters)',
      got: 'an empty list',
    });
  }
  if (items[0] instanceof Tensor) return { groups: [{ params: items }], flat: true };
  return { groups: items, flat: false };
}

/**
 * @internal Checks one group input and returns its tensors and the options it sets.
 * `label(k)` names the k-th tensor in errors (`params[2]` or `paramGroups[1].params[2]`).
 */
export function readGroupInput(
  op: string,
  where: string,
  input: unknown,
  label: (index: number) => string,
  taken: ReadonlySet<Tensor>,
): { params: Tensor[]; options: Record<string, unknown> } {
  const group = checkOptionsObject(op, where, input);
  if (input === undefined || !('params' in group)) {
    throw invalidArgument(op, where, 'a parameter group { params, ...options }', input);
  }
  const { params: rawParams, ...options } = group;
  if (rawParams instanceof Tensor) {
    // PyTorch accepts one tensor as a group's params.
    return { params: [checkParameter(op, label(0), rawParams, new Set(), taken)], options };
  }
  const iterable = rawParams as { [Symbol.iterator]?: unknown } | null | undefined;
  if (iterable === null || iterable === undefined || typeof iterable[Symbol.iterator] !== 'function') {
    throw invalidArgument(op, `${where}.params`, 'an iterable of parameter Tensors', rawParams);
  }
  const params: Tensor[] = [];
  const seen = new Set<Tensor>();
  for (const item of rawParams as Iterable<unknown>) {
    params.push(checkParameter(op, label(params.length), item, seen, taken));
    seen.add(item as Tensor);
  }
  if (params.length === 0) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `${where} has no parameters`, {
      op,
      expected: 'at least one parameter Tensor',
      got: 'an empty list',
    });
  }
  return { params, options };
}

function checkParameter(
  op: string,
  name: string,
  value: unknown,
  seen: ReadonlySet<Tensor>,
  taken: ReadonlySet<Tensor>,
): Tensor {
  if (!(value instanceof Tensor)) throw invalidArgument(op, name, 'a parameter Tensor', value);
  if (!value.isLive) {
    throw new FlodlError('ERR_DISPOSED', `${name} was disposed`, {
      op,
      expected: 'a live parameter tensor',
      got: 'a disposed tensor',
    });
  }
  if (!isFloatingPoint(value.dtype)) {
    throw new FlodlError('ERR_DTYPE', `${name} is not floating point`, {
      op,
      expected: 'a float16, bfloat16, float32 or float64 parameter',
      got: value.dtype,
    });
  }
  if (!value.requiresGrad) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `${name} does not require grad`, {
      op,
      expected: 'a parameter with requiresGrad (call requiresGrad_(), or wrap it: new Parameter(tensor))',
      got: value.describe(),
    });
  }
  if (!value.isLeaf) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `${name} is not a leaf tensor`, {
      op,
      expected: 'a leaf tensor (a parameter, not the result of an op)',
      got: `a tensor produced by ${value.gradFn}`,
    });
  }
  if (seen.has(value) || taken.has(value)) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', `${name} appears more than once`, {
      op,
      expected: 'each parameter in exactly one place of exactly one group',
      got: seen.has(value) ? 'a duplicate within its group' : 'a parameter already in another group',
    });
  }
  return value;
}
