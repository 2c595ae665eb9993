// The device tier (`pnpm test:gpu`, test/device-setup.ts): where the cases run, and how far a
// result there may drift from PyTorch's CPU goldens.
import { backends, getDefaultDevice } from '@flodl/tensor-native';
import type { Tolerance } from './nn-goldens.js';

/** True when the cases run on CUDA rather than the CPU. */
export const onDevice = getDefaultDevice() !== 'cpu';

/**
 * A tolerance for the device tier: some CUDA kernels keep float32 constants even in float64
 * (hardswish's 1/6, for one), so float64 results agree with the CPU's to about 1e-7 there.
 */
export function forDevice(tolerance: Tolerance): Tolerance {
  if (!onDevice || (tolerance.atol === 0 && tolerance.rtol === 0)) return tolerance;
  return { atol: Math.max(tolerance.atol, 1e-6), rtol: Math.max(tolerance.rtol, 1e-5) };
}

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
