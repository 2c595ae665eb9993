// Replays the cases of test/fixtures/rnn-loss.json (written by scripts/make-goldens-rnn-loss.py)
// against our functional API: builds the leaves, calls the op, and compares its outputs and the
// gradients of sum((output * R).sum()) with PyTorch's.

import { readFixture } from '@flodl/testing';
import { withoutCudnn } from './device.js';
import { type ReplayedCase, runGolden as replay } from './nn-goldens.js';

export { groupsOf } from './nn-goldens.js';

/** A case of rnn-loss.json: nn.json's shape, seeded where the op draws, never in place. */
export type GoldenCase = ReplayedCase;

export function runGolden(golden: GoldenCase): void {
  // A recurrent op in eval mode runs without cuDNN on the device tier: its backward is training-only.
  if (hasTrainingOff(golden.args)) withoutCudnn(() => replay(golden));
  else replay(golden);
}

/** True when the op's options say `training: false` (a recurrent op in eval mode). */
function hasTrainingOff(args: unknown[]): boolean {
  return args.some(
    (arg) => typeof arg === 'object' && arg !== null && (arg as { training?: boolean }).training === false,
  );
}

export function loadGoldens(): { meta: { torch: string }; cases: GoldenCase[] } {
  return readFixture(new URL('../fixtures/rnn-loss.json', import.meta.url));
}
