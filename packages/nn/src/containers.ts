import { FlodlError, invalidArgument, Tensor } from '@flodl/tensor-native';
import { Module } from './module.js';
import { Parameter } from './parameter.js';

type AnyModule = Module<any, any>;

function checkModule(op: string, name: string, value: unknown): AnyModule {
  if (!(value instanceof Module)) throw invalidArgument(op, name, 'a Module', value);
  return value;
}

/**
 * Runs its modules one after another; children are named `0`, `1`, … as in PyTorch, so
 * state_dict keys match (`0.weight`).
 * @example const model = new Sequential(new Linear(784, 256), new ReLU(), new Linear(256, 10));
 * PyTorch: `nn.Sequential`.
 */
export class Sequential extends Module<[Tensor], Tensor> {
  constructor(...modules: AnyModule[]) {
    super();
    modules.forEach((module, index) => {
      (this as unknown as Record<string, unknown>)[String(index)] = checkModule(
        'Sequential',
        `modules[${index}]`,
        module,
      );
    });
  }

  /** The number of modules. */
  get length(): number {
    return [...this.children()].length;
  }

  /** The module at `index` (negative counts from the end). */
  at(index: number): AnyModule {
    const list = [...this.children()];
    const module = list[index < 0 ? list.length + index : index];
    if (module === undefined) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'index out of range', {
        op: 'Sequential.at',
        expected: `an index in [${-list.length}, ${list.length - 1}]`,
        got: String(index),
      });
    }
    return module;
  }

  /** Appends a module (named by its position). */
  append(module: AnyModule): this {
    (this as unknown as Record<string, unknown>)[String(this.length)] = checkModule(
      'Sequential.append',
      'module',
      module,
    );
    return this;
  }

  forward(input: Tensor): Tensor {
    let output = input;
    for (const module of this.children()) output = module.forward(output);
    return output;
  }

  [Symbol.iterator](): Iterator<AnyModule> {
    return this.children();
  }
}

/**
 * A list of modules whose parameters the parent sees (`layers.0.weight`, …); it has no
 * forward of its own. PyTorch: `nn.ModuleList`.
 */
export class ModuleList<Item extends AnyModule = AnyModule> extends Module<never[], never> {
  constructor(modules: Iterable<Item> = []) {
    super();
    for (const module of modules) this.push(module);
  }

  get length(): number {
    return [...this.children()].length;
  }

  /** Appends a module. */
  push(module: Item): this {
    (this as unknown as Record<string, unknown>)[String(this.length)] = checkModule(
      'ModuleList.push',
      'module',
      module,
    );
    return this;
  }

  /** The module at `index` (negative counts from the end). */
  at(index: number): Item {
    const list = [...this.children()] as Item[];
    const module = list[index < 0 ? list.length + index : index];
    if (module === undefined) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'index out of range', {
        op: 'ModuleList.at',
        expected: `an index in [${-list.length}, ${list.length - 1}]`,
        got: String(index),
      });
    }
    return module;
  }

  [Symbol.iterator](): Iterator<Item> {
    return this.children() as Iterator<Item>;
  }

  forward(): never {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'a ModuleList has no forward; iterate over its modules', {
      op: 'ModuleList.forward',
    });
  }
}

/** Named modules whose parameters the parent sees (`heads.cls.weight`). PyTorch: `nn.ModuleDict`. */
export class ModuleDict<Item extends AnyModule = AnyModule> extends Module<never[], never> {
  constructor(modules: Record<string, Item> = {}) {
    super();
    for (const [name, module] of Object.entries(modules)) this.set(name, module);
  }

  /** Adds or replaces a module. Names may not contain '.'. */
  set(name: string, module: Item): this {
    if (typeof name !== 'string' || name === '' || name.includes('.') || name.startsWith('_')) {
      throw invalidArgument(
        'ModuleDict.set',
        'name',
        "a non-empty name without '.' that does not start with '_'",
        name,
      );
    }
    (this as unknown as Record<string, unknown>)[name] = checkModule('ModuleDict.set', 'module', module);
    return this;
  }

  /** The module called `name`, or undefined. */
  get(name: string): Item | undefined {
    const value = (this as unknown as Record<string, unknown>)[name];
    return value instanceof Module ? (value as Item) : undefined;
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }

  keys(): string[] {
    return [...this.namedChildren()].map(([name]) => name);
  }

  forward(): never {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'a ModuleDict has no forward; pick a module by name', {
      op: 'ModuleDict.forward',
    });
  }
}

function checkTensor(op: string, name: string, value: unknown): Tensor {
  if (!(value instanceof Tensor)) throw invalidArgument(op, name, 'a Tensor (or a Parameter)', value);
  return value;
}

/** PyTorch's dtype name, for printing (`torch.float32`). */
function torchDtype(dtype: string): string {
  return dtype === 'bool' ? 'torch.bool' : `torch.${dtype}`;
}

