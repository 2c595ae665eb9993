// When an optimizer takes the multi-tensor (foreach) update: the `foreach` option's auto default
// and the device test that picks PyTorch's CUDA multi-tensor order.
import { buildInfo, type Tensor } from '@flodl/tensor-native';
import { checkBoolean } from './options.js';

/**
 * What `foreach: null` (auto) chooses: the multi-tensor update, on every device. PyTorch keeps
 * the per-tensor update on the CPU, where its multi-tensor ops save it nothing; here each
 * per-tensor op is a call from JavaScript into the addon, while the CPU multi-tensor step runs
 * the same kernels in the same order from one call per group. `pnpm bench:foreach`
 * (docs/benchmarks.md) measured it ahead on the small dispatch-bound model in every run and
 * within the noise on the large, kernel-bound ones.
 */
export const FOREACH_BY_DEFAULT = true;

/** True when a group with this `foreach` option takes the multi-tensor update. */
export function foreachChosen(foreach: boolean | null): boolean {
  return foreach ?? FOREACH_BY_DEFAULT;
}

/** Checks a `foreach` option: a boolean, or null for the auto default. */
export function checkForeach(op: string, name: string, value: unknown): void {
  if (value !== null) checkBoolean(op, name, value);
}

let cudaBuild: boolean | undefined;

/** True when every tensor is on a CUDA device (false at once in a CPU-only build). */
export function allOnCuda(tensors: readonly Tensor[]): boolean {
  cudaBuild ??= buildInfo().cuda;
  return cudaBuild && tensors.every((tensor) => tensor.device.startsWith('cuda'));
}
