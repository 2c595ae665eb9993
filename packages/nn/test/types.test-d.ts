// Type-level tests (checked by tsc --noEmit in the package's `typecheck` task): the public generics and
// overloads of Module, the optimizers, the pools' returnIndices forms and the layer options.
import type { Tensor, ValuesIndices } from '@flodl/tensor-native';
import { describe, expectTypeOf, it } from 'vitest';
import {
  Adam,
  type AdamGroupOptions,
  type Bilinear,
  clipGradNorm,
  clipGradNorm_,
  Linear,
  MaxPool2d,
  Module,
  type Optimizer,
  type ParamGroup,
  Sequential,
  SGD,
} from '../src/index.js';

declare const x: Tensor;

/** A module of two inputs and a structured output. */
class Pair extends Module<[Tensor, Tensor], { sum: Tensor; product: Tensor }> {
  forward(a: Tensor, b: Tensor): { sum: Tensor; product: Tensor } {
    return { sum: a.add(b), product: a.mul(b) };
  }
}

describe('Module generics', () => {
  it('types forward by the Inputs tuple and the Output', () => {
    const pair = new Pair();
    expectTypeOf(pair.forward).parameters.toEqualTypeOf<[Tensor, Tensor]>();
    expectTypeOf(pair.forward(x, x)).toEqualTypeOf<{ sum: Tensor; product: Tensor }>();
    // @ts-expect-error: one input is missing
    pair.forward(x);
  });

  it('defaults to one Tensor in and one Tensor out', () => {
    expectTypeOf<Linear>().toExtend<Module>();
    expectTypeOf<Module>().toEqualTypeOf<Module<[Tensor], Tensor>>();
    expectTypeOf(new Linear(4, 2).forward(x)).toEqualTypeOf<Tensor>();
    expectTypeOf(new Sequential(new Linear(4, 2)).forward(x)).toEqualTypeOf<Tensor>();
    expectTypeOf<Bilinear>().toExtend<Module<[Tensor, Tensor], Tensor>>();
    expectTypeOf(new Linear(4, 2).parameters()).toEqualTypeOf<Tensor[]>();
  });

  it('reads training as a boolean and refuses to assign it', () => {
    const linear = new Linear(4, 2);
    expectTypeOf(linear.training).toEqualTypeOf<boolean>();
    // @ts-expect-error: switch modes with train() or eval()
    linear.training = false;
  });
});

describe('Optimizer generics and overloads', () => {
  it('carries the group options of its kind', () => {
    const adam = new Adam(new Linear(4, 2).parameters(), { lr: 1e-3 });
    expectTypeOf(adam).toExtend<Optimizer<AdamGroupOptions>>();
    expectTypeOf(adam.paramGroups).toEqualTypeOf<ParamGroup<AdamGroupOptions>[]>();
    expectTypeOf(adam.paramGroups[0]!.betas).toEqualTypeOf<[number, number]>();
    // @ts-expect-error: SGD has no betas
    new SGD([x], { lr: 0.1, betas: [0.9, 0.999] });
  });

  it('step() returns nothing, step(closure) what the closure returns', () => {
    const sgd = new SGD([x], { lr: 0.1 });
    expectTypeOf(sgd.step()).toEqualTypeOf<void>();
    expectTypeOf(sgd.step(() => 1.5)).toEqualTypeOf<number>();
    expectTypeOf(sgd.step(() => x)).toEqualTypeOf<Tensor>();
  });
});

describe('returnIndices forms of the pooling layers', () => {
  it('forward may give values and indices', () => {
    expectTypeOf(new MaxPool2d(2, { returnIndices: true }).forward(x)).toEqualTypeOf<
      Tensor | ValuesIndices
    >();
  });
});

describe('layer options', () => {
  it("take PyTorch's factory options and refuse a dtype that does not exist", () => {
    expectTypeOf(Linear).toBeConstructibleWith(4, 2, { dtype: 'float64', device: 'cpu' });
    expectTypeOf(Linear).toBeConstructibleWith(4, 2, { bias: false, device: 'cuda:1' });
    // @ts-expect-error: not a dtype
    new Linear(4, 2, { dtype: 'float65' });
  });
});

describe('clipping', () => {
  it('the deprecated name has the same signature', () => {
    expectTypeOf(clipGradNorm_).returns.toEqualTypeOf<number>();
    expectTypeOf(clipGradNorm).toEqualTypeOf(clipGradNorm_);
  });
});