/**
 * A list of parameters whose parent sees them: they are named `0`, `1`, … under the list's own
 * name (`weights.0`, `weights.1`, PyTorch's state_dict keys), handed to optimizers by
 * `parameters()`, moved and cast in place by `to(...)`, saved and loaded with the module
 * (safetensors included). A tensor that is not yet a `Parameter` becomes one (a leaf is adopted
 * without a copy, as `new Parameter(tensor)` does); a Parameter is kept as it is, so a
 * parameter shared with another module stays shared. It has no forward of its own.
 *
 * Read entries with `at(i)` (negative counts from the end), `list[i]` or by iterating.
 *
 * @param parameters the initial parameters (tensors become Parameters)
 * @throws FlodlError ERR_INVALID_ARGUMENT for an item that is not a Tensor; ERR_AUTOGRAD for an
 *   integer tensor (a parameter that requires grad must be floating point)
 * @example
 * ```ts
 * class Mixture extends Module {
 *   weights = new ParameterList([randn([4, 4]), randn([4, 4])]);
 *   forward(x: Tensor) { return tidy(() => this.weights.at(1).matmul(this.weights.at(0).matmul(x))); }
 * }
 * // state_dict keys: weights.0, weights.1
 * ```
 * PyTorch: `nn.ParameterList(values)` (`append`, `extend`, `len`, indexing, iteration).
 */
export class ParameterList extends Module<never[], never> {
  /** The parameter at `index` (`list[0]`), or undefined past the end. */
  readonly [index: number]: Tensor;

  constructor(parameters: Iterable<Tensor> = []) {
    super();
    if (
      parameters === null ||
      typeof (parameters as Partial<Iterable<Tensor>>)[Symbol.iterator] !== 'function'
    ) {
      throw invalidArgument('ParameterList', 'parameters', 'an iterable of Tensors', parameters);
    }
    let position = 0;
    for (const parameter of parameters) this.add('ParameterList', `parameters[${position++}]`, parameter);
  }

  /** The number of parameters. PyTorch: `len(list)`. */
  get length(): number {
    return this.entries().length;
  }

  /**
   * Appends a parameter (a tensor becomes a Parameter), named by its position.
   * @throws FlodlError ERR_INVALID_ARGUMENT for anything but a Tensor
   * PyTorch: `list.append(value)`.
   */
  append(parameter: Tensor): this {
    this.add('ParameterList.append', 'parameter', parameter);
    return this;
  }

  /**
   * Appends every parameter of `parameters`, in order.
   * @throws FlodlError ERR_INVALID_ARGUMENT for an item that is not a Tensor (nothing is
   *   appended then)
   * PyTorch: `list.extend(values)`.
   */
  extend(parameters: Iterable<Tensor>): this {
    const op = 'ParameterList.extend';
    if (
      parameters === null ||
      typeof (parameters as Partial<Iterable<Tensor>>)[Symbol.iterator] !== 'function'
    ) {
      throw invalidArgument(op, 'parameters', 'an iterable of Tensors', parameters);
    }
    const items = [...parameters];
    for (const [k, item] of items.entries()) checkTensor(op, `parameters[${k}]`, item);
    for (const [k, item] of items.entries()) this.add(op, `parameters[${k}]`, item);
    return this;
  }

  /**
   * The parameter at `index` (negative counts from the end).
   * @throws FlodlError ERR_INVALID_ARGUMENT for an index out of range
   * PyTorch: `list[index]`.
   */
  at(index: number): Tensor {
    const list = this.entries();
    const parameter = Number.isInteger(index) ? list[index < 0 ? list.length + index : index] : undefined;
    if (parameter === undefined) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'index out of range', {
        op: 'ParameterList.at',
        expected:
          list.length === 0
            ? 'no index (the list is empty)'
            : `an integer index in [${-list.length}, ${list.length - 1}]`,
        got: String(index),
      });
    }
    return parameter;
  }

  [Symbol.iterator](): Iterator<Tensor> {
    return this.entries()[Symbol.iterator]();
  }

  forward(): never {
    throw new FlodlError(
      'ERR_INVALID_ARGUMENT',
      'a ParameterList has no forward; iterate over its parameters',
      {
        op: 'ParameterList.forward',
      },
    );
  }

  /** One line per parameter, as PyTorch prints them: `(0): Parameter containing: [torch.float32 of size 3x4]`. */
  override extraRepr(): string {
    return this.entries()
      .map((parameter, k) => {
        const size = parameter.shape.join('x');
        const device = parameter.device.startsWith('cuda')
          ? ` (GPU ${parameter.device.split(':')[1] ?? 0})`
          : '';
        return `  (${k}): Parameter containing: [${torchDtype(parameter.dtype)} of size ${size}${device}]`;
      })
      .join('\n');
  }

  /** The list as PyTorch prints it (one parameter on the same line, more on lines of their own). */
  override toString(): string {
    const lines = this.extraRepr().split('\n');
    return lines.length === 1 ? `ParameterList(${lines[0]})` : `ParameterList(\n  ${lines.join('\n  ')}\n)`;
  }

  private entries(): Tensor[] {
    return this.ownEntries()
      .filter(([name]) => /^(0|[1-9]\d*)$/.test(name))
      .map(([, value]) => value as Tensor);
  }

  private add(op: string, name: string, value: unknown): void {
    const tensor = checkTensor(op, name, value);
    const parameter = tensor instanceof Parameter ? tensor : new Parameter(tensor);
    (this as unknown as Record<string, unknown>)[String(this.length)] = parameter;
  }
}
