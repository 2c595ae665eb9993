// The hand-written training loop the managed Trainer is measured against (bench:managed,
// bench:census): the MLP's forward and cross-entropy, zeroGrad, backward, step, loss.item().
import { crossEntropy } from '@flodl/autograd';
import type { Module, Optimizer } from '@flodl/nn';
import { tidy } from '@flodl/tensor-native';
import type { DataLoader } from '../src/data/index.js';

/** One epoch of the hand-written loop over `loader`; → the batches trained. */
export function handWrittenEpoch(
  net: Module<any[], any>,
  optimizer: Optimizer,
  loader: DataLoader,
  epoch: number,
): number {
  let batches = 0;
  for (const batch of loader.epoch(epoch)) {
    tidy(() => {
      const loss = crossEntropy(net.forward(batch.get('image')), batch.get('label'));
      optimizer.zeroGrad();
      loss.backward();
      optimizer.step();
      loss.item();
    });
    batch.dispose();
    batches += 1;
  }
  return batches;
}
