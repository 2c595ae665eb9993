// The sample order of the first epochs of a loader over 0..length-1 (shared by both threads).
import { arange } from '@flodl/tensor-native';
import { DataLoader, TensorDataset } from '../../src/data/index.js';

export function epochOrder(plan: {
  length: number;
  batchSize: number;
  seed: number;
  epochs: number;
}): number[] {
  const values = arange(plan.length, { dtype: 'int64' });
  const data = new TensorDataset([values]);
  values.dispose();
  const loader = new DataLoader(data, { batchSize: plan.batchSize, seed: plan.seed });
  const order: number[] = [];
  for (let epoch = 0; epoch < plan.epochs; epoch++) {
    for (using batch of loader.epoch(epoch)) order.push(...(batch[0]!.toArray() as number[]));
  }
  loader.dispose();
  data.dispose();
  return order;
}
