import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { checkOptions, closestName, didYouMean, unknownOptionError } from '../src/index.js';

describe('did you mean: suggestions for misspelled option names', () => {
  const adam = ['lr', 'betas', 'eps', 'weightDecay', 'amsgrad', 'maximize', 'foreach', 'fused'];

  it('suggests the known name within edit distance 2', () => {
    expect(closestName('weightdecay', adam)).toBe('weightDecay'); // one substitution
    expect(closestName('wieghtDecay', adam)).toBe('weightDecay'); // one swap
    expect(closestName('weightDecy', adam)).toBe('weightDecay'); // one deletion
    expect(closestName('weihtDecy', adam)).toBe('weightDecay'); // two deletions
    expect(closestName('amsgrd', adam)).toBe('amsgrad');
    expect(closestName('beta', adam)).toBe('betas');
  });

  it("takes PyTorch's snake_case for the camelCase name", () => {
    expect(closestName('weight_decay', adam)).toBe('weightDecay');
    expect(closestName('max_grad_norm', ['maxGradNorm', 'batchSize'])).toBe('maxGradNorm');
    expect(closestName('label_smoothing', ['weight', 'labelSmoothing'])).toBe('labelSmoothing');
  });

  it('suggests nothing past distance 2, nor for names shorter than their distance', () => {
    expect(closestName('learningRate', adam)).toBeUndefined();
    expect(closestName('decay', adam)).toBeUndefined();
    expect(closestName('x', ['lr'])).toBeUndefined();
    expect(closestName('', ['lr'])).toBeUndefined();
    expect(closestName('lr', [])).toBeUndefined();
  });

  it('prefers the nearest name, then the one listed first', () => {
    expect(closestName('stat', ['start', 'state'])).toBe('start');
    expect(closestName('stat', ['state', 'start'])).toBe('state');
    expect(closestName('states', ['start', 'state'])).toBe('state');
  });

  it('didYouMean is the suffix of the message, empty without a suggestion', () => {
    expect(didYouMean('weightdecay', adam)).toBe('; did you mean `weightDecay`?');
    expect(didYouMean('learningRate', adam)).toBe('');
  });

  it('pins the unknown-option message with and without a suggestion', () => {
    expect(
      unknownOptionError('Adam', 'weightdecay', adam, { where: 'options' }).message,
    ).toMatchInlineSnapshot(`
        "Adam: unknown option 'weightdecay' in options; did you mean \`weightDecay\`?
          expected: one of lr, betas, eps, weightDecay, amsgrad, maximize, foreach, fused
          got: weightdecay"
      `);
    expect(unknownOptionError('Adam', 'learningRate', adam).message).toMatchInlineSnapshot(`
      "Adam: unknown option 'learningRate'
        expected: one of lr, betas, eps, weightDecay, amsgrad, maximize, foreach, fused
        got: learningRate"
    `);
    expect(unknownOptionError('Adam', 'lrr', adam, { code: 'ERR_CHECKPOINT' }).code).toBe('ERR_CHECKPOINT');
    expect(caught(() => checkOptions('relu', { inplace: true } as never, [])).message).toMatchInlineSnapshot(`
      "relu: unknown option 'inplace'
        expected: no options
        got: inplace"
    `);
  });
});
