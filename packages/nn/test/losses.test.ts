// Every loss module against PyTorch (fixtures/losses.json, from scripts/make-goldens-layers.py):
// non-default options, state_dict names of the weight buffers, printing, float64 loss and the
// gradients of the inputs. FocalLoss is checked against torchvision's formula.
import { type FlodlError, liveTensorCount, ones, type Tensor, tidy } from '@flodl/tensor-native';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as nn from '../src/index.js';
import type { Module } from '../src/module.js';
import {
  decodeInputs,
  decodeOptions,
  decodeTensor,
  type Encoded,
  type EncodedValue,
  expectClose,
  FLOAT64,
  readFixture,
} from './golden.js';

interface LossCase {
  name: string;
  loss: string;
  options: EncodedValue;
  stateKeys: string[];
  repr: string | null;
  inputs: EncodedValue[];
  output: Encoded;
  R: Encoded;
  inputGrads: [string, Encoded][];
}

const fixture = readFixture<{ torch: string; cases: LossCase[] }>('losses.json');

type AnyLoss = Module<any, Tensor>;

function build(testCase: LossCase): AnyLoss {
  const Loss = (nn as unknown as Record<string, (new (options?: unknown) => AnyLoss) | undefined>)[
    testCase.loss
  ];
  if (Loss === undefined) throw new Error(`no loss ${testCase.loss} in @flodl/nn`);
  return testCase.options === null ? new Loss() : new Loss(decodeOptions(testCase.options));
}

let liveAtStart = 0;
beforeAll(() => {
  liveAtStart = liveTensorCount();
});
afterAll(() => {
  expect(liveTensorCount()).toBe(liveAtStart);
});

describe(`loss modules against PyTorch ${fixture.torch}`, () => {
  it.each(fixture.cases.map((testCase) => [testCase.name, testCase] as const))('%s', (_, testCase) => {
    const live = liveTensorCount();
    // Built inside tidy: the option tensors are the caller's, the module keeps its own copies.
    const loss = tidy(() => build(testCase));
    try {
      tidy(() => expect(Object.keys(loss.stateDict())).toEqual(testCase.stateKeys));
      if (testCase.repr !== null) expect(String(loss)).toBe(testCase.repr);
      tidy(() => {
        const { inputs, leaves } = decodeInputs(testCase.inputs);
        const output = loss.forward(...inputs);
        expectClose(output, testCase.output, FLOAT64, 'loss');
        output.mul(decodeTensor(testCase.R)).sum().backward();
        for (const [path, encoded] of testCase.inputGrads) {
          expectClose(leaves.get(path)?.grad ?? undefined, encoded, FLOAT64, `grad of input ${path}`);
        }
      });
    } finally {
      loss.dispose();
    }
    expect(liveTensorCount()).toBe(live);
  });
});

describe('loss module options', () => {
  it('rejects misspelled options when built', () => {
    expect(() => new nn.CrossEntropyLoss({ labelSmothing: 0.1 } as never)).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }) as FlodlError,
    );
    expect(() => new nn.FocalLoss({ gama: 2 } as never)).toThrow(/unknown option 'gama'/);
  });

  it('keeps class weights as buffers that move with to()', () => {
    const loss = tidy(() => new nn.BCEWithLogitsLoss({ weight: ones([3]), posWeight: ones([3]).mul(2) }));
    try {
      expect([...loss.namedBuffers()].map(([name]) => name)).toEqual(['weight', 'pos_weight']);
      loss.to('float64');
      expect(loss.buffers().map((buffer) => buffer.dtype)).toEqual(['float64', 'float64']);
    } finally {
      loss.dispose();
    }
  });
});
