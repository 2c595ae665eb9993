// What a Trainer rank announces to the coordinator about chunk lookahead: 3 batches by default
// in the CPU backend's chunked modes, the option's value when set, nothing otherwise.
import { mseLoss } from '@flodl/autograd';
import type { LaunchMode } from '@flodl/distributed';
import { Linear, SGD } from '@flodl/nn';
import { manualSeed, randn } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { TensorDataset } from '../src/data/index.js';
import { Trainer } from '../src/index.js';
import { runSettingsFor } from '../src/trainer/rank-entry.js';

function announced(mode: LaunchMode, lookaheadBatches?: number): number | undefined {
  manualSeed(1);
  const data = new TensorDataset([randn([16, 2]), randn([16, 1])]);
  const builder = Trainer.builder(
    () => new Linear(2, 1),
    (params) => new SGD(params, { lr: 0.1 }),
    (model, batch) => mseLoss(model.forward(batch.at(0)), batch.at(1)),
  )
    .dataset(data)
    .batchSize(4)
    .numEpochs(1)
    .devices(['cpu', 'cpu'])
    .mode(mode);
  if (lookaheadBatches !== undefined) builder.lookaheadBatches(lookaheadBatches);
  const spec = builder.resolveSpec();
  const model = spec.modelFactory('cpu');
  try {
    return runSettingsFor(spec, model).lookaheadBatches;
  } finally {
    for (const parameter of model.parameters()) parameter.dispose();
    data.dispose();
  }
}

describe('a Trainer rank announces its chunk lookahead', () => {
  it('3 in CpuCadence and CpuAsync by default, the option where set (0: one chunk in flight)', () => {
    expect(announced('CpuCadence')).toBe(3);
    expect(announced('CpuAsync')).toBe(3);
    expect(announced('CpuCadence', 0)).toBe(0);
    expect(announced('CpuAsync', 5)).toBe(5);
  });

  it('none in the modes without chunks (0 accepted there), nor by default in NcclCadence', () => {
    expect(announced('CpuSync')).toBeUndefined();
    expect(announced('CpuSync', 0)).toBe(0);
    expect(announced('NcclCadence')).toBeUndefined();
    expect(announced('NcclCadence', 2)).toBe(2);
  });
});
