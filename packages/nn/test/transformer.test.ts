// The transformer layers against PyTorch (fixtures/transformer.json, from
// scripts/make-goldens-transformer.py), then their errors, causal options, activations and copies.

import { gelu, noGrad } from '@flodl/autograd';
import { liveTensorCount, manualSeed, randn, type Tensor, tidy, zeros } from '@flodl/tensor-native';
import { expectFlodlError } from '@flodl/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  BatchNorm1d,
  GELU,
  LayerNorm,
  Linear,
  Module,
  PReLU,
  Transformer,
  TransformerDecoder,
  TransformerDecoderLayer,
  TransformerEncoder,
  type TransformerEncoderInputs,
  TransformerEncoderLayer,
} from '../src/index.js';
import { readFixture } from './golden.js';
import { buildCase, type LayerCase, layerTest, runLayerCase } from './layer-case.js';

const fixture = readFixture<{ torch: string; cases: LayerCase[] }>('transformer.json');

let liveAtStart = 0;
beforeAll(() => {
  liveAtStart = liveTensorCount();
});
afterAll(() => {
  expect(liveTensorCount()).toBe(liveAtStart);
});

/** The largest |a − b|. */
function maxDifference(a: Tensor, b: Tensor): number {
  return tidy(() => a.sub(b).abs().max().item() as number);
}

/** Builds a module, runs `use`, disposes it. */
function using<M extends { dispose(): void }>(module: M, use: (module: M) => void): void {
  try {
    use(module);
  } finally {
    module.dispose();
  }
}

describe(`transformer layers against PyTorch ${fixture.torch}`, () => {
  for (const testCase of fixture.cases) layerTest(testCase)(testCase.name, () => runLayerCase(testCase));

  it('lists state_dict keys in PyTorch’s order for every case', () => {
    for (const testCase of fixture.cases) {
      using(buildCase(testCase), (layer) =>
        tidy(() =>
          expect(Object.keys(layer.stateDict()), testCase.name).toEqual(testCase.init.map(([key]) => key)),
        ),
      );
    }
  });
});

describe('TransformerEncoderLayer', () => {
  it('has PyTorch’s children and state_dict keys', () => {
    using(new TransformerEncoderLayer(8, 2, { dimFeedforward: 16 }), (layer) => {
      expect([...layer.namedChildren()].map(([name]) => name)).toEqual([
        'self_attn',
        'linear1',
        'dropout',
        'linear2',
        'norm1',
        'norm2',
        'dropout1',
        'dropout2',
      ]);
      tidy(() =>
        expect(Object.keys(layer.stateDict())).toEqual([
          'self_attn.in_proj_weight',
          'self_attn.in_proj_bias',
          'self_attn.out_proj.weight',
          'self_attn.out_proj.bias',
          'linear1.weight',
          'linear1.bias',
          'linear2.weight',
          'linear2.bias',
          'norm1.weight',
          'norm1.bias',
          'norm2.weight',
          'norm2.bias',
        ]),
      );
      expect(layer.selfAttn.batchFirst).toBe(false);
      expect(layer.dropout.p).toBe(0.1);
      expect(layer.norm1.eps).toBe(1e-5);
      expect(layer.activation).toBe('relu');
    });
  });

  it('isCausal builds the causal mask when no srcMask is given', () => {
    manualSeed(3);
    using(new TransformerEncoderLayer(8, 2, { dimFeedforward: 16, batchFirst: true }).eval(), (layer) =>
      tidy(() => {
        const x = randn([2, 5, 8]);
        const masked = layer.forward(x, Transformer.generateSquareSubsequentMask(5));
        expect(maxDifference(layer.forward(x, null, null, { isCausal: true }), masked)).toBeLessThan(1e-6);
        expect(maxDifference(layer.forward(x), masked)).toBeGreaterThan(1e-3);
      }),
    );
  });

  it('takes a function as activation', () => {
    const make = (activation: 'gelu' | ((input: Tensor) => Tensor)) => {
      manualSeed(4);
      return new TransformerEncoderLayer(8, 2, { dimFeedforward: 16, activation }).eval();
    };
    using(make('gelu'), (named) =>
      using(
        make((input) => gelu(input)),
        (custom) =>
          tidy(() => {
            const x = randn([4, 2, 8]);
            expect(maxDifference(custom.forward(x), named.forward(x))).toBe(0);
          }),
      ),
    );
  });

  it('runs the benchmark’s stack: 4 layers of 256 features and 4 heads, batch first, in training', () => {
    const template = new TransformerEncoderLayer(256, 4, {
      dimFeedforward: 1024,
      dropout: 0.1,
      batchFirst: true,
    });
    const encoder = new TransformerEncoder(template, 4);
    template.dispose();
    using(encoder, () => {
      const live = liveTensorCount();
      tidy(() => {
        const y = encoder.forward(randn([2, 10, 256]));
        expect(y.shape).toEqual([2, 10, 256]);
        y.square().mean().backward();
      });
      expect(encoder.parameters()).toHaveLength(4 * 12);
      tidy(() => expect(encoder.parameters().every((parameter) => parameter.grad !== null)).toBe(true));
      encoder.zeroGrad();
      expect(liveTensorCount()).toBe(live);
    });
  });
});

