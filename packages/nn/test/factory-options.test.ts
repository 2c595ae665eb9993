// PyTorch's factory options on layer constructors: `nn.Linear(4, 2, dtype=torch.float64,
// device=...)` creates the parameters (and floating buffers) as asked.
import { type Device, liveTensorCount, ones, tidy } from '@flodl/tensor-native';
import { expectFlodlError, testDevice } from '@flodl/testing';
import { afterAll, describe, expect, it } from 'vitest';
import * as nn from '../src/index.js';
import type { Module } from '../src/module.js';

const liveAtStart = liveTensorCount();
afterAll(() => {
  expect(liveTensorCount()).toBe(liveAtStart);
});

/** Every parameter and buffer of `module` as [name, dtype, device]. */
function placement(module: Module<any, any>): [string, string, string][] {
  return [...module.namedParameters(), ...module.namedBuffers()].map(([name, tensor]) => [
    name,
    tensor.dtype,
    tensor.device,
  ]);
}

const device = (testDevice === 'cpu' ? 'cpu' : `${testDevice.replace(/:.*$/, '')}:0`) as Device;
const factory = { dtype: 'float64', device } as const;

const LAYERS: [string, () => Module<any, any>][] = [
  ['Linear', () => new nn.Linear(4, 2, factory)],
  ['Bilinear', () => new nn.Bilinear(3, 4, 2, factory)],
  ['Conv1d', () => new nn.Conv1d(2, 3, 3, factory)],
  ['Conv2d', () => new nn.Conv2d(2, 4, 3, { groups: 2, ...factory })],
  ['ConvTranspose2d', () => new nn.ConvTranspose2d(2, 3, 2, factory)],
  ['Embedding', () => new nn.Embedding(5, 3, { paddingIdx: 0, ...factory })],
  ['EmbeddingBag', () => new nn.EmbeddingBag(5, 3, factory)],
  ['LayerNorm', () => new nn.LayerNorm([4], factory)],
  ['RMSNorm', () => new nn.RMSNorm([4], factory)],
  ['GroupNorm', () => new nn.GroupNorm(2, 4, factory)],
  ['LSTM', () => new nn.LSTM(3, 4, { numLayers: 2, ...factory })],
  ['GRU', () => new nn.GRU(3, 4, factory)],
  ['LSTMCell', () => new nn.LSTMCell(3, 4, factory)],
  ['GRUCell', () => new nn.GRUCell(3, 4, factory)],
  ['MultiheadAttention', () => new nn.MultiheadAttention(4, 2, factory)],
  ['PReLU', () => new nn.PReLU(3, 0.25, factory)],
  ['TransformerEncoderLayer', () => new nn.TransformerEncoderLayer(8, 2, { dimFeedforward: 16, ...factory })],
  ['TransformerDecoderLayer', () => new nn.TransformerDecoderLayer(8, 2, { dimFeedforward: 16, ...factory })],
  [
    'Transformer',
    () =>
      new nn.Transformer({
        dModel: 8,
        nhead: 2,
        numEncoderLayers: 1,
        numDecoderLayers: 1,
        dimFeedforward: 16,
        ...factory,
      }),
  ],
];

describe('layer constructors take PyTorch factory options { dtype, device }', () => {
  it.each(LAYERS)('%s creates every parameter as asked', (_, make) => {
    const layer = make();
    try {
      const placed = placement(layer);
      expect(placed.length).toBeGreaterThan(0);
      for (const [name, dtype, where] of placed)
        expect([name, dtype, where]).toEqual([name, 'float64', device]);
    } finally {
      layer.dispose();
    }
  });

  it('BatchNorm puts its running statistics there too, its batch counter stays int64', () => {
    const layer = new nn.BatchNorm1d(3, factory);
    try {
      expect(placement(layer)).toEqual([
        ['weight', 'float64', device],
        ['bias', 'float64', device],
        ['running_mean', 'float64', device],
        ['running_var', 'float64', device],
        ['num_batches_tracked', 'int64', device],
      ]);
    } finally {
      layer.dispose();
    }
  });

  it('a float64 Linear runs on float64 input', () => {
    const layer = new nn.Linear(4, 2, factory);
    try {
      tidy(() => {
        const output = layer.forward(ones([3, 4], factory));
        expect([output.dtype, [...output.shape]]).toEqual(['float64', [3, 2]]);
      });
    } finally {
      layer.dispose();
    }
  });

  it('refuses a dtype parameters cannot have, and still refuses unknown options', () => {
    expect(
      expectFlodlError(() => new nn.Linear(4, 2, { dtype: 'int64' }), 'ERR_INVALID_ARGUMENT').message,
    ).toContain('expected: a floating dtype');
    expectFlodlError(() => new nn.Linear(4, 2, { dtype: 'float128' as never }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new nn.Linear(4, 2, { dtyp: 'float64' } as never), 'ERR_INVALID_ARGUMENT');
  });
});
