import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import {
  arange,
  cat,
  FlodlError,
  full,
  liveTensorCount,
  ones,
  rand,
  randint,
  stack,
  Tensor,
  tidy,
  zeros,
} from '../src/index.js';
import { native } from '../src/internal/binding.js';

describe('typed errors', () => {
  it('names broadcast failures with both shapes', () => {
    const error = caught(() => tidy(() => ones([2, 3]).add(ones([4]))));
    expect(error.code).toBe('ERR_SHAPE');
    expect(error.message).toMatchInlineSnapshot(`
      "add: shapes do not broadcast
        expected: shapes that broadcast (trailing dims equal or 1)
        got: self [2, 3] and other [4]"
    `);
    expect(error.cause).toBeDefined();
  });

  it('names matmul inner-dimension mismatches', () => {
    const error = caught(() => tidy(() => ones([2, 3]).matmul(ones([4, 5]))));
    expect(error.code).toBe('ERR_SHAPE');
    expect(error.got).toBe('self [2, 3] and other [4, 5]');
  });

  it('rejects out-of-range dims before native code', () => {
    const error = caught(() => tidy(() => ones([2, 3]).sum(2)));
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(error.message).toMatchInlineSnapshot(`
      "sum: dim out of range
        expected: an integer in [-2, 1] for a 2-d tensor
        got: 2"
    `);
  });

  it('rejects misspelled options', () => {
    const error = caught(() => zeros([2], { dtyp: 'float64' } as never));
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(error.message).toContain("unknown option 'dtyp'");
  });

  it('rejects wrong argument types, naming the argument', () => {
    const error = caught(() => tidy(() => ones([2]).add('1' as never)));
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(error.message).toContain('other');
    expect(caught(() => zeros([2, -1])).code).toBe('ERR_INVALID_ARGUMENT');
    expect(caught(() => zeros([2], { dtype: 'float8' as never })).message).toContain('float32');
    expect(caught(() => zeros([2], { device: 'gpu' as never })).message).toContain("'cuda:N'");
  });

  it('checks data length against the shape', () => {
    const error = caught(() => Tensor.from([1, 2, 3], [2, 2]));
    expect(error.code).toBe('ERR_SHAPE');
    expect(error.message).toMatchInlineSnapshot(`
      "Tensor.from: data length does not match the shape
        expected: 4 values for shape [2, 2]
        got: 3 values"
    `);
    expect(caught(() => Tensor.from([[1, 2], [3]])).code).toBe('ERR_SHAPE');
  });

  it('reports dtype problems', () => {
    const error = caught(() => tidy(() => ones([3]).gather(0, ones([2]))));
    expect(error.code).toBe('ERR_DTYPE');
    expect(caught(() => tidy(() => ones([2, 2]).maskedFill(ones([2, 2]), 0))).code).toBe('ERR_DTYPE');
  });

  it('reports cat/stack shape mismatches naming the tensor', () => {
    const error = caught(() => tidy(() => cat([ones([2, 3]), ones([2, 4]), ones([3, 3])], 0)));
    expect(error.code).toBe('ERR_SHAPE');
    expect(error.message).toContain('tensors[1]');
    expect(caught(() => tidy(() => stack([ones([2]), ones([3])]))).code).toBe('ERR_SHAPE');
  });

  it('reports CUDA use on a machine without CUDA as a device error', {
    skip: native.cudaDeviceCount() > 0,
  }, () => {
    const error = caught(() => zeros([2], { device: 'cuda' }));
    expect(error.code).toBe('ERR_DEVICE');
    expect(error.nativeMessage).toBeTruthy();
  });

  it('turns libtorch refusals into FlodlErrors carrying the native text', () => {
    const error = caught(() => tidy(() => ones([2, 3]).view(3, 2).transpose(0, 1).view(6)));
    expect(error.code).toBe('ERR_SHAPE');
    expect(error.nativeMessage).toMatch(/view size is not compatible/);
    const singular = caught(() =>
      tidy(() =>
        Tensor.from(
          [
            [1, 2],
            [2, 4],
          ],
          undefined,
          { dtype: 'float64' },
        ).matmul(ones([3])),
      ),
    );
    expect(singular.code).toBe('ERR_SHAPE');
  });

  it('survives forged and stale handles in the raw binding', () => {
    for (const handle of [-1, 1e300, Number.NaN, 2 ** 31 - 1, 0.5, 'x', {}, null, undefined]) {
      expect(() => native.add(handle as number, handle as number)).toThrow(FlodlError);
      expect(() => native.shape(handle as number)).toThrow(FlodlError);
      expect(native.free(typeof handle === 'number' ? handle : -1)).toBe(false);
    }
    expect(() => native.fromTypedArray(new Float32Array(3), [2, 2], 2, -1)).toThrow(FlodlError);
    expect(() => native.zeros([1e12, 1e12], 2, -1)).toThrow(FlodlError);
  });
});

