import { invalidArgument } from '@flodl/tensor-native';

/**
 * Goyal linear scaling (floDl `lr_scale_ratio`): `factor = 1 + (W − 1) · ratio`. The scheduler
 * is fed the global step (which advances W× faster than one rank's), and this factor scales its
 * output; ratio 0 disables scaling.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` for a world size < 1 or a negative ratio.
 * @example
 * ```ts
 * lrScaleFactor(4, 1); // 4
 * lrScaleFactor(4, 0.5); // 2.5
 * ```
 */
export function lrScaleFactor(worldSize: number, ratio: number): number {
  if (!Number.isInteger(worldSize) || worldSize < 1) {
    throw invalidArgument('lrScaleFactor', 'worldSize', 'an integer >= 1', worldSize);
  }
  if (!Number.isFinite(ratio) || ratio < 0)
    throw invalidArgument('lrScaleFactor', 'ratio', 'a finite ratio >= 0', ratio);
  return 1 + (worldSize - 1) * ratio;
}
