import { liveTensorCount, Tensor, tidy, zeros } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { Batch } from '../src/data/index.js';

describe('Batch', () => {
  it('gives positional and named access', () => {
    const images = zeros([4, 1, 2, 2]);
    const labels = zeros([4], { dtype: 'int64' });
    const batch = new Batch([images, labels], ['image', 'label']);
    expect(batch[0]).toBe(images);
    expect(batch[1]).toBe(labels);
    expect(batch.at(-1)).toBe(labels);
    expect(batch.get('image')).toBe(images);
    expect(batch.has('label')).toBe(true);
    expect(batch.length).toBe(2);
    expect(batch.size).toBe(4);
    const [first, second] = batch;
    expect([first, second]).toEqual([images, labels]);
    expect(String(batch)).toContain('image: Tensor(shape=[4, 1, 2, 2]');
    batch.dispose();
  });

  it('names positions "0", "1", … by default', () => {
    const batch = new Batch([zeros([2]), zeros([2])]);
    expect(batch.names).toEqual(['0', '1']);
    expect(batch.get('1')).toBe(batch[1]);
    batch.dispose();
  });

  it('explains unknown names and positions', () => {
    const batch = new Batch([zeros([2])], ['x']);
    expect(() => batch.get('y')).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: Batch.get: the batch has no tensor named "y"
        expected: one of "x"
        got: "y"]
    `);
    expect(() => batch.at(1)).toThrow(/position/);
    expect(() => new Batch([zeros([1])], ['a', 'b'])).toThrow(/one name per tensor/);
    expect(() => new Batch([zeros([1]), zeros([1])], ['a', 'a'])).toThrow(/distinct/);
    expect(() => new Batch([])).toThrow(/non-empty/);
    batch.dispose();
  });

  it('disposes its tensors (dispose, using) and shows them to tidy', () => {
    const before = liveTensorCount();
    const batch = new Batch([zeros([3]), zeros([3])]);
    batch.dispose();
    batch.dispose();
    expect(batch.isDisposed).toBe(true);
    {
      using scoped = new Batch([zeros([3])]);
      expect(scoped.isDisposed).toBe(false);
    }
    const survivor = tidy(() => new Batch([Tensor.from([1, 2, 3])]));
    expect(survivor.isDisposed).toBe(false);
    survivor.dispose();
    expect(liveTensorCount()).toBe(before);
  });
});