describe('layer stacks', () => {
  it('deep-copy the layer: equal values, separate tensors, the template apart', () => {
    const activation = new GELU('tanh');
    const template = new TransformerEncoderLayer(8, 2, { dimFeedforward: 16, activation });
    template.linear1.bias!.requiresGrad_(false);
    const encoder = new TransformerEncoder(template, 3, { norm: new LayerNorm(8) });
    try {
      const layers = [...encoder.layers];
      expect(layers).toHaveLength(3);
      expect(new Set([...layers, template]).size).toBe(4);
      const original = new Map(template.namedParameters());
      for (const layer of layers) {
        expect(layer).toBeInstanceOf(TransformerEncoderLayer);
        expect(layer.dModel).toBe(8);
        expect(layer.activation).not.toBe(activation);
        expect(layer.activation).toBeInstanceOf(GELU);
        // The copied Module activation is the registered child, not a second copy.
        expect([...layer.namedChildren()].find(([name]) => name === 'activation')?.[1]).toBe(
          layer.activation,
        );
        expect(layer.linear1.bias!.requiresGrad).toBe(false);
        for (const [name, parameter] of layer.namedParameters()) {
          expect(parameter).not.toBe(original.get(name));
          expect(maxDifference(parameter, original.get(name)!), name).toBe(0);
        }
      }
      noGrad(() => layers[0]!.linear2.weight.fill_(1));
      expect(maxDifference(layers[1]!.linear2.weight, template.linear2.weight)).toBe(0);
      expect(tidy(() => template.linear2.weight.eq(1).any().item())).toBe(false);
      expect([...encoder.namedChildren()].map(([name]) => name)).toEqual(['layers', 'norm']);
      tidy(() => expect(Object.keys(encoder.stateDict()).at(-1)).toBe('norm.bias'));
    } finally {
      template.dispose();
      encoder.dispose();
    }
  });

  it('copy buffers and keep tied weights tied in a custom layer', () => {
    class TiedLayer extends Module<TransformerEncoderInputs, Tensor> {
      linear = new Linear(8, 8);
      norm = new BatchNorm1d(8);
      tied: Tensor = this.linear.weight;
      forward(src: Tensor): Tensor {
        return tidy(() => this.norm.forward(this.linear.forward(src).matmul(this.tied)));
      }
    }
    const template = new TiedLayer();
    const encoder = new TransformerEncoder(template, 2);
    try {
      const [first, second] = [...encoder.layers] as [TiedLayer, TiedLayer];
      expect(first.tied).toBe(first.linear.weight);
      expect(first.tied).not.toBe(template.tied);
      expect(second.tied).not.toBe(first.tied);
      expect(first.norm.buffers()).toHaveLength(3);
      expect(first.norm.buffers().every((buffer, k) => buffer !== template.norm.buffers()[k])).toBe(true);
      tidy(() => {
        const keys = Object.keys(template.stateDict());
        expect(keys).toContain('norm.running_mean');
        expect(Object.keys(encoder.stateDict())).toEqual([
          ...keys.map((key) => `layers.0.${key}`),
          ...keys.map((key) => `layers.1.${key}`),
        ]);
      });
      tidy(() => expect(encoder.forward(randn([4, 8])).shape).toEqual([4, 8]));
    } finally {
      template.dispose();
      encoder.dispose();
    }
  });

  it('TransformerDecoder passes tgtIsCausal to every layer', () => {
    manualSeed(5);
    const template = new TransformerDecoderLayer(8, 2, { dimFeedforward: 16 });
    const decoder = new TransformerDecoder(template, 2).eval();
    template.dispose();
    using(decoder, () =>
      tidy(() => {
        const tgt = randn([4, 2, 8]);
        const memory = randn([6, 2, 8]);
        const masked = decoder.forward(tgt, memory, Transformer.generateSquareSubsequentMask(4));
        const causal = decoder.forward(tgt, memory, null, null, null, null, { tgtIsCausal: true });
        expect(maxDifference(causal, masked)).toBeLessThan(1e-6);
      }),
    );
  });

  it('TransformerEncoder passes isCausal to every layer', () => {
    manualSeed(6);
    const template = new TransformerEncoderLayer(8, 2, { dimFeedforward: 16 });
    const encoder = new TransformerEncoder(template, 2).eval();
    template.dispose();
    using(encoder, () =>
      tidy(() => {
        const x = randn([5, 2, 8]);
        const masked = encoder.forward(x, Transformer.generateSquareSubsequentMask(5));
        expect(maxDifference(encoder.forward(x, null, null, { isCausal: true }), masked)).toBeLessThan(1e-6);
      }),
    );
  });
});

