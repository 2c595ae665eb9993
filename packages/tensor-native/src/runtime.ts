// Process-level controls: seeding, threads, live-tensor accounting, build information.

import { liveHandleCount } from './internal/handle-table.js';
import * as runtime from './internal/process-runtime.js';
import { checkInteger, checkNonNegativeInteger } from './internal/validate.js';

/**
 * Seeds libtorch's generators on the CPU and every CUDA device: the same seed gives the same
 * random tensors. PyTorch: `torch.manual_seed`.
 */
export function manualSeed(seed: number): void {
  checkNonNegativeInteger('manualSeed', 'seed', seed);
  runtime.manualSeed(seed);
}

/** Native tensors alive in this JS environment (for leak tests). */
export function liveTensorCount(): number {
  return liveHandleCount();
}

/** Intra-op CPU threads. PyTorch: `torch.set_num_threads`. */
export function setNumThreads(threads: number): void {
  checkInteger('setNumThreads', 'threads', threads, 1);
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
