import { arange, liveTensorCount, Tensor, zeros } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { TensorDataset } from '../src/data/index.js';

describe('TensorDataset', () => {
  it('serves samples as views and batches with indexSelect', () => {
    const x = arange(12, { dtype: 'float32' }).reshape(6, 2);
    const y = arange(6, { dtype: 'int64' });
    const data = new TensorDataset([x, y]);
    expect(data.length).toBe(6);
    expect(data.names).toEqual(['0', '1']);
    const [row, label] = data.get(4);
    expect(row!.toArray()).toEqual([8, 9]);
    expect(label!.item()).toBe(4);
    const [rows, labels] = data.getBatch([5, 0, 5]);
    expect(rows!.toArray()).toEqual([
      [10, 11],
      [0, 1],
      [10, 11],
    ]);
    expect(labels!.toArray()).toEqual([5, 0, 5]);
    for (const tensor of [row, label, rows, labels, x, y]) tensor!.dispose();
    data.dispose();
  });

  it('takes names from a record', () => {
    const data = new TensorDataset({ image: zeros([3, 2]), label: zeros([3], { dtype: 'int64' }) });
    expect(data.names).toEqual(['image', 'label']);
    expect(String(data)).toContain('TensorDataset(length=3, image: Tensor(shape=[3, 2]');
    data.dispose();
  });

  it('holds its own handles: the caller may dispose the tensors it passed', () => {
    const before = liveTensorCount();
    const x = Tensor.from([1, 2, 3], [3], { dtype: 'float32' });
    const data = new TensorDataset([x]);
    x.dispose();
    const [batch] = data.getBatch([2]);
    expect(batch!.toArray()).toEqual([3]);
    batch!.dispose();
    data.dispose();
    expect(() => data.getBatch([0])).toThrow(/disposed/);
    expect(liveTensorCount()).toBe(before);
  });

  it('rejects mismatched lengths, 0-d tensors and bad indices', () => {
    const a = zeros([4, 2]);
    const b = zeros([5]);
    const scalar = Tensor.from(1);
    expect(() => new TensorDataset({ a, b })).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: TensorDataset: every tensor needs the same size in dim 0 (the sample dimension)
        expected: 4 rows, as a has
        got: 5 rows in b ([5])]
    `);
    expect(() => new TensorDataset([scalar])).toThrow(/first \(sample\) dimension/);
    expect(() => new TensorDataset([])).toThrow(/at least one Tensor/);
    expect(() => new TensorDataset([a], { names: ['x', 'y'] })).toThrow(/one name per tensor/);
    const data = new TensorDataset([a]);
    expect(() => data.getBatch([0, 4])).toThrowErrorMatchingInlineSnapshot(`
      [FlodlError: TensorDataset.getBatch: indices[1] is out of range
        expected: an integer index in [0, 4)
        got: 4]
    `);
    expect(() => data.get(-1)).toThrow(/out of range/);
    for (const tensor of [a, b, scalar]) tensor.dispose();
    data.dispose();
  });
});
