import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { checkBoolean, checkOneOf, checkOptions, ones, tidy } from '../src/index.js';

describe('argument checks for packages built on this one', () => {
  it('checkOptions returns the options ({} when absent) and names an unknown key', () => {
    const options = { dim: 1 };
    expect(checkOptions('softmax', options, ['dim'])).toBe(options);
    expect(checkOptions('softmax', undefined, ['dim'])).toEqual({});
    expect(
      caught(() => checkOptions('softmax', { dims: 1 } as never, ['dim'])).message,
    ).toMatchInlineSnapshot(`
      "softmax: unknown option 'dims'; did you mean \`dim\`?
        expected: one of dim
        got: dims"
    `);
    expect(caught(() => checkOptions('relu', { inplace: true } as never, [])).message).toContain(
      'expected: no options',
    );
  });

  it('checkOptions refuses anything but a plain object: a Tensor, an array, a class instance, null', () =>
    tidy(() => {
      for (const value of [ones([1]), [1], new Map(), null, 3]) {
        const error = caught(() => checkOptions('op', value as never, ['dim']));
        expect(error.code).toBe('ERR_INVALID_ARGUMENT');
        expect(error.message).toContain('an options object');
      }
      expect(checkOptions('op', Object.create(null) as object, [])).toEqual({});
    }));

  it('checkBoolean takes a fallback for undefined only when one is given', () => {
    expect(checkBoolean('sum', 'keepdim', undefined, false)).toBe(false);
    expect(checkBoolean('sum', 'keepdim', true)).toBe(true);
    expect(caught(() => checkBoolean('sum', 'keepdim', undefined)).message).toContain('a boolean');
    expect(caught(() => checkBoolean('sum', 'keepdim', 1, false)).code).toBe('ERR_INVALID_ARGUMENT');
  });

  it('checkOneOf lists what is allowed', () => {
    expect(checkOneOf('pad', 'mode', 'reflect', ['constant', 'reflect'])).toBe('reflect');
    expect(caught(() => checkOneOf('pad', 'mode', 'wrap', ['constant', 'reflect'])).message).toContain(
      "one of 'constant', 'reflect'",
    );
  });
});