// Random wrong (and some right) calls over the whole public surface; the process must
// survive every one and every failure must be a FlodlError.
describe('fuzzing the public API', () => {
  function makeRandom(seed: number): () => number {
    let state = seed >>> 0;
    return () => {
      state = (state * 1664525 + 1013904223) >>> 0;
      return state / 2 ** 32;
    };
  }

  it('throws only FlodlErrors and leaks nothing', () => {
    const random = makeRandom(12345);
    const before = liveTensorCount();
    const disposed = ones([2]);
    disposed.dispose();
    const methodNames = Object.getOwnPropertyNames(Tensor.prototype).filter(
      (name) =>
        name !== 'constructor' &&
        name !== 'dispose' &&
        typeof Object.getOwnPropertyDescriptor(Tensor.prototype, name)?.value === 'function',
    );
    let calls = 0;
    let failures = 0;
    const strays = new Set<string>();
    const describe = (value: unknown) =>
      value instanceof Tensor ? value.describe() : (JSON.stringify(value) ?? String(value));
    tidy(() => {
      const pool: unknown[] = [
        undefined,
        null,
        Number.NaN,
        Infinity,
        -1,
        0,
        1,
        2,
        3,
        -3,
        2.5,
        1e12,
        true,
        'float64',
        'cuda',
        'bogus',
        {},
        [],
        [2],
        [2, 3],
        [-1],
        [1e12],
        [0.5],
        { dtype: 'bool' },
        { nope: 1 },
        disposed,
        ones([2, 3]),
        zeros([3]),
        arange(6),
        full([2, 2], true),
        randint(0, 3, [2]),
        rand([2, 3, 4]),
        ones([]),
        zeros([0, 3]),
        Tensor.from([1, 2], undefined, { dtype: 'int32' }),
        Tensor.from([[1.5]], undefined, { dtype: 'float64' }),
      ];
      const pick = () => pool[Math.floor(random() * pool.length)];
      const receivers = pool.filter((value) => value instanceof Tensor && value !== disposed) as Tensor[];
      for (let k = 0; k < 10000; k++) {
        const name = methodNames[Math.floor(random() * methodNames.length)]!;
        const receiver = random() < 0.05 ? disposed : receivers[Math.floor(random() * receivers.length)]!;
        const args = Array.from({ length: Math.floor(random() * 4) }, pick);
        calls++;
        tidy(() => {
          try {
            const value = (receiver as any)[name](...args);
            if (typeof value === 'string') void value.length;
          } catch (error) {
            failures++;
            if (!FlodlError.isInstance(error)) {
              strays.add(`${name}(${args.map(describe).join(', ')}): ${String(error)}`);
            }
          }
        });
      }
    });
    expect([...strays]).toEqual([]);
    expect(calls).toBe(10000);
    expect(failures).toBeGreaterThan(1000);
    expect(liveTensorCount()).toBe(before);
  });
});
