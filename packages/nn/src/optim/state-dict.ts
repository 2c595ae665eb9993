// The optimizer state dict (PyTorch's structure, camelCase names) and its validation on load.
import { describeValue, FlodlError, Tensor } from '@flodl/tensor-native';
import { asCheckpointError, rejectUnknownKeys } from './options.js';
import type { BaseGroupOptions, ParamGroup } from './param-groups.js';

/** One parameter's optimizer state: tensors shaped like the parameter, counters and scalars. */
export type ParameterState = Record<string, Tensor | number | null | undefined>;

/**
 * An optimizer's state, as `stateDict()` returns it and `loadStateDict()` takes it:
 * `state[i]` is the state of the i-th parameter counted across all groups in order,
 * `paramGroups[g]` the options of group g with `params` listing its parameters' indices.
 * PyTorch: `optimizer.state_dict()` (keys in camelCase: `exp_avg` → `expAvg`).
 */
export interface OptimizerStateDict<TOptions extends BaseGroupOptions = BaseGroupOptions> {
  state: Record<number, ParameterState>;
  paramGroups: (TOptions & { params: number[] })[];
}

/**
 * How an optimizer's per-parameter state is laid out, for checking a state dict on load:
 * `tensor` (required, shaped like the parameter), `optionalTensor` (may be absent),
 * `nullableTensor` (present, a tensor or null), `count` (a non-negative integer) and
 * `number` (a finite number).
 */
export type StateLayout = Readonly<
  Record<string, 'tensor' | 'optionalTensor' | 'nullableTensor' | 'count' | 'number'>
>;

/** @internal What loading found valid: the options of each group and each parameter's raw entry. */
export interface CheckedStateDict<TOptions> {
  groupOptions: TOptions[];
  entries: { param: Tensor; entry: Record<string, unknown> }[];
}

function checkpointError(op: string, message: string, expected: string, got: string): FlodlError {
  return new FlodlError('ERR_CHECKPOINT', message, { op, expected, got });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Tensor);
}

function shapeText(shape: readonly number[]): string {
  return `[${shape.join(', ')}]`;
}

/**
 * @internal Checks a state dict against the optimizer's groups without changing anything.
 * Every failure is ERR_CHECKPOINT naming the part of the dict that is wrong.
 */
export function checkStateDict<TOptions extends BaseGroupOptions>(
  op: string,
  saved: unknown,
  groups: readonly ParamGroup<TOptions>[],
  defaults: TOptions,
  validate: (options: Partial<TOptions>, where: string) => void,
  layout: StateLayout,
): CheckedStateDict<TOptions> {
  if (!isPlainObject(saved) || !isPlainObject(saved.state) || !Array.isArray(saved.paramGroups)) {
    throw checkpointError(
      op,
      'not an optimizer state dict',
      '{ state: {...}, paramGroups: [...] }',
      describeValue(saved),
    );
  }
  if (saved.paramGroups.length !== groups.length) {
    throw checkpointError(
      op,
      'the state dict has a different number of parameter groups',
      `${groups.length} group(s), as this optimizer has`,
      `${saved.paramGroups.length}`,
    );
  }
  const owners = new Map<number, { param: Tensor; group: number }>();
  const optionNames = Object.keys(defaults);
  const groupOptions = saved.paramGroups.map((savedGroup: unknown, g: number) => {
    const where = `paramGroups[${g}]`;
    if (!isPlainObject(savedGroup) || !Array.isArray(savedGroup.params)) {
      throw checkpointError(
        op,
        `${where} is not a parameter group`,
        '{ params: number[], ...options }',
        describeValue(savedGroup),
      );
    }
    const current = groups[g]!;
    if (savedGroup.params.length !== current.params.length) {
      throw checkpointError(
        op,
        `${where} does not match the size of this optimizer's group`,
        `${current.params.length} parameter(s)`,
        `${savedGroup.params.length}`,
      );
    }
    savedGroup.params.forEach((id: unknown, k: number) => {
      if (typeof id !== 'number' || !Number.isInteger(id) || id < 0 || owners.has(id)) {
        throw checkpointError(
          op,
          `${where}.params[${k}] is not a fresh parameter index`,
          'distinct integers >= 0',
          describeValue(id),
        );
      }
      owners.set(id, { param: current.params[k]!, group: g });
    });
    const { params: _indices, ...options } = savedGroup;
    rejectUnknownKeys(op, where, options, optionNames, 'ERR_CHECKPOINT');
    try {
      validate(options as Partial<TOptions>, where);
    } catch (error) {
      throw asCheckpointError(error, op);
    }
    if (typeof options.lr !== 'number') {
      throw checkpointError(op, `${where} has no lr`, 'a learning rate', describeValue(options.lr));
    }
    // Missing options take the defaults, as PyTorch's __setstate__ does for options added later.
    const merged: Record<string, unknown> = { ...(defaults as unknown as Record<string, unknown>) };
    for (const [key, value] of Object.entries(options))
      merged[key] = Array.isArray(value) ? [...value] : value;
    return merged as unknown as TOptions;
  });
  const entries: CheckedStateDict<TOptions>['entries'] = [];
  for (const [key, entry] of Object.entries(saved.state)) {
    const owner = owners.get(Number(key));
    if (owner === undefined) {
      throw checkpointError(
        op,
        `state[${key}] belongs to no parameter`,
        `indices listed in paramGroups[*].params`,
        key,
      );
    }
    if (!isPlainObject(entry)) {
      throw checkpointError(
        op,
        `state[${key}] is not a parameter state`,
        'an object of tensors and counters',
        describeValue(entry),
      );
    }
    checkEntry(op, `state[${key}]`, entry, owner.param, layout);
    entries.push({ param: owner.param, entry });
  }
  return { groupOptions, entries };
}

function checkEntry(
  op: string,
  where: string,
  entry: Record<string, unknown>,
  param: Tensor,
  layout: StateLayout,
): void {
  rejectUnknownKeys(op, where, entry, Object.keys(layout), 'ERR_CHECKPOINT');
  for (const [key, kind] of Object.entries(layout)) {
    const value = entry[key];
    const name = `${where}.${key}`;
    if (value === undefined) {
      if (kind === 'optionalTensor') continue;
      throw checkpointError(
        op,
        `${name} is missing`,
        kind === 'count' ? 'a step count' : 'a tensor',
        'nothing',
      );
    }
    if (kind === 'count' || kind === 'number') {
      const valid =
        typeof value === 'number' &&
        Number.isFinite(value) &&
        (kind === 'number' || (Number.isInteger(value) && value >= 0));
      if (!valid) {
        throw checkpointError(
          op,
          `${name} is not valid`,
          kind === 'count' ? 'an integer >= 0' : 'a finite number',
          describeValue(value),
        );
      }
      continue;
    }
    if (value === null && kind === 'nullableTensor') continue;
    if (!(value instanceof Tensor) || !value.isLive) {
      throw checkpointError(op, `${name} is not a live tensor`, 'a Tensor', describeValue(value));
    }
    if (shapeText(value.shape) !== shapeText(param.shape)) {
      throw checkpointError(
        op,
        `${name} does not have its parameter's shape`,
        shapeText(param.shape),
        shapeText(value.shape),
      );
    }
  }
}
