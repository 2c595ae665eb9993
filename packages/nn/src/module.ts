// The Module base: parameters, buffers and children are discovered from the module's own
// properties, in the order they were assigned, so qualified names match PyTorch's state_dict
// keys (`0.weight`, `encoder.layers.1.bias`, ...).

import { noGrad } from '@flodl/autograd';
import {
  aten,
  type Device,
  type DType,
  FlodlError,
  invalidArgument,
  shareClassIdentity,
  Tensor,
  tidy,
} from '@flodl/tensor-native';
import { bufferInfo, isParameter } from './parameter.js';

/** What `loadStateDict` did. */
export interface LoadReport {
  loaded: string[];
  /** Keys the module has but the record lacks. */
  missing: string[];
  /** Keys the record has but the module lacks. */
  unexpected: string[];
}

/**
 * Base class of every layer and model. Subclasses assign `Parameter`s, `Buffer`s and child
 * Modules to properties in their constructor and implement `forward`.
 *
 * @example
 * ```ts
 * class TwoLayer extends Module<[Tensor], Tensor> {
 *   fc1 = new Linear(784, 256);
 *   fc2 = new Linear(256, 10);
 *   forward(x: Tensor) { return tidy(() => this.fc2.forward(this.fc1.forward(x).relu())); }
 * }
 * ```
 * PyTorch: `torch.nn.Module`.
 */
export abstract class Module<Inputs extends unknown[] = [Tensor], Output = Tensor> {
  /** @internal */
  _training = true;
  /** @internal parameters, buffers and children registered under explicit (PyTorch) names */
  _registered = new Map<string, unknown>();

  /** Computes the module's output. */
  abstract forward(...inputs: Inputs): Output;

  /** True in training mode (dropout active, batch norm uses batch statistics). */
  get isTraining(): boolean {
    return this._training;
  }

  /**
   * True in training mode, false in evaluation mode: `train()` and `eval()` set it on this
   * module and on every descendant, so each child reports the mode its parent was last put in
   * (a child switched on its own afterwards reports its own). Read-only: switch modes with
   * `train(mode)` or `eval()`. The same as {@link Module.isTraining}.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT on assignment (plain JavaScript; TypeScript
   *   refuses the assignment at compile time)
   * @example
   * ```ts
   * const model = new Sequential(new Linear(4, 4), new Dropout(0.5));
   * model.eval();
   * model.training; // false
   * model.at(1).training; // false
   * ```
   * PyTorch: `module.training`.
   */
  get training(): boolean {
    return this._training;
  }

