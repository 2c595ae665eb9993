// Every layer against PyTorch (fixtures/layers.json, from scripts/make-goldens-layers.py):
// default initialisation bit for bit under the same seed, state_dict names and loading,
// printing, float64 forward and gradients, and the running statistics after training steps.
import { liveTensorCount, manualSeed, ones, tidy } from '@flodl/tensor-native';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as nn from '../src/index.js';
import { readFixture } from './golden.js';
import { buildCase, type LayerCase, layerTest, runLayerCase } from './layer-case.js';

const fixture = readFixture<{ torch: string; cases: LayerCase[] }>('layers.json');

let liveAtStart = 0;
beforeAll(() => {
  liveAtStart = liveTensorCount();
});
afterAll(() => {
  expect(liveTensorCount()).toBe(liveAtStart);
});

describe(`layers against PyTorch ${fixture.torch}`, () => {
  for (const testCase of fixture.cases) layerTest(testCase)(testCase.name, () => runLayerCase(testCase));
});

describe('state_dict key order', () => {
  // PyTorch writes each module's parameters, then its buffers, then its children's entries;
  // the Module base (module.ts, not this suite's to fix) lists every parameter of the tree
  // before any buffer, so a container holding a BatchNorm orders its keys differently.
  it('matches PyTorch’s state_dict order for a Sequential with running statistics', () => {
    const testCase = fixture.cases.find((candidate) => candidate.layer === 'Sequential')!;
    const layer = buildCase(testCase);
    try {
      tidy(() => expect(Object.keys(layer.stateDict())).toEqual(testCase.init.map(([key]) => key)));
    } finally {
      layer.dispose();
    }
  });

  it('matches PyTorch for every single layer', () => {
    for (const testCase of fixture.cases.filter((candidate) => candidate.layer !== 'Sequential')) {
      const layer = buildCase(testCase);
      try {
        tidy(() =>
          expect(Object.keys(layer.stateDict()), testCase.name).toEqual(testCase.init.map(([key]) => key)),
        );
      } finally {
        layer.dispose();
      }
    }
  });
});

describe('dropout in training', () => {
  it('Dropout zeroes a fraction p and scales the rest by 1/(1 − p)', () => {
    const layer = new nn.Dropout(0.3);
    manualSeed(7);
    tidy(() => {
      const output = layer.forward(ones([200, 100], { dtype: 'float64' }));
      const values = Array.from(output.toTypedArray() as Float64Array);
      const zeros = values.filter((value) => value === 0).length / values.length;
      expect(Math.abs(zeros - 0.3)).toBeLessThan(0.02);
      expect(values.every((value) => value === 0 || Math.abs(value - 1 / 0.7) < 1e-15)).toBe(true);
    });
  });

  it('Dropout2d zeroes whole channels', () => {
    const layer = new nn.Dropout2d(0.4);
    manualSeed(8);
    tidy(() => {
      const output = layer.forward(ones([40, 50, 3, 3], { dtype: 'float64' }));
      const channels = output.reshape(2000, 9).toArray() as number[][];
      expect(channels.every((row) => row.every((value) => value === row[0]))).toBe(true);
      const zeros = channels.filter((row) => row[0] === 0).length / channels.length;
      expect(Math.abs(zeros - 0.4)).toBeLessThan(0.04);
      expect(channels.every((row) => row[0] === 0 || Math.abs(row[0]! - 1 / 0.6) < 1e-15)).toBe(true);
    });
  });

  it('is the identity in evaluation mode and after p = 0', () => {
    for (const layer of [new nn.Dropout(0.5).eval(), new nn.Dropout2d(0.5).eval(), new nn.Dropout(0)]) {
      tidy(() => {
        const input = ones([2, 3, 2, 2]);
        expect(layer.forward(input).toArray()).toEqual(input.toArray());
      });
    }
  });
});
