// Process-level controls: seeding, threads, live-tensor accounting, build information.

import { invalidArgument } from './errors.js';
import { native } from './internal/binding.js';
import { checkInt } from './internal/validate.js';

/**
 * Seeds libtorch's generators on the CPU and every CUDA device: the same seed gives the same
 * random tensors. PyTorch: `torch.manual_seed`.
 */
export function manualSeed(seed: number): void {
  checkInt('manualSeed', 'seed', seed);
  if (seed < 0) throw invalidArgument('manualSeed', 'seed', 'a non-negative integer', seed);
  native.manualSeed(seed);
}

/** Native tensors alive in this JS environment (for leak tests). */
export function liveTensorCount(): number {
  return native.liveCount();
}

/** Intra-op CPU threads. PyTorch: `torch.set_num_threads`. */
export function setNumThreads(threads: number): void {
  checkInt('setNumThreads', 'threads', threads);
  if (threads < 1) throw invalidArgument('setNumThreads', 'threads', 'an integer >= 1', threads);
  native.setNumThreads(threads);
}

/** Intra-op CPU threads. PyTorch: `torch.get_num_threads`. */
export function getNumThreads(): number {
  return native.getNumThreads();
}

/** What the addon was built against. */
export function buildInfo(): { torchVersion: string; cuda: boolean; gloo: boolean; nccl: boolean } {
  const info = native.buildInfo();
  // What the collectives were really compiled with (headers present), not only what was asked for.
  const collectives = native.distInfo() as { gloo: boolean; nccl: boolean };
  return { ...info, gloo: collectives.gloo, nccl: collectives.nccl };
}
