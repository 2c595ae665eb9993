// One layer case of the golden scripts (make-goldens-layers.py, make-goldens-transformer.py) run
// against our layer: default initialisation bit for bit under the same seed, state_dict names and
// loading, float64 forward and gradients, and the state after forward.
import { backends, liveTensorCount, manualSeed, type Tensor, tidy } from '@flodl/tensor-native';
import { expect, it } from 'vitest';
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
  onDevice,
  onHost,
  testDevice,
} from './golden.js';

export interface LayerCase {
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

type AnyModule = Module<any, any>;
type LayerConstructor = new (...args: unknown[]) => AnyModule;

function isModuleSpec(value: EncodedValue): value is { module: { layer: string; args: EncodedValue[] } } {
  return value !== null && typeof value === 'object' && !Array.isArray(value) && 'module' in value;
}

/** A constructor argument: `{ module: { layer, args } }` (at any depth) builds that module into `built`. */
function buildArgument(value: EncodedValue, built: AnyModule[]): unknown {
  if (isModuleSpec(value)) {
    const module = build(value.module.layer, value.module.args, built);
    built.push(module);
    return module;
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value) && !('tensor' in value)) {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, buildArgument(item, built)]));
  }
  return decodeOptions(value);
}

/**
 * `new nn[layer](...args)`, building module arguments (Sequential's children, a stack's layer)
 * first; every module built for an argument is pushed to `built`.
 */
function build(layer: string, args: EncodedValue[], built: AnyModule[] = []): AnyModule {
  const Layer = (nn as unknown as Record<string, LayerConstructor | undefined>)[layer];
  if (Layer === undefined) throw new Error(`no layer ${layer} in @flodl/nn`);
  return new Layer(...args.map((arg) => buildArgument(arg, built)));
}

/** Builds the case's layer and disposes the argument modules it copied (a stack's template layer). */
export function buildCase(testCase: Pick<LayerCase, 'layer' | 'args'>): AnyModule {
  const built: AnyModule[] = [];
  const layer = build(testCase.layer, testCase.args, built);
  const inside = new Set(layer.modules());
  for (const module of built) if (!inside.has(module)) module.dispose();
  return layer;
}

/** A forward result's output by the script's key: '' is the result itself, else a field of it. */
function outputOf(result: unknown, key: string): Tensor | undefined {
  return (key === '' ? result : (result as Record<string, Tensor | null>)[key]) as Tensor | undefined;
}

/**
 * The test for a case: on CUDA, cases that draw random numbers in forward (dropout in training)
 * are skipped: CUDA's generator draws other numbers than the CPU one PyTorch's goldens used.
 */
export function layerTest(testCase: LayerCase): ReturnType<typeof it.skipIf> {
  return it.skipIf(
    onDevice &&
      ((testCase.train && /dropout/i.test(testCase.name)) || NOT_ON_CUDA[testCase.name] !== undefined),
  );
}

/**
 * Goldens libtorch's CUDA kernels do not reproduce, with the reason (our binding passes the
 * same call to both; the CPU tier holds these cases).
 */
const NOT_ON_CUDA: Record<string, string> = {
  'Embedding max_norm':
    "libtorch's CUDA renorm takes pow() of signed values for a fractional normType (a NaN norm leaves the row unscaled)",
  'EmbeddingBag max_norm':
    "libtorch 1.13's CPU scaleGradByFreq divides a row seen once by another row's count (the golden); CUDA's kernel divides by the true count",
};

/**
 * Runs one case; leaves no tensor behind. The layer is built and its initialisation checked on
 * the CPU (the seeded goldens); forward and backward then run on the test device.
 */
export function runLayerCase(testCase: LayerCase): void {
  const live = liveTensorCount();
  manualSeed(testCase.seed);
  const layer = onHost(() => buildCase(testCase));
  // cuDNN RNNs have no backward in eval mode (PyTorch refuses it too): use libtorch's own kernels.
  const cudnn = backends.cudnn.enabled;
  if (onDevice && !testCase.train && /^(RNN|GRU|LSTM)$/.test(testCase.layer)) backends.cudnn.enabled = false;
  try {
    // Default initialisation: the same generator, draws and order as PyTorch, so equal bits.
    tidy(() => {
      const state = layer.stateDict();
      expect(Object.keys(state).sort()).toEqual(testCase.init.map(([key]) => key).sort());
      for (const [key, encoded] of testCase.init) expectExact(state[key], encoded, `init ${key}`);
    });
    if (testCase.repr !== undefined) expect(String(layer)).toBe(testCase.repr);

    layer.train(testCase.train).to(testDevice).to('float64');
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
    backends.cudnn.enabled = cudnn;
    layer.dispose();
  }
  expect(liveTensorCount()).toBe(live);
}
