// Every layer against PyTorch (fixtures/layers.json, from scripts/make-goldens-layers.py):
// default initialisation bit for bit under the same seed, state_dict names and loading,
// printing, float64 forward and gradients, and the running statistics after training steps.
import { liveTensorCount, manualSeed, ones, type Tensor, tidy } from '@flodl/tensor-native';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as nn from '../src/index.js';
import type { Module } from '../src/module.js';
import {
  decodeInputs,
  decodeOptions,
  decodeRecord,
  decodeTensor,
  type Encoded,
  type EncodedValue,
  expectClose,
  expectExact,
  FLOAT64,
  readFixture,
} from './golden.js';

interface LayerCase {
  name: string;
  layer: string;
  args: EncodedValue[];
  seed: number;
  train: boolean;
  init: [string, Encoded][];
  state: [string, Encoded][];
  inputs: EncodedValue[];
  outputs: [string, Encoded][];
  R: Record<string, Encoded>;
  inputGrads: [string, Encoded][];
  paramGrads: [string, Encoded | null][];
  repr?: string;
  after?: [string, Encoded][];
}

const fixture = readFixture<{ torch: string; cases: LayerCase[] }>('layers.json');

type AnyModule = Module<any, any>;
type LayerConstructor = new (...args: unknown[]) => AnyModule;

/** `new nn[layer](...args)`; `{ module: { layer, args } }` arguments are built the same way (Sequential). */
function build(layer: string, args: EncodedValue[]): AnyModule {
  const Layer = (nn as unknown as Record<string, LayerConstructor | undefined>)[layer];
  if (Layer === undefined) throw new Error(`no layer ${layer} in @flodl/nn`);
  return new Layer(
    ...args.map((arg) => {
      if (arg !== null && typeof arg === 'object' && !Array.isArray(arg) && 'module' in arg) {
        const child = arg.module as { layer: string; args: EncodedValue[] };
        return build(child.layer, child.args);
      }
      return decodeOptions(arg);
    }),
  );
}

/** A forward result's output by the script's key: '' is the result itself, else a field of it. */
function outputOf(result: unknown, key: string): Tensor | undefined {
  return (key === '' ? result : (result as Record<string, Tensor | null>)[key]) as Tensor | undefined;
}

let liveAtStart = 0;
beforeAll(() => {
  liveAtStart = liveTensorCount();
});
afterAll(() => {
  expect(liveTensorCount()).toBe(liveAtStart);
});

describe(`layers against PyTorch ${fixture.torch}`, () => {
  it.each(fixture.cases.map((testCase) => [testCase.name, testCase] as const))('%s', (_, testCase) => {
    const live = liveTensorCount();
    manualSeed(testCase.seed);
    const layer = build(testCase.layer, testCase.args);
    try {
      // Default initialisation: the same generator, draws and order as PyTorch, so equal bits.
      tidy(() => {
        const state = layer.stateDict();
        expect(Object.keys(state).sort()).toEqual(testCase.init.map(([key]) => key).sort());
        for (const [key, encoded] of testCase.init) expectExact(state[key], encoded, `init ${key}`);
      });
      if (testCase.repr !== undefined) expect(String(layer)).toBe(testCase.repr);

      layer.train(testCase.train).to('float64');
      tidy(() => {
        const report = layer.loadStateDict(decodeRecord(testCase.state));
        expect(report.missing).toEqual([]);
        expect(report.unexpected).toEqual([]);

        const { inputs, leaves } = decodeInputs(testCase.inputs);
        const result = layer.forward(...inputs);
        for (const [key, encoded] of testCase.outputs) {
          if (encoded.dtype === 'int64') expectExact(outputOf(result, key), encoded, `output ${key}`);
          else expectClose(outputOf(result, key), encoded, FLOAT64, `output ${key}`);
        }
        if (testCase.layer === 'MultiheadAttention' && !testCase.outputs.some(([key]) => key === 'weights')) {
          expect(outputOf(result, 'weights'), 'needWeights false returns no weights').toBeNull();
        }

        let total: Tensor | undefined;
        for (const [key, encoded] of Object.entries(testCase.R)) {
          const term = outputOf(result, key)!.mul(decodeTensor(encoded)).sum();
          total = total === undefined ? term : total.add(term);
        }
        total!.backward();
        for (const [path, encoded] of testCase.inputGrads) {
          expectClose(leaves.get(path)?.grad ?? undefined, encoded, FLOAT64, `grad of input ${path}`);
        }
        const parameters = new Map(layer.namedParameters());
        expect([...parameters.keys()]).toEqual(testCase.paramGrads.map(([key]) => key));
        for (const [key, encoded] of testCase.paramGrads) {
          const gradient = parameters.get(key)!.grad;
          if (encoded === null) expect(gradient, `grad of ${key}`).toBeNull();
          else expectClose(gradient ?? undefined, encoded, FLOAT64, `grad of ${key}`);
        }

        // Running statistics (and max_norm renormalisation) after forward.
        if (testCase.after !== undefined) {
          const state = layer.stateDict();
          for (const [key, encoded] of testCase.after) {
            if (encoded.dtype === 'int64') expectExact(state[key], encoded, `after forward: ${key}`);
            else expectClose(state[key], encoded, FLOAT64, `after forward: ${key}`);
          }
        }
      });
    } finally {
      layer.dispose();
    }
    expect(liveTensorCount()).toBe(live);
  });
});

describe('state_dict key order', () => {
  // PyTorch writes each module's parameters, then its buffers, then its children's entries;
  // the Module base (module.ts, not this suite's to fix) lists every parameter of the tree
  // before any buffer, so a container holding a BatchNorm orders its keys differently.
  it('matches PyTorch’s state_dict order for a Sequential with running statistics', () => {
    const testCase = fixture.cases.find((candidate) => candidate.layer === 'Sequential')!;
    const layer = build(testCase.layer, testCase.args);
    try {
      tidy(() => expect(Object.keys(layer.stateDict())).toEqual(testCase.init.map(([key]) => key)));
    } finally {
      layer.dispose();
    }
  });

  it('matches PyTorch for every single layer', () => {
    for (const testCase of fixture.cases.filter((candidate) => candidate.layer !== 'Sequential')) {
      const layer = build(testCase.layer, testCase.args);
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