  set training(_mode: never) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'training is read-only', {
      op: `${this.constructor.name}.training`,
      expected: 'module.train(mode) or module.eval() to switch modes',
      got: 'an assignment',
    });
  }

  /** Switches this module and its descendants to training (`true`) or evaluation mode. */
  train(mode = true): this {
    if (typeof mode !== 'boolean') throw invalidArgument('train', 'mode', 'a boolean', mode);
    for (const module of this.modules()) module._training = mode;
    return this;
  }

  /** Evaluation mode. PyTorch: `module.eval()`. */
  eval(): this {
    return this.train(false);
  }

  /** Direct children with their attribute names. */
  *namedChildren(): Generator<[string, Module<any, any>]> {
    for (const [name, value] of this.ownEntries()) {
      if (value instanceof Module) yield [name, value];
    }
  }

  /** Direct children. */
  *children(): Generator<Module<any, any>> {
    for (const [, child] of this.namedChildren()) yield child;
  }

  /** This module and every descendant, depth first, with qualified names ('' for this one). */
  *namedModules(prefix = ''): Generator<[string, Module<any, any>]> {
    yield [prefix, this];
    for (const [name, child] of this.namedChildren()) {
      yield* child.namedModules(prefix === '' ? name : `${prefix}.${name}`);
    }
  }

  /** This module and every descendant. */
  *modules(): Generator<Module<any, any>> {
    for (const [, module] of this.namedModules()) yield module;
  }

  /** Every parameter with its qualified name (PyTorch's state_dict key). */
  *namedParameters(): Generator<[string, Tensor]> {
    const seen = new Set<Tensor>();
    for (const [prefix, module] of this.namedModules()) {
      for (const [name, value] of module.ownEntries()) {
        if (isParameter(value) && !seen.has(value)) {
          seen.add(value);
          yield [prefix === '' ? name : `${prefix}.${name}`, value];
        }
      }
    }
  }

  /** Every parameter (each once, even when shared). */
  parameters(): Tensor[] {
    return [...this.namedParameters()].map(([, parameter]) => parameter);
  }

  /** Every buffer with its qualified name. */
  *namedBuffers(): Generator<[string, Tensor]> {
    for (const [prefix, module] of this.namedModules()) {
      for (const [name, value] of module.ownEntries()) {
        if (bufferInfo(value) !== undefined)
          yield [prefix === '' ? name : `${prefix}.${name}`, value as Tensor];
      }
    }
  }

  /** Every buffer. */
  buffers(): Tensor[] {
    return [...this.namedBuffers()].map(([, buffer]) => buffer);
  }

  /**
   * Clears every parameter's gradient (`setToNone`, the default) or zeroes it in place (a
   * gradient built with `createGraph` is cut from its graph first, as PyTorch does), in one
   * native call. PyTorch: `module.zero_grad(set_to_none)`.
   */
  zeroGrad(setToNone = true): void {
    if (typeof setToNone !== 'boolean') {
      throw invalidArgument(`${this.constructor.name}.zeroGrad`, 'setToNone', 'a boolean', setToNone);
    }
    aten.call('zeroGrads', this.parameters(), setToNone);
  }

  /** Stops gradients for every parameter (fine-tuning, feature extraction). */
  freeze(): this {
    for (const parameter of this.parameters()) parameter.requiresGrad_(false);
    return this;
  }

  /** Lets every floating-point parameter take gradients again. */
  unfreeze(): this {
    for (const parameter of this.parameters()) parameter.requiresGrad_(true);
    return this;
  }

  /**
   * Moves or casts every parameter and buffer in place (each keeps its identity, so an
   * optimizer built earlier still holds them). Dtype changes apply to floating tensors only.
   * PyTorch: `module.to(device)` / `module.to(dtype)`.
   */
  to(target: Device | DType | { device?: Device; dtype?: DType }): this {
    const options =
      typeof target === 'string'
        ? target === 'cpu' || target.startsWith('cuda')
          ? { device: target as Device }
          : { dtype: target as DType }
        : target;
    noGrad(() => {
      for (const tensor of [...this.parameters(), ...this.buffers()]) {
        tidy(() => {
          const floating = tensor.dtype.startsWith('float') || tensor.dtype === 'bfloat16';
          const target = {
            ...(options.device === undefined ? {} : { device: options.device }),
            ...(options.dtype === undefined || !floating ? {} : { dtype: options.dtype }),
          };
          // The gradient moves with its parameter, as in PyTorch.
          const gradient = tensor.grad;
          const movedGradient = gradient === null ? null : gradient.to(target);
          if (gradient !== null) tensor.setGrad(null);
          tensor.setData(tensor.to(target));
          if (movedGradient !== null) tensor.setGrad(movedGradient);
        });
      }
    });
    for (const module of this.modules()) module.afterMove();
    return this;
  }

  /**
   * Called on this module and every descendant after `to()` moved or cast their tensors: a
   * layer that keeps a device-specific arrangement of its parameters (cuDNN's flat RNN
   * weights) rebuilds it here. PyTorch: the layer's `_apply` override.
   */
  protected afterMove(): void {}

  /**
   * The persistent state as qualified name → tensor (new handles on the module's own
   * tensors, detached; dispose them or read them inside tidy). PyTorch: `module.state_dict()`.
   */
  stateDict(): Record<string, Tensor> {
    // PyTorch's order: each module's parameters, then its buffers, then its children.
    const record: Record<string, Tensor> = {};
    const seen = new Set<Tensor>();
    for (const [prefix, module] of this.namedModules()) {
      const entries = module.ownEntries();
      const qualified = (name: string) => (prefix === '' ? name : `${prefix}.${name}`);
      for (const [name, value] of entries) {
        if (isParameter(value) && !seen.has(value)) {
          seen.add(value);
          record[qualified(name)] = value.detach();
        }
      }
      for (const [name, value] of entries) {
        if (bufferInfo(value)?.persistent) record[qualified(name)] = (value as Tensor).detach();
      }
    }
    return record;
  }

  /**
   * Copies a record of qualified name → tensor into the module. Every shape and dtype is
   * checked before anything is copied, so a failing load leaves the module untouched.
   * With `strict` (the default) missing or unexpected keys are errors too.
   * PyTorch: `module.load_state_dict(record, strict)`.
   * @throws FlodlError ERR_CHECKPOINT naming the keys, ERR_SHAPE / ERR_DTYPE naming the tensor
   */
  loadStateDict(record: Record<string, Tensor>, strict = true): LoadReport {
    if (record === null || typeof record !== 'object')
      throw invalidArgument('loadStateDict', 'record', 'an object of name → Tensor', record);
    const own = new Map<string, Tensor>();
    for (const [name, parameter] of this.namedParameters()) own.set(name, parameter);
    for (const [name, buffer] of this.namedBuffers()) {
      if (bufferInfo(buffer)?.persistent) own.set(name, buffer);
    }
    const keys = Object.keys(record);
    const missing = [...own.keys()].filter((name) => !(name in record));
    const unexpected = keys.filter((name) => !own.has(name));
    if (strict && (missing.length > 0 || unexpected.length > 0)) {
      throw new FlodlError('ERR_CHECKPOINT', 'the record does not match the module', {
        op: 'loadStateDict',
        expected: missing.length > 0 ? `also: ${missing.join(', ')}` : 'no extra keys',
        got:
          unexpected.length > 0 ? `unexpected: ${unexpected.join(', ')}` : `missing: ${missing.join(', ')}`,
      });
    }
    const loaded = keys.filter((name) => own.has(name));
    for (const name of loaded) {
      const source = record[name];
      const target = own.get(name)!;
      if (!(source instanceof Tensor))
        throw invalidArgument('loadStateDict', `record['${name}']`, 'a Tensor', source);
      if (source.shape.join(',') !== target.shape.join(',')) {
        throw new FlodlError('ERR_SHAPE', `shape mismatch for '${name}'`, {
          op: 'loadStateDict',
          expected: `[${target.shape.join(', ')}]`,
          got: `[${source.shape.join(', ')}]`,
        });
      }
      if (source.dtype !== target.dtype) {
        throw new FlodlError('ERR_DTYPE', `dtype mismatch for '${name}'`, {
          op: 'loadStateDict',
          expected: target.dtype,
          got: source.dtype,
        });
      }
    }
    noGrad(() => {
      for (const name of loaded) own.get(name)!.copy_(record[name]!);
    });
    return { loaded, missing, unexpected };
  }

  /** Frees every parameter and buffer of this module and its descendants. */
  dispose(): void {
    for (const tensor of [...this.parameters(), ...this.buffers()]) tensor.dispose();
  }

  /** The layer's settings for printing, e.g. `in_features=784, out_features=256, bias=True`. */
  extraRepr(): string {
    return '';
  }

  /** The module tree as PyTorch prints it. */
  toString(): string {
    const name = this.constructor.name;
    const children = [...this.namedChildren()];
    const extra = this.extraRepr();
    if (children.length === 0) return `${name}(${extra})`;
    const lines = extra === '' ? [] : extra.split('\n');
    for (const [childName, child] of children) {
      lines.push(`(${childName}): ${String(child).split('\n').join('\n  ')}`);
    }
    return `${name}(\n  ${lines.join('\n  ')}\n)`;
  }

  /**
   * Registers a parameter, buffer or child under an explicit name, for names that are not
   * TypeScript property names (PyTorch's `running_mean`, `weight_ih_l0_reverse`). Properties
   * assigned in the constructor are found without this.
   */
  protected register(name: string, value: Tensor | Module<any, any> | null): void {
    if (typeof name !== 'string' || name === '' || name.includes('.') || name.startsWith('_')) {
      throw invalidArgument(
        'register',
        'name',
        "a non-empty name without '.' that does not start with '_'",
        name,
      );
    }
    this._registered.set(name, value);
  }

  /** The value registered under `name` (see `register`). */
  protected registered<T>(name: string): T {
    return this._registered.get(name) as T;
  }

  /** @internal The module's own entries: properties in assignment order, then registered names. */
  ownEntries(): [string, unknown][] {
    const properties = Object.entries(this).filter(([name]) => !name.startsWith('_'));
    return [...properties, ...this._registered];
  }
}

shareClassIdentity(Module, 'flodl.nn.Module');
