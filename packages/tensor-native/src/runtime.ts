// Process-level controls: seeding, threads, live-tensor accounting, build information.

import { invalidArgument } from './errors.js';
import { liveHandleCount } from './internal/handle-table.js';
import * as runtime from './internal/process-runtime.js';
import { checkInt } from './internal/validate.js';

/**
 * Seeds libtorch's generators on the CPU and every CUDA device: the same seed gives the same
 * random tensors. PyTorch: `torch.manual_seed`.
 */
export function manualSeed(seed: number): void {
  checkInt('manualSeed', 'seed', seed);
  if (seed < 0) throw invalidArgument('manualSeed', 'seed', 'a non-negative integer', seed);
  runtime.manualSeed(seed);
}

/** Native tensors alive in this JS environment (for leak tests). */
export function liveTensorCount(): number {
  return liveHandleCount();
}

/** Intra-op CPU threads. PyTorch: `torch.set_num_threads`. */
export function setNumThreads(threads: number): void {
  checkInt('setNumThreads', 'threads', threads);
  if (threads < 1) throw invalidArgument('setNumThreads', 'threads', 'an integer >= 1', threads);
  runtime.setNumThreads(threads);
}

/** Intra-op CPU threads. PyTorch: `torch.get_num_threads`. */
export function getNumThreads(): number {
  return runtime.getNumThreads();
}

/** What the addon was built against. */
export function buildInfo(): { torchVersion: string; cuda: boolean; gloo: boolean; nccl: boolean } {
  const info = runtime.nativeBuildInfo();
  // What the collectives were really compiled with (headers present), not only what was asked for.
  const collectives = runtime.collectivesInfo();
  return { ...info, gloo: collectives.gloo, nccl: collectives.nccl };
}