describe('Transformer', () => {
  it('generateSquareSubsequentMask: 0 on and below the diagonal, -∞ above', () =>
    tidy(() => {
      const mask = Transformer.generateSquareSubsequentMask(3);
      expect(mask.dtype).toBe('float32');
      const inf = Number.NEGATIVE_INFINITY;
      expect(mask.toArray()).toEqual([
        [0, inf, inf],
        [0, 0, inf],
        [0, 0, 0],
      ]);
      expect(Transformer.generateSquareSubsequentMask(2, { dtype: 'float64' }).dtype).toBe('float64');
    }));

  it('takes a custom encoder and keeps the built decoder', () => {
    manualSeed(7);
    const template = new TransformerEncoderLayer(8, 2, { dimFeedforward: 16 });
    const customEncoder = new TransformerEncoder(template, 1);
    template.dispose();
    using(
      new Transformer({ dModel: 8, nhead: 2, numDecoderLayers: 1, dimFeedforward: 16, customEncoder }),
      (model) => {
        expect(model.encoder).toBe(customEncoder);
        expect(model.decoder).toBeInstanceOf(TransformerDecoder);
        tidy(() => expect(model.eval().forward(randn([5, 2, 8]), randn([3, 2, 8])).shape).toEqual([3, 2, 8]));
      },
    );
  });

  it('copies a Module activation into every layer and leaves the caller’s alive', () => {
    const activation = new PReLU();
    try {
      using(
        new Transformer({
          dModel: 8,
          nhead: 2,
          numEncoderLayers: 1,
          numDecoderLayers: 1,
          dimFeedforward: 16,
          activation,
        }),
        (model) =>
          tidy(() => {
            const keys = Object.keys(model.stateDict());
            expect(keys).toContain('encoder.layers.0.activation.weight');
            expect(keys).toContain('decoder.layers.0.activation.weight');
            expect(model.parameters()).not.toContain(activation.weight);
            expect(activation.weight.add(1).item()).toBeCloseTo(1.25, 6);
          }),
      );
    } finally {
      activation.dispose();
    }
  });
});

