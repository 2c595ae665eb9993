// Misspelled options of the checks that keep their own list of keys: each names the key,
// suggests the closest known one (tensor-native's unknownOptionError) and lists them all.
import { keep, zeros } from '@flodl/tensor-native';
import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { autocast, CapturedStep, clipGradNorm_, focalLoss, SGD } from '../src/index.js';

describe('misspelled options get a suggestion', () => {
  it('clipGradNorm_, autocast, focalLoss and CapturedStep', () => {
    const weight = keep(zeros([2]).requiresGrad_());
    expect(
      caught(() => clipGradNorm_([weight], 1, 2, { errorIfNonFinite: true } as never)).message,
    ).toMatchInlineSnapshot(`
        "clipGradNorm_: unknown option 'errorIfNonFinite'; did you mean \`errorIfNonfinite\`?
          expected: one of errorIfNonfinite
          got: errorIfNonFinite"
      `);
    expect(
      caught(() => autocast('bfloat16', () => 0, { enable: false } as never)).message,
    ).toMatchInlineSnapshot(`
      "autocast: unknown option 'enable'; did you mean \`enabled\`?
        expected: one of device, enabled
        got: enable"
    `);
    expect(caught(() => focalLoss(weight, weight, { gama: 2 } as never)).message).toMatchInlineSnapshot(`
      "focalLoss: unknown option 'gama'; did you mean \`gamma\`?
        expected: one of alpha, gamma, reduction
        got: gama"
    `);
    const optimizer = new SGD([weight], { lr: 0.1 });
    expect(
      caught(() => new CapturedStep(optimizer, () => weight.sum(), { warmUp: 2 } as never)).message,
    ).toMatchInlineSnapshot(`
        "CapturedStep: unknown option 'warmUp'; did you mean \`warmup\`?
          expected: one of warmup, maxGradNorm, captureErrorMode, otherShapes
          got: warmUp"
      `);
    expect(caught(() => focalLoss(weight, weight, { weights: 2 } as never)).code).toBe(
      'ERR_INVALID_ARGUMENT',
    );
    optimizer.dispose();
    weight.dispose();
  });
});
