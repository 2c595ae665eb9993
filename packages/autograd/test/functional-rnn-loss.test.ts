// The recurrent, attention and loss ops of the functional layer against PyTorch: outputs and
// gradients of every case in test/fixtures/rnn-loss.json (written by
// scripts/make-goldens-rnn-loss.py; regenerate with `pnpm --filter @flodl/autograd run goldens`),
// finite-difference gradient checks, and the argument errors.
import {
  buildInfo,
  FlodlError,
  type FlodlErrorCode,
  liveTensorCount,
  manualSeed,
  randn,
  Tensor,
  tidy,
} from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { F, gradcheck } from '../src/index.js';
import { onDevice } from './helpers/device.js';
import { groupsOf, loadGoldens, runGolden } from './helpers/rnn-loss-goldens.js';

const fixture = loadGoldens();
const startingCount = liveTensorCount();
// Seeded dropout cases replay the masks that libtorch drew when the fixture was written; another
// libtorch version (or 2.x's fused attention) may draw differently, so they run on that one only.
const sameGenerator = buildInfo().torchVersion.startsWith(fixture.meta.torch.slice(0, 4));

describe(`goldens (PyTorch ${fixture.meta.torch})`, () => {
  for (const [group, cases] of groupsOf(fixture.cases)) {
    describe(group, () => {
      for (const golden of cases) {
        const test = golden.seed !== undefined && !sameGenerator ? it.skip : it;
        test(golden.name, () => runGolden(golden));
      }
    });
  }

  it('covers every op of the family', () => {
    const ops = new Set(fixture.cases.map((golden) => golden.op));
    expect([...ops].sort()).toEqual(
      [
        'gru',
        'lstm',
        'gruCell',
        'lstmCell',
        'scaledDotProductAttention',
        'mseLoss',
        'l1Loss',
        'smoothL1Loss',
        'huberLoss',
        'crossEntropy',
        'nllLoss',
        'binaryCrossEntropy',
        'binaryCrossEntropyWithLogits',
        'klDiv',
        'cosineEmbeddingLoss',
        'marginRankingLoss',
        'tripletMarginLoss',
        'ctcLoss',
        'poissonNllLoss',
      ].sort(),
    );
  });
});

// ---------------------------------------------------------------------------------------
// Gradients against finite differences

const double = (shape: number[]): Tensor => randn(shape, { dtype: 'float64' });
const leaf = (shape: number[]): Tensor => double(shape).requiresGrad_(true);
const indices = (values: number[], shape = [values.length]): Tensor =>
  Tensor.from(values, shape, { dtype: 'int64' });
const CHECK = { eps: 1e-6, atol: 1e-5, rtol: 1e-3 };

// A flat weight list for `layers` layers and `directions` directions, every tensor a leaf.
function flatParams(
  gates: number,
  inputSize: number,
  hidden: number,
  layers: number,
  directions: number,
): Tensor[] {
  const params: Tensor[] = [];
  for (let layer = 0; layer < layers; layer++) {
    for (let direction = 0; direction < directions; direction++) {
      const width = layer === 0 ? inputSize : directions * hidden;
      params.push(
        leaf([gates * hidden, width]),
        leaf([gates * hidden, hidden]),
        leaf([gates * hidden]),
        leaf([gates * hidden]),
      );
    }
  }
  return params;
}

type Check = () => [(...inputs: Tensor[]) => Tensor | Tensor[], Tensor[]];

