// The device tier (`pnpm test:gpu`, test/device-setup.ts): where the cases run, and how far a
// result there may drift from PyTorch's CPU goldens.
import { backends } from '@flodl/tensor-native';
import { onDevice } from '@flodl/testing';

export { forDevice, onDevice } from '@flodl/testing';

/** Runs `fn` without cuDNN on the device tier (cuDNN RNNs have no backward in eval mode; PyTorch refuses it too). */
export function withoutCudnn<T>(fn: () => T): T {
  if (!onDevice) return fn();
  const enabled = backends.cudnn.enabled;
  backends.cudnn.enabled = false;
  try {
    return fn();
  } finally {
    backends.cudnn.enabled = enabled;
  }
}
