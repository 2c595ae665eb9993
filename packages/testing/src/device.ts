// The device tier: `FLODL_TEST_DEVICE=cuda` (`pnpm test:gpu`) runs a package's cases with that
// device as the default one. A package's test/device-setup.ts calls {@link setupTestDevice}.

/** Tolerances of a comparison: |actual − expected| <= atol + rtol·|expected|. */
export interface Tolerance {
  atol: number;
  rtol: number;
}

/** The device the cases run on: 'cpu', or FLODL_TEST_DEVICE's device in the device tier. */
export const testDevice: string = deviceOf(process.env.FLODL_TEST_DEVICE);

/** True when the cases run on an accelerator rather than the CPU. */
export const onDevice = testDevice !== 'cpu';

function deviceOf(value: string | undefined): string {
  return value === undefined || value === '' ? 'cpu' : value;
}

/** What {@link setupTestDevice} sets: tensor-native's `backends` and `setDefaultDevice`. */
export interface DeviceControls<D extends string> {
  backends: { cudnn: { allowTF32: boolean } };
  setDefaultDevice(device: D): void;
}

/**
 * Makes the tier's device the default one, so every factory without an explicit device (and
 * every layer's parameters) lands there; TF32 convolutions are turned off so float32 goldens hold.
 */
export function setupTestDevice<D extends string>(controls: DeviceControls<D>): void {
  if (!onDevice) return;
  controls.backends.cudnn.allowTF32 = false;
  controls.setDefaultDevice(testDevice as D);
}

/**
 * A tolerance for the device tier: some CUDA kernels keep float32 constants even in float64
 * (hardswish's 1/6, for one), so float64 results agree with the CPU's to about 1e-7 there.
 * Exact comparisons stay exact; on the CPU the tolerance is returned as given.
 */
export function forDevice(tolerance: Tolerance): Tolerance {
  if (!onDevice || (tolerance.atol === 0 && tolerance.rtol === 0)) return tolerance;
  return { atol: Math.max(tolerance.atol, 1e-6), rtol: Math.max(tolerance.rtol, 1e-5) };
}
