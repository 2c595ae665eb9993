import { empty, manualSeed, type Tensor, tidy } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { init } from '../src/index.js';
import { readFixture } from './golden.js';

interface InitCase {
  name: string;
  seed: number;
  shape: number[];
  values: number[];
}
const fixture = readFixture('init.json') as {
  cases: InitCase[];
};

const fills: Record<string, (tensor: Tensor) => void> = {
  uniform_: (t) => init.uniform_(t, -0.5, 2),
  normal_: (t) => init.normal_(t, 1, 0.5),
  xavierUniform_: (t) => init.xavierUniform_(t, 1.5),
  xavierNormal_: (t) => init.xavierNormal_(t),
  'kaimingUniform_ a=sqrt5': (t) => init.kaimingUniform_(t, { a: Math.sqrt(5) }),
  'kaimingUniform_ fan_out relu': (t) => init.kaimingUniform_(t, { mode: 'fan_out', nonlinearity: 'relu' }),
  kaimingNormal_: (t) => init.kaimingNormal_(t, { nonlinearity: 'relu' }),
  truncNormal_: (t) => init.truncNormal_(t, 0.5, 2, -1, 3),
  'orthogonal_ tall': (t) => init.orthogonal_(t),
  'orthogonal_ wide': (t) => init.orthogonal_(t, 2),
  'orthogonal_ conv': (t) => init.orthogonal_(t),
};

describe('init against PyTorch (same seed, same values)', () => {
  for (const golden of fixture.cases) {
    it(golden.name, () =>
      tidy(() => {
        // The goldens are draws of the CPU generator (CUDA's draws other numbers, in PyTorch too).
        manualSeed(golden.seed);
        const tensor = empty(golden.shape, { device: 'cpu' });
        fills[golden.name]!(tensor);
        const values = Array.from(tensor.toTypedArray() as Float32Array);
        for (const [k, value] of values.entries())
          expect(value, `element ${k}`).toBeCloseTo(golden.values[k]!, 5);
      }),
    );
  }
});
