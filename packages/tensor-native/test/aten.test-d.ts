// Type-level tests (checked by tsc --noEmit in the package's `typecheck` task): the native
// entries' types on the raw binding (Handles) and through aten.call (Tensors), per op.
import { describe, expectTypeOf, it } from 'vitest';
import { type AtenArgs, type AtenOp, type AtenResult, aten, type Tensor } from '../src/index.js';
import type { Handle, NativeBinding } from '../src/internal/binding-types.js';

declare const x: Tensor;
declare const w: Tensor;
declare const binding: NativeBinding;

describe('the raw binding', () => {
  it('takes and returns Handles for tensors', () => {
    expectTypeOf(binding.add).parameters.toEqualTypeOf<
      [a: Handle, b: Handle, alpha?: number | boolean | null | undefined]
    >();
    expectTypeOf(binding.add).returns.toEqualTypeOf<Handle>();
    expectTypeOf(binding.sort(1, 0)).toEqualTypeOf<[Handle, Handle]>();
    expectTypeOf(binding.autogradGrad([1], [2])).toEqualTypeOf<(Handle | null)[]>();
    expectTypeOf(binding.add_(1, 2)).toEqualTypeOf<void>();
    expectTypeOf(binding.shape(1)).toEqualTypeOf<number[]>();
  });

  it('keeps a tensor-free entry as declared, generics included', () => {
    expectTypeOf(binding.inferenceMode(() => 'done')).toEqualTypeOf<string>();
    expectTypeOf(binding.distInfo()).toEqualTypeOf<{ c10d: boolean; gloo: boolean; nccl: boolean }>();
  });

  it('marks the entries only some builds register optional', () => {
    expectTypeOf(binding.fusedAdam).toEqualTypeOf<NativeBinding['fusedAdam']>();
    expectTypeOf<undefined>().toExtend<NativeBinding['fusedAdam']>();
    expectTypeOf<undefined>().not.toExtend<NativeBinding['foreachAdamExact']>();
  });
});

describe('aten.call', () => {
  it('passes and returns Tensors for tensors, per op', () => {
    expectTypeOf(aten.call('relu', x)).toEqualTypeOf<Tensor>();
    expectTypeOf(aten.call('linear', x, w, undefined)).toEqualTypeOf<Tensor>();
    expectTypeOf(aten.call('topk', x, 2, -1, true, true)).toEqualTypeOf<[Tensor, Tensor]>();
    expectTypeOf(aten.call('chunk', x, 2, 0)).toEqualTypeOf<Tensor[]>();
    expectTypeOf(aten.call('lstm', x, undefined, [w], true, 1, 0, false, false, false)).toEqualTypeOf<
      [Tensor, Tensor, Tensor]
    >();
    expectTypeOf(aten.call('gradsNorm', [x], 2)).toEqualTypeOf<Tensor | null>();
    expectTypeOf(aten.call('hasGrads', [x])).toEqualTypeOf<boolean[]>();
    expectTypeOf(aten.call('zeroGrads', [x], true)).toEqualTypeOf<void>();
    expectTypeOf(aten.call('gradFn', x)).toEqualTypeOf<string | null>();
  });

  it('names its arguments and result types by op', () => {
    expectTypeOf<AtenArgs<'mseLoss'>>().toEqualTypeOf<[input: Tensor, target: Tensor, reduction: string]>();
    expectTypeOf<AtenArgs<'cat'>>().toEqualTypeOf<[tensors: readonly Tensor[], dim: number]>();
    expectTypeOf<AtenResult<'maxPool'>>().toEqualTypeOf<Tensor | [Tensor, Tensor]>();
    expectTypeOf<AtenResult<'foreachSgd'>>().toEqualTypeOf<(Tensor | null)[] | undefined>();
  });

  it('refuses unknown ops, wrong arguments, and ops that return plain numbers', () => {
    // @ts-expect-error: no native op of this name
    aten.call('conv2d', x, w);
    // @ts-expect-error: a Tensor where the op reads a number
    aten.call('softmax', x, x);
    // @ts-expect-error: a missing argument
    aten.call('mseLoss', x, w);
    // @ts-expect-error: numel's number would come back as a Tensor
    aten.call('numel', x);
    expectTypeOf<'numel' | 'shape' | 'item' | 'streamCreate'>().not.toExtend<AtenOp>();
    expectTypeOf<'relu' | 'fusedAdam' | 'distAllReduce'>().toExtend<AtenOp>();
  });

  it('keeps aten.has for any name', () => {
    expectTypeOf(aten.has).parameters.toEqualTypeOf<[name: string]>();
  });
});
