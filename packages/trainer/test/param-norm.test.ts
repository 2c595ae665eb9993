// The parameter norm a rank reports every tenth step: each tensor's norm in its own precision
// (half precision widened to float32), the norms combined in float64.
import { fromData, liveTensorCount } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { paramNorm } from '../src/runtime/snapshots.js';

/** The L2 norm of the values, summed in float64 in JavaScript. */
function reference(values: number[][]): number {
  let sum = 0;
  for (const row of values) for (const value of row) sum += value * value;
  return Math.sqrt(sum);
}

describe('paramNorm', () => {
  const values = [
    [3, -4, 0.5, 1e-3],
    [12, 0, -7.25],
    [0.1, 0.2, 0.3, 0.4, 0.5],
  ];

  it('is the global L2 norm of float32 and float64 parameters', () => {
    for (const dtype of ['float32', 'float64'] as const) {
      const parameters = values.map((row) => fromData(row, [row.length], { dtype }).requiresGrad_());
      expect(paramNorm(parameters)).toBeCloseTo(reference(values), dtype === 'float64' ? 12 : 5);
    }
  });

  it('widens half-precision parameters instead of overflowing their range', () => {
    // 60000² overflows float16 (max 65504); its norm must not come back as Infinity.
    const parameters = [
      fromData([60000, 60000], [2], { dtype: 'float16' }),
      fromData([1, 2], [2], { dtype: 'bfloat16' }),
    ];
    expect(paramNorm(parameters)).toBeCloseTo(Math.sqrt(2 * 60000 ** 2 + 5), 0);
  });

  it('is 0 for no parameters and leaves no tensors behind', () => {
    expect(paramNorm([])).toBe(0);
    const parameters = values.map((row) => fromData(row, [row.length]));
    const live = liveTensorCount();
    paramNorm(parameters);
    expect(liveTensorCount()).toBe(live);
    expect(parameters.every((parameter) => parameter.isLive)).toBe(true);
  });
});
