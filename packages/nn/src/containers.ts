import { FlodlError, invalidArgument, type Tensor } from '@flodl/tensor-native';
import { Module } from './module.js';

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