describe('errors', () => {
  it('names the bad size or option of a layer', () => {
    expect(
      expectFlodlError(() => new TransformerEncoderLayer(10, 3), 'ERR_INVALID_ARGUMENT').message,
    ).toMatchInlineSnapshot(`
        "TransformerEncoderLayer: dModel must be divisible by nhead
          expected: a multiple of nhead = 3
          got: dModel = 10"
      `);
    expect(
      expectFlodlError(
        () => new TransformerEncoderLayer(8, 2, { dim_feedforward: 16 } as never),
        'ERR_INVALID_ARGUMENT',
      ).message,
    ).toMatchInlineSnapshot(`
      "TransformerEncoderLayer: unknown option 'dim_feedforward'; did you mean \`dimFeedforward\`?
        expected: one of dimFeedforward, dropout, activation, layerNormEps, batchFirst, normFirst, dtype, device
        got: dim_feedforward"
    `);
    expect(
      expectFlodlError(
        () => new TransformerDecoderLayer(8, 2, { activation: 'tanh' as never }),
        'ERR_INVALID_ARGUMENT',
      ).message,
    ).toMatchInlineSnapshot(`
      "TransformerDecoderLayer: invalid activation
        expected: 'relu', 'gelu', a function of a Tensor or a Module
        got: "tanh""
    `);
    expectFlodlError(() => new TransformerEncoderLayer(8, 0), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new TransformerEncoderLayer(8.5, 2), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new TransformerEncoderLayer(8, 2, { dropout: 1.5 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new TransformerEncoderLayer(8, 2, { dimFeedforward: 0 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(() => new TransformerEncoderLayer(8, 2, { layerNormEps: -1 }), 'ERR_INVALID_ARGUMENT');
    expectFlodlError(
      () => new TransformerEncoderLayer(8, 2, { batchFirst: 'yes' as never }),
      'ERR_INVALID_ARGUMENT',
    );
    expect(expectFlodlError(() => new Transformer({ dModel: 6, nhead: 4 }), 'ERR_INVALID_ARGUMENT').op).toBe(
      'Transformer',
    );
    expectFlodlError(() => new Transformer({ numEncoderLayers: 0 }), 'ERR_INVALID_ARGUMENT');
  });

  it('rejects a bad layer, layer count or norm of a stack', () => {
    const layer = new TransformerEncoderLayer(8, 2, { dimFeedforward: 16 });
    try {
      expectFlodlError(() => new TransformerEncoder({} as never, 2), 'ERR_INVALID_ARGUMENT');
      expectFlodlError(() => new TransformerEncoder(layer, 0), 'ERR_INVALID_ARGUMENT');
      expectFlodlError(
        () => new TransformerEncoder(layer, 2, { norm: 'layer' as never }),
        'ERR_INVALID_ARGUMENT',
      );
      expectFlodlError(
        () => new TransformerEncoder(layer, 2, { nrom: null } as never),
        'ERR_INVALID_ARGUMENT',
      );
      expectFlodlError(() => new TransformerDecoder({} as never, 2), 'ERR_INVALID_ARGUMENT');
    } finally {
      layer.dispose();
    }
  });

  it('names a wrong input or mask', () => {
    manualSeed(8);
    using(new TransformerEncoderLayer(8, 2, { dimFeedforward: 16, batchFirst: true }), (layer) =>
      tidy(() => {
        expect(
          expectFlodlError(() => layer.forward(randn([2, 3, 4, 8])), 'ERR_SHAPE').message,
        ).toMatchInlineSnapshot(`
            "TransformerEncoderLayer.forward: src has the wrong shape
              expected: (N, S, E) or unbatched (S, E), with E = dModel = 8
              got: [2, 3, 4, 8]"
          `);
        expectFlodlError(() => layer.forward(randn([2, 3, 6])), 'ERR_SHAPE');
        expectFlodlError(() => layer.forward('x' as never), 'ERR_INVALID_ARGUMENT');
        const x = randn([2, 5, 8]);
        expect(
          expectFlodlError(() => layer.forward(x, zeros([5, 4])), 'ERR_SHAPE').message,
        ).toMatchInlineSnapshot(`
          "TransformerEncoderLayer.forward: srcMask has the wrong shape
            expected: (L, S) = [5, 5] or (N·H, L, S) = [4, 5, 5]
            got: [5, 4]"
        `);
        expect(
          expectFlodlError(() => layer.forward(x, zeros([5, 5], { dtype: 'int64' })), 'ERR_DTYPE').message,
        ).toMatchInlineSnapshot(`
          "TransformerEncoderLayer.forward: srcMask must be a bool or floating mask
            expected: bool (true blocks a key) or a floating type (added to the attention scores)
            got: int64"
        `);
        expectFlodlError(() => layer.forward(x, null, zeros([5, 2], { dtype: 'bool' })), 'ERR_SHAPE');
        expectFlodlError(() => layer.forward(x, null, zeros([2, 5], { dtype: 'int32' })), 'ERR_DTYPE');
        expectFlodlError(
          () => layer.forward(x, null, null, { is_causal: true } as never),
          'ERR_INVALID_ARGUMENT',
        );
      }),
    );
  });

  it('names a memory or target that does not match', () => {
    manualSeed(9);
    using(new TransformerDecoderLayer(8, 2, { dimFeedforward: 16 }), (layer) =>
      tidy(() => {
        expect(
          expectFlodlError(() => layer.forward(randn([4, 2, 8]), randn([5, 3, 8])), 'ERR_SHAPE').message,
        ).toMatchInlineSnapshot(`
            "TransformerDecoderLayer.forward: tgt and memory must have the same batch size
              expected: memory: batch 2, as tgt
              got: batch 3"
          `);
        expectFlodlError(
          () => layer.forward(randn([4, 2, 8]), randn([5, 2, 8]), null, zeros([4, 4], { dtype: 'bool' })),
          'ERR_SHAPE',
        );
      }),
    );
    using(
      new Transformer({ dModel: 8, nhead: 2, numEncoderLayers: 1, numDecoderLayers: 1, dimFeedforward: 16 }),
      (model) =>
        tidy(() => {
          expectFlodlError(() => model.forward(randn([5, 2, 8]), randn([3, 4, 8])), 'ERR_SHAPE');
          expectFlodlError(() => model.forward(randn([5, 2, 8]), randn([3, 2, 6])), 'ERR_SHAPE');
        }),
    );
  });

  it('says when a function activation returns no Tensor', () => {
    using(new TransformerEncoderLayer(8, 2, { dimFeedforward: 16, activation: () => 0 as never }), (layer) =>
      tidy(() => {
        expect(
          expectFlodlError(() => layer.forward(randn([3, 8])), 'ERR_INVALID_ARGUMENT').message,
        ).toMatchInlineSnapshot(`
            "TransformerEncoderLayer.forward: the activation must return a Tensor
              expected: a Tensor
              got: 0"
          `);
      }),
    );
  });
});
