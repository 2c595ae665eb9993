// Misspelled options of the launcher and the coordinator get the closest known name suggested
// (tensor-native's didYouMean); a name far from every known one lists them as before.
import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { resolveCoordinatorConfig } from '../src/coordinator/index.js';
import { resolveLaunchOptions } from '../src/launcher/index.js';

describe('misspelled options get a suggestion', () => {
  it('launch options', () => {
    const error = caught(() => resolveLaunchOptions({ nprocs: 2, script: 'train.js' } as never));
    expect(error.code).toBe('ERR_INVALID_ARGUMENT');
    expect(error.message.split('\n')[0]).toMatchInlineSnapshot(
      `"launch: unknown option 'nprocs'; did you mean \`nproc\`?"`,
    );
  });

  it('coordinator options, with and without a close name', () => {
    const base = { worldSize: 2, totalSamples: 64, batchSize: 8, numEpochs: 1 };
    expect(
      caught(() => resolveCoordinatorConfig({ ...base, batch_size: 8 } as never)).message.split('\n')[0],
    ).toMatchInlineSnapshot(`"ClusterCoordinator: invalid options.batch_size; did you mean \`batchSize\`?"`);
    expect(
      caught(() => resolveCoordinatorConfig({ ...base, learningRate: 8 } as never)).message.split('\n')[0],
    ).toMatchInlineSnapshot(`"ClusterCoordinator: invalid options.learningRate"`);
  });
});