const GRADCHECKS: Record<string, Check> = {
  'gru, 2 layers bidirectional batchFirst': () => [
    (input, h0, ...params) => {
      const { output, hN } = F.gru(input!, h0, params, {
        numLayers: 2,
        bidirectional: true,
        batchFirst: true,
      });
      return [output, hN];
    },
    [leaf([2, 2, 2]), leaf([4, 2, 2]), ...flatParams(3, 2, 2, 2, 2)],
  ],
  'lstm, 2 layers, unbatched': () => [
    (input, h0, c0, ...params) => {
      const { output, hN, cN } = F.lstm(input!, [h0!, c0!], params, { numLayers: 2 });
      return [output, hN, cN];
    },
    [leaf([3, 2]), leaf([2, 2]), leaf([2, 2]), ...flatParams(4, 2, 2, 2, 1)],
  ],
  gruCell: () => [
    (x, h, ...w) => F.gruCell(x!, h, w[0]!, w[1]!, w[2], w[3]),
    [leaf([2, 3]), leaf([2, 2]), leaf([6, 3]), leaf([6, 2]), leaf([6]), leaf([6])],
  ],
  lstmCell: () => [
    (x, h, c, ...w) => {
      const next = F.lstmCell(x!, [h!, c!], w[0]!, w[1]!, w[2], w[3]);
      return [next.h, next.c];
    },
    [leaf([2, 3]), leaf([2, 2]), leaf([2, 2]), leaf([8, 3]), leaf([8, 2]), leaf([8]), leaf([8])],
  ],
  'scaledDotProductAttention, causal': () => [
    (q, k, v) => F.scaledDotProductAttention(q!, k!, v!, { isCausal: true }),
    [leaf([1, 3, 2]), leaf([1, 4, 2]), leaf([1, 4, 2])],
  ],
  'scaledDotProductAttention, float mask and scale': () => {
    const mask = double([3, 3]);
    return [
      (q, k, v) => F.scaledDotProductAttention(q!, k!, v!, { attnMask: mask, scale: 0.7 }),
      [leaf([3, 2]), leaf([3, 2]), leaf([3, 2])],
    ];
  },
  mseLoss: () => [(x, y) => F.mseLoss(x!, y!, { reduction: 'none' }), [leaf([2, 3]), leaf([2, 3])]],
  l1Loss: () => [(x, y) => F.l1Loss(x!, y!), [leaf([2, 3]), leaf([2, 3])]],
  smoothL1Loss: () => [
    (x, y) => F.smoothL1Loss(x!, y!, { beta: 0.5, reduction: 'none' }),
    [leaf([2, 3]), leaf([2, 3])],
  ],
  huberLoss: () => [
    (x, y) => F.huberLoss(x!, y!, { delta: 0.5, reduction: 'sum' }),
    [leaf([2, 3]), leaf([2, 3])],
  ],
  'crossEntropy, class indices': () => {
    const weight = double([3]).abs();
    return [(x) => F.crossEntropy(x!, indices([2, 0, 1]), { labelSmoothing: 0.1, weight }), [leaf([3, 3])]];
  },
  'crossEntropy, probabilities': () => [
    (x, y) => F.crossEntropy(x!, y!.softmax(1)),
    [leaf([2, 3]), leaf([2, 3])],
  ],
  nllLoss: () => [
    (x) => F.nllLoss(x!, indices([1, 0, 1, 2], [2, 2]), { reduction: 'none' }),
    [leaf([2, 3, 2])],
  ],
  binaryCrossEntropy: () => {
    const target = double([2, 3]).sigmoid();
    return [(x) => F.binaryCrossEntropy(x!.sigmoid(), target), [leaf([2, 3])]];
  },
  binaryCrossEntropyWithLogits: () => {
    const posWeight = double([3]).abs();
    return [
      (x, y) => F.binaryCrossEntropyWithLogits(x!, y!.sigmoid(), { posWeight }),
      [leaf([2, 3]), leaf([2, 3])],
    ];
  },
  klDiv: () => [
    (x, y) => F.klDiv(x!.logSoftmax(1), y!, { reduction: 'batchmean', logTarget: true }),
    [leaf([2, 3]), leaf([2, 3])],
  ],
  cosineEmbeddingLoss: () => [
    (a, b) =>
      F.cosineEmbeddingLoss(a!, b!, Tensor.from([1, -1, 1], [3], { dtype: 'float64' }), {
        reduction: 'none',
      }),
    [leaf([3, 2]), leaf([3, 2])],
  ],
  marginRankingLoss: () => [
    (a, b) =>
      F.marginRankingLoss(a!, b!, Tensor.from([1, -1, 1], [3], { dtype: 'float64' }), {
        margin: 0.1,
        reduction: 'none',
      }),
    [leaf([3]), leaf([3])],
  ],
  tripletMarginLoss: () => [
    (a, p, n) => F.tripletMarginLoss(a!, p!, n!, { margin: 3, swap: true, reduction: 'none' }),
    [leaf([2, 3]), leaf([2, 3]), leaf([2, 3])],
  ],
  // libtorch's CTC gradient assumes normalized log-probabilities, so differentiate through logSoftmax.
  ctcLoss: () => [
    (x) => F.ctcLoss(x!.logSoftmax(2), indices([1, 2, 2, 0], [2, 2]), [4, 3], [2, 1], { reduction: 'sum' }),
    [leaf([4, 2, 3])],
  ],
  poissonNllLoss: () => [
    (x, y) => F.poissonNllLoss(x!, y!.abs(), { full: true, reduction: 'none' }),
    [leaf([2, 3]), leaf([2, 3])],
  ],
};

describe('gradcheck (float64 finite differences)', () => {
  for (const [name, check] of Object.entries(GRADCHECKS)) {
    it(name, () => {
      tidy(() => {
        manualSeed(3);
        const [fn, inputs] = check();
        expect(gradcheck(fn, inputs, CHECK)).toBe(true);
      });
    });
  }
});

// ---------------------------------------------------------------------------------------
// Argument errors

