// A batch: the tensors of one step, by position and by name.
import { FlodlError, invalidArgument, Tensor } from '@flodl/tensor-native';
import { checkNames } from './validate.js';

/**
 * The tensors of one batch (dim 0 = batch), by position (`batch[0]`, `batch.at(0)`) and by
 * name (`batch.get('image')`). Names default to `'0'`, `'1'`, …
 *
 * A batch from a `DataLoader` belongs to the consumer: dispose it when the step is done
 * (`using batch = …`, `for (using batch of loader.epoch(n))`, or `batch.dispose()`).
 * `tensors()` lets `tidy` see its tensors when a scope returns it.
 *
 * @example
 * ```ts
 * for (using batch of loader.epoch(0)) {
 *   const [images, labels] = batch;
 *   tidy(() => train(batch.get('image'), batch.get('label')));
 * }
 * ```
 * PyTorch: the list or dict that `torch.utils.data.DataLoader` yields.
 */
export class Batch implements Iterable<Tensor> {
  readonly [index: number]: Tensor;
  /** How many tensors the batch holds. */
  readonly length: number;
  /** The tensors' names, one per position. */
  readonly names: readonly string[];
  private readonly items: readonly Tensor[];

  /**
   * @throws FlodlError ERR_INVALID_ARGUMENT when an item is not a Tensor, or the names are not
   * distinct strings, one per tensor
   */
  constructor(tensors: readonly Tensor[], names?: readonly string[]) {
    if (!Array.isArray(tensors) || tensors.length === 0) {
      throw invalidArgument('Batch', 'tensors', 'a non-empty array of Tensors', tensors);
    }
    tensors.forEach((tensor, position) => {
      if (!(tensor instanceof Tensor))
        throw invalidArgument('Batch', `tensors[${position}]`, 'a Tensor', tensor);
    });
    this.items = Object.freeze([...tensors]);
    this.length = tensors.length;
    this.names =
      names === undefined
        ? Object.freeze(tensors.map((_, k) => String(k)))
        : checkNames('Batch', names, tensors.length);
    const indexed = this as unknown as Record<number, Tensor>;
    for (let position = 0; position < tensors.length; position++) {
      Object.defineProperty(indexed, position, { value: tensors[position], enumerable: true });
    }
  }

  /**
   * The tensor at `position`; negative positions count from the end.
   * @throws FlodlError ERR_INVALID_ARGUMENT when there is no such position
   */
  at(position: number): Tensor {
    if (!Number.isInteger(position) || position < -this.length || position >= this.length) {
      throw invalidArgument(
        'Batch.at',
        'position',
        `an integer in [${-this.length}, ${this.length - 1}]`,
        position,
      );
    }
    return this.items[position < 0 ? position + this.length : position]!;
  }

  /**
   * The tensor named `name`.
   * @throws FlodlError ERR_INVALID_ARGUMENT naming the batch's names when there is none
   */
  get(name: string): Tensor {
    const position = this.names.indexOf(name);
    if (position < 0) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `the batch has no tensor named ${JSON.stringify(name)}`, {
        op: 'Batch.get',
        expected: `one of ${this.names.map((known) => JSON.stringify(known)).join(', ')}`,
        got: JSON.stringify(name),
      });
    }
    return this.items[position]!;
  }

  /** True when a tensor is named `name`. */
  has(name: string): boolean {
    return this.names.includes(name);
  }

  /** The tensors in position order (a new array; the tensors are the batch's). */
  tensors(): Tensor[] {
    return [...this.items];
  }

  /** The number of samples: dim 0 of the first tensor. */
  get size(): number {
    return this.items[0]!.shape[0] ?? 1;
  }

  /** True once every tensor was disposed. */
  get isDisposed(): boolean {
    return this.items.every((tensor) => !tensor.isLive);
  }

  [Symbol.iterator](): Iterator<Tensor> {
    return this.items[Symbol.iterator]();
  }

  /** Frees every tensor of the batch. Safe to call twice. */
  dispose(): void {
    for (const tensor of this.items) tensor.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    const parts = this.items.map((tensor, k) => `${this.names[k]}: ${tensor.describe()}`);
    return `Batch(${parts.join(', ')})`;
  }
}
