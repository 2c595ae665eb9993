import { FlodlError, keep, liveTensorCount, Tensor, tidy, zeros } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { clipGradNorm, clipGradNorm_, clipGradValue, clipGradValue_ } from '../src/index.js';
import { onDevice, readFixture } from './golden.js';

interface Encoded {
  shape: number[];
  data: number[];
}
type ClipCase =
  | { kind: 'norm'; maxNorm: number; normType: number | 'inf'; totalNorm: number; clipped: Encoded[] }
  | { kind: 'value'; clipValue: number; clipped: Encoded[] };

const fixture = (
  readFixture('optim.json') as {
    clip: { grads: Encoded[]; cases: ClipCase[] };
  }
).clip;

/** Parameters (zeros) whose gradients are the fixture's, plus one without a gradient. */
function withGradients(): Tensor[] {
  const params = fixture.grads.map((grad) => {
    const param = keep(zeros(grad.shape, { dtype: 'float64' }).requiresGrad_());
    tidy(() => param.setGrad(Tensor.from(Float64Array.from(grad.data), grad.shape)));
    return param;
  });
  params.push(keep(zeros([3], { dtype: 'float64' }).requiresGrad_()));
  return params;
}

function gradientValues(param: Tensor): number[] {
  return tidy(() => Array.from(param.grad!.toTypedArray() as Float64Array));
}

// Bit for bit on the CPU; on CUDA the p-norm's reduction order differs, so to the last few ulps.
function expectSame(actual: number[], expected: number[], label: string): void {
  actual.forEach((value, k) => {
    if (onDevice) expect(value, `${label}[${k}]`).toBeCloseTo(expected[k]!, 12);
    else expect(value, `${label}[${k}]`).toBe(expected[k]);
  });
}

function disposeAll(tensors: Tensor[]): void {
  for (const tensor of tensors) tensor.dispose();
}

describe('clipGradNorm_ against PyTorch (bit for bit)', () => {
  const cases = fixture.cases.filter((testCase) => testCase.kind === 'norm');
  it.each(
    cases.map((testCase) => [`p=${testCase.normType}, maxNorm=${testCase.maxNorm}`, testCase] as const),
  )('%s', (_label, testCase) => {
    const params = withGradients();
    const normType = testCase.normType === 'inf' ? Number.POSITIVE_INFINITY : testCase.normType;
    const total = clipGradNorm_(params, testCase.maxNorm, normType);
    expectSame([total], [testCase.totalNorm], 'total norm');
    testCase.clipped.forEach((expected, k) => {
      expectSame(gradientValues(params[k]!), expected.data, `grad ${k}`);
    });
    expect(params[3]!.grad).toBeNull();
    disposeAll(params);
  });

  it("accepts 'inf' and a single tensor, and returns 0 without gradients", () => {
    const params = withGradients();
    const infinity = fixture.cases.find(
      (testCase) => testCase.kind === 'norm' && testCase.normType === 'inf' && testCase.maxNorm === 100,
    ) as { totalNorm: number };
    expect(clipGradNorm_(params, 100, 'inf')).toBe(infinity.totalNorm);
    expect(clipGradNorm_(params[3]!, 1)).toBe(0);
    expect(clipGradNorm_([], 1)).toBe(0);
    disposeAll(params);
  });

  it('throws on a non-finite norm only when asked to', () => {
    const params = withGradients();
    tidy(() => params[0]!.setGrad(params[0]!.detach().add(Number.NaN)));
    const error = (() => {
      try {
        clipGradNorm_(params, 1, 2, { errorIfNonfinite: true });
      } catch (caught) {
        return caught as FlodlError;
      }
      return null;
    })();
    expect(FlodlError.isInstance(error) && error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(Number.isNaN(clipGradNorm_(params, 1))).toBe(true);
    disposeAll(params);
  });

  it('rejects bad arguments', () => {
    const params = withGradients();
    for (const run of [
      () => clipGradNorm_(params, -1),
      () => clipGradNorm_(params, Number.NaN),
      () => clipGradNorm_(params, 1, Number.NaN),
      () => clipGradNorm_([params[0]!, 3 as unknown as Tensor], 1),
      () => clipGradNorm_(params, 1, 2, { errorIfNonFinite: true } as object),
      () => clipGradValue_(params, -0.5),
      () => clipGradValue_(42 as unknown as Tensor, 0.5),
    ]) {
      expect(run).toThrow(FlodlError);
    }
    disposeAll(params);
  });

  it('frees its temporaries', () => {
    const params = withGradients();
    const before = liveTensorCount();
    for (let k = 0; k < 100; k++) {
      clipGradNorm_(params, 0.5);
      clipGradNorm_(params, 0.5, 'inf');
      clipGradValue_(params, 0.1);
    }
    expect(liveTensorCount()).toBe(before);
    disposeAll(params);
  });
});

describe('clipGradValue_ against PyTorch', () => {
  const cases = fixture.cases.filter((testCase) => testCase.kind === 'value');
  it.each(cases.map((testCase) => [testCase.clipValue, testCase] as const))(
    'clipValue=%s',
    (_value, testCase) => {
      const params = withGradients();
      clipGradValue_(params, testCase.clipValue);
      testCase.clipped.forEach((expected, k) => {
        expect(gradientValues(params[k]!)).toEqual(expected.data);
      });
      expect(params[3]!.grad).toBeNull();
      disposeAll(params);
    },
  );
});

describe('the deprecated names', () => {
  it('clipGradNorm and clipGradValue are the underscore functions', () => {
    expect(clipGradNorm).toBe(clipGradNorm_);
    expect(clipGradValue).toBe(clipGradValue_);
  });
});