function codeOf(fn: () => unknown): FlodlErrorCode | 'no error' | 'not a FlodlError' {
  try {
    tidy(() => {
      fn();
    });
  } catch (error) {
    return FlodlError.isInstance(error) ? error.code : 'not a FlodlError';
  }
  return 'no error';
}

describe('argument errors', () => {
  const x = () => double([2, 3]);
  const classes = () => indices([0, 2]);

  it('rejects targets that do not fit the input', () => {
    expect(codeOf(() => F.mseLoss(x(), double([3, 2])))).toBe('ERR_SHAPE');
    expect(codeOf(() => F.binaryCrossEntropy(x().sigmoid(), double([2, 1]).sigmoid()))).toBe('ERR_SHAPE');
    expect(codeOf(() => F.crossEntropy(x(), indices([0, 1, 2])))).toBe('ERR_SHAPE');
    expect(codeOf(() => F.crossEntropy(x(), double([2, 4])))).toBe('ERR_SHAPE');
    expect(codeOf(() => F.nllLoss(x(), classes(), { weight: double([4]) }))).toBe('ERR_SHAPE');
    expect(codeOf(() => F.cosineEmbeddingLoss(x(), double([2, 4]), classes()))).toBe('ERR_SHAPE');
    expect(codeOf(() => F.marginRankingLoss(double([3]), double([3]), double([3, 1])))).toBe('ERR_SHAPE');
    expect(codeOf(() => F.tripletMarginLoss(x(), x(), double([3])))).toBe('ERR_SHAPE');
    expect(codeOf(() => F.ctcLoss(double([4, 2, 3]), indices([1, 2], [2, 1]), [4], [1, 1]))).toBe(
      'ERR_SHAPE',
    );
  });

  it('rejects targets of the wrong dtype', () => {
    expect(codeOf(() => F.crossEntropy(x(), Tensor.from([0, 2], [2], { dtype: 'int32' })))).toBe('ERR_DTYPE');
    expect(codeOf(() => F.nllLoss(x(), double([2])))).toBe('ERR_DTYPE');
    expect(codeOf(() => F.mseLoss(indices([1, 2]), double([2])))).toBe('ERR_DTYPE');
    expect(codeOf(() => F.ctcLoss(double([4, 1, 3]), double([1, 1]), [4], [1]))).toBe('ERR_DTYPE');
    expect(codeOf(() => F.crossEntropy(x(), x().float()))).toBe('ERR_DTYPE');
  });

  it('rejects bad reductions and misspelled options', () => {
    expect(codeOf(() => F.mseLoss(x(), x(), { reduction: 'avg' as 'mean' }))).toBe('ERR_INVALID_ARGUMENT');
    expect(codeOf(() => F.l1Loss(x(), x(), { reduction: 'batchmean' as 'mean' }))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    expect(codeOf(() => F.crossEntropy(x(), classes(), { labelSmoothng: 0.1 } as object))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    expect(codeOf(() => F.crossEntropy(x(), classes(), { labelSmoothing: 1.5 }))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    expect(codeOf(() => F.crossEntropy(x(), x().softmax(1), { ignoreIndex: 0 }))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    expect(codeOf(() => F.huberLoss(x(), x(), { delta: 0 }))).toBe('ERR_INVALID_ARGUMENT');
    expect(codeOf(() => F.ctcLoss(double([4, 1, 3]), indices([1], [1, 1]), [4], [1], { blank: 3 }))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    expect(codeOf(() => F.ctcLoss(double([4, 1, 3]), indices([1], [1, 1]), [5], [1]))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    expect(codeOf(() => F.scaledDotProductAttention(x(), x(), x(), { dropout: 0.1 } as object))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    expect(codeOf(() => F.gru(double([3, 2, 2]), undefined, [], { batch_first: true } as object))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    expect(codeOf(() => F.mseLoss(x(), 'target' as unknown as Tensor))).toBe('ERR_INVALID_ARGUMENT');
  });

  it('pins the message of an unknown option and of a shape mismatch', () => {
    expect(() =>
      tidy(() => F.mseLoss(x(), x(), { reduce: 'sum' } as object)),
    ).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: mseLoss: unknown option 'reduce'
        expected: one of reduction
        got: reduce]
    `);
    expect(() => tidy(() => F.crossEntropy(x(), indices([0, 1, 2])))).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: crossEntropy: target has the wrong shape
        expected: [2]
        got: [3]]
    `);
  });

  it('checks the weights and states of recurrent ops', () => {
    const input = () => double([3, 2, 4]);
    expect(codeOf(() => F.gru(input(), undefined, flatParams(3, 4, 2, 1, 1).slice(0, 3)))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    expect(codeOf(() => F.gru(input(), undefined, flatParams(3, 5, 2, 1, 1)))).toBe('ERR_SHAPE');
    expect(codeOf(() => F.gru(input(), double([1, 3, 2]), flatParams(3, 4, 2, 1, 1)))).toBe('ERR_SHAPE');
    expect(codeOf(() => F.gru(input(), undefined, flatParams(3, 4, 2, 1, 1), { numLayers: 0 }))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    expect(codeOf(() => F.gru(input().float(), undefined, flatParams(3, 4, 2, 1, 1)))).toBe('ERR_DTYPE');
    expect(codeOf(() => F.lstm(input(), undefined, flatParams(3, 4, 2, 1, 1)))).toBe('ERR_SHAPE');
    expect(
      codeOf(() =>
        F.lstm(input(), [double([1, 2, 2])] as unknown as [Tensor, Tensor], flatParams(4, 4, 2, 1, 1)),
      ),
    ).toBe('ERR_INVALID_ARGUMENT');
    expect(codeOf(() => F.lstm(double([3, 2, 4, 1]), undefined, flatParams(4, 4, 2, 1, 1)))).toBe(
      'ERR_SHAPE',
    );
    expect(codeOf(() => F.gruCell(double([2, 3]), undefined, double([6, 4]), double([6, 2])))).toBe(
      'ERR_SHAPE',
    );
    expect(
      codeOf(() =>
        F.lstmCell(double([2, 3]), [double([2, 2]), double([3, 2])], double([8, 3]), double([8, 2])),
      ),
    ).toBe('ERR_SHAPE');
    expect(
      codeOf(() => F.gruCell(double([2, 3]), undefined, double([6, 3]), double([6, 2]), double([5]))),
    ).toBe('ERR_SHAPE');
  });

  it('checks attention shapes, dtypes and masks', () => {
    const q = () => double([2, 3, 4]);
    expect(codeOf(() => F.scaledDotProductAttention(q(), double([2, 5, 3]), double([2, 5, 4])))).toBe(
      'ERR_SHAPE',
    );
    expect(codeOf(() => F.scaledDotProductAttention(q(), double([2, 5, 4]), double([2, 4, 4])))).toBe(
      'ERR_SHAPE',
    );
    expect(codeOf(() => F.scaledDotProductAttention(q(), q(), q(), { attnMask: double([4, 3]) }))).toBe(
      'ERR_SHAPE',
    );
    expect(codeOf(() => F.scaledDotProductAttention(q(), q().float(), q()))).toBe('ERR_DTYPE');
    expect(codeOf(() => F.scaledDotProductAttention(indices([1, 2], [1, 2]), q(), q()))).toBe('ERR_DTYPE');
    const mask = () => Tensor.from([true, false, true], [1, 3]);
    expect(
      codeOf(() => F.scaledDotProductAttention(q(), q(), q(), { attnMask: mask(), isCausal: true })),
    ).toBe('ERR_INVALID_ARGUMENT');
    expect(codeOf(() => F.scaledDotProductAttention(q(), q(), q(), { dropoutP: 1.5 }))).toBe(
      'ERR_INVALID_ARGUMENT',
    );
  });

  // On CUDA these inputs trip device-side asserts instead (as in PyTorch), which end the CUDA context.
  it.skipIf(onDevice)('passes libtorch refusals on as FlodlErrors', () => {
    expect(codeOf(() => F.crossEntropy(x(), indices([0, 7])))).toBe('ERR_INVALID_ARGUMENT');
    expect(codeOf(() => F.nllLoss(x(), indices([-1, 0])))).toBe('ERR_INVALID_ARGUMENT');
    expect(codeOf(() => F.binaryCrossEntropy(x().add(2), x().sigmoid()))).toBe('ERR_NATIVE');
  });
});

describe('behaviour', () => {
  it('gives the zero state when the initial state is absent', () => {
    tidy(() => {
      const input = double([3, 2, 4]);
      const params = flatParams(4, 4, 2, 1, 1);
      const zero = double([1, 2, 2]).mul(0);
      const absent = F.lstm(input, undefined, params);
      const given = F.lstm(input, [zero, zero], params);
      expect(absent.output.allclose(given.output)).toBe(true);
      expect(absent.cN.allclose(given.cN)).toBe(true);
    });
  });

  it('keeps class weights from changing the probability-target mean divisor', () => {
    tidy(() => {
      const input = double([3, 4]);
      const target = double([3, 4]).softmax(1);
      const sum = F.crossEntropy(input, target, { reduction: 'sum' });
      expect(F.crossEntropy(input, target).allclose(sum.div(3))).toBe(true);
    });
  });

  it('frees every tensor the tests created', () => {
    expect(liveTensorCount()).toBe(startingCount);
  });
});
