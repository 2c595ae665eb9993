// Raw element bytes in and out: fromBytes/toBytes, and copyFromBytes_ writing them into an
// existing tensor (cast, device copy and lerp in one call).
import { describe, expect, it } from 'vitest';
import {
  arange,
  copyFromBytes_,
  cuda,
  type Device,
  fromBytes,
  liveTensorCount,
  randn,
  Tensor,
  tidy,
  toBytes,
  zeros,
} from '../src/index.js';

const DEVICES: { device: Device; skip: boolean }[] = [
  { device: 'cpu', skip: false },
  { device: 'cuda:0', skip: !cuda.isAvailable() },
];
const float32Bytes = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);
const code = (code: string) => expect.objectContaining({ code });

describe.each(DEVICES)('bytes on $device', ({ device, skip }) => {
  it.skipIf(skip)('fromBytes and toBytes round-trip the element bytes', () =>
    tidy(() => {
      const bytes = float32Bytes([1, 2.5, -3, 4]);
      const tensor = fromBytes(bytes, [2, 2], 'float32', { device });
      expect(tensor.device).toBe(device);
      expect(Array.from(toBytes(tensor))).toEqual(Array.from(bytes));
    }),
  );

  it.skipIf(skip)('copyFromBytes_ writes, casts and blends in place', () => {
    const before = liveTensorCount();
    tidy(() => {
      const target = zeros([2, 2], { dtype: 'float64', device });
      expect(copyFromBytes_(target, float32Bytes([1, 2.5, -3, 4]), 'float32')).toBe(target);
      expect([target.dtype, target.device]).toEqual(['float64', device]);
      expect(target.toArray()).toEqual([
        [1, 2.5],
        [-3, 4],
      ]);
      // lerp: (1 − α)·target + α·values.
      copyFromBytes_(target, float32Bytes([3, 2.5, -1, 0]), 'float32', { lerp: 0.5 });
      expect(target.toArray()).toEqual([
        [2, 2.5],
        [-2, 2],
      ]);
      // A strided target gets the values in its logical (row-major) order.
      const base = zeros([2, 2], { device });
      copyFromBytes_(base.t(), float32Bytes([1, 2, 3, 4]), 'float32');
      expect(base.toArray()).toEqual([
        [1, 3],
        [2, 4],
      ]);
      // A parameter is written without autograd recording it.
      const leaf = arange(0, 4, 1, { dtype: 'float32', device }).requiresGrad_();
      copyFromBytes_(leaf, float32Bytes([9, 9, 9, 9]), 'float32');
      expect([leaf.isLeaf, leaf.requiresGrad, leaf.toArray()]).toEqual([true, true, [9, 9, 9, 9]]);
    });
    expect(liveTensorCount()).toBe(before);
  });

  it.skipIf(skip)(
    'copyFromBytes_ refuses a wrong byte count and bad arguments, leaving the target as it was',
    () =>
      tidy(() => {
        const target = zeros([3], { device });
        expect(() => copyFromBytes_(target, float32Bytes([1, 2]), 'float32')).toThrowError(code('ERR_SHAPE'));
        expect(() => copyFromBytes_(target, float32Bytes([1, 2]), 'float32')).toThrowError(
          /^copyFromBytes_: got 8 bytes/,
        );
        expect(() => copyFromBytes_(target, [1, 2, 3] as never, 'float32')).toThrowError(
          code('ERR_INVALID_ARGUMENT'),
        );
        expect(() =>
          copyFromBytes_(target, float32Bytes([1, 2, 3]), 'float32', { lerp: Number.NaN }),
        ).toThrowError(code('ERR_INVALID_ARGUMENT'));
        expect(() =>
          copyFromBytes_(target, float32Bytes([1, 2, 3]), 'float32', { alpha: 1 } as never),
        ).toThrowError(code('ERR_INVALID_ARGUMENT'));
        expect(target.toArray()).toEqual([0, 0, 0]);
      }),
  );

  it.skipIf(skip)('toBytes casts, scales and writes into kept bytes, bit for bit as to().mul()', () => {
    const before = liveTensorCount();
    tidy(() => {
      const same = (left: Uint8Array, right: Uint8Array) => Buffer.from(left).equals(Buffer.from(right));
      for (const dtype of ['float32', 'float64', 'float16', 'bfloat16'] as const) {
        const tensor = randn([7, 33], { dtype, device });
        for (const scale of [3, 0.1, 1 / 3, -2.5e-3]) {
          const kept = new Uint8Array(toBytes(tensor).length);
          expect(toBytes(tensor, { into: kept, scale })).toBe(kept);
          expect(same(kept, toBytes(tensor.mul(scale))), `${dtype} × ${scale}`).toBe(true);
          expect(same(toBytes(tensor, { scale }), kept)).toBe(true);
        }
        // Widened first, then scaled: the bytes of tensor.to({ dtype: 'float32' }).mul(s).
        const wide = new Uint8Array(7 * 33 * 4);
        toBytes(tensor, { into: wide, scale: 0.7, dtype: 'float32' });
        expect(same(wide, toBytes(tensor.to({ dtype: 'float32' }).mul(0.7)))).toBe(true);
      }
      // A strided tensor's bytes come in its logical (row-major) order.
      const strided = randn([4, 5], { device }).t();
      expect(
        same(toBytes(strided, { into: new Uint8Array(80), scale: 2 }), toBytes(strided.contiguous().mul(2))),
      ).toBe(true);
      // An integer tensor is copied (or cast) as it is.
      const counts = Tensor.from([1, 2, 3], undefined, { dtype: 'int64', device });
      expect(Array.from(new BigInt64Array(toBytes(counts, { into: new Uint8Array(24) }).buffer))).toEqual([
        1n,
        2n,
        3n,
      ]);
    });
    expect(liveTensorCount()).toBe(before);
  });

  it.skipIf(skip)(
    'toBytes refuses a wrong byte count, a scale without a floating dtype and bad options',
    () =>
      tidy(() => {
        const tensor = zeros([3], { device });
        const kept = new Uint8Array(12).fill(7);
        expect(() => toBytes(tensor, { into: new Uint8Array(8) })).toThrowError(/^toBytes: got 8 bytes/);
        expect(() => toBytes(tensor, { into: new Uint8Array(8) })).toThrowError(code('ERR_SHAPE'));
        expect(() => toBytes(tensor, { into: [0, 0] as never })).toThrowError(code('ERR_INVALID_ARGUMENT'));
        expect(() => toBytes(tensor, { into: kept, scale: Number.POSITIVE_INFINITY })).toThrowError(
          code('ERR_INVALID_ARGUMENT'),
        );
        expect(() => toBytes(tensor, { into: kept, scale: 2, dtype: 'int32' })).toThrowError(
          code('ERR_INVALID_ARGUMENT'),
        );
        expect(() => toBytes(tensor, { into: kept, offset: 1 } as never)).toThrowError(
          code('ERR_INVALID_ARGUMENT'),
        );
        // Nothing was written by a refused call.
        expect(Array.from(kept)).toEqual(new Array(12).fill(7));
      }),
  );
});
