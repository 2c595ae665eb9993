// Process-level controls: seeding, threads, live-tensor accounting, build information.

import { type Device, deviceCode } from './device.js';
import { FlodlError, invalidArgument } from './errors.js';
import { cudaDeviceCount } from './internal/cuda-runtime.js';
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

/**
 * The state of a default random generator as bytes: the CPU's (libtorch's Mersenne Twister,
 * which `rand`, `randn`, dropout and init draw from) or a CUDA device's (seed and offset).
 * Saved in checkpoints; `setRngState` puts it back, so what is drawn next repeats exactly.
 * PyTorch: `torch.get_rng_state()` / `torch.cuda.get_rng_state(device)`.
 *
 * @throws FlodlError ERR_DEVICE for a CUDA device this process does not have
 */
export function getRngState(device: Device = 'cpu'): Uint8Array {
  return runtime.rngState(generatorDevice('getRngState', device));
}

/**
 * Restores a generator state `getRngState(device)` returned. PyTorch: `torch.set_rng_state`.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT when `state` is not a Uint8Array, ERR_NATIVE when
 *   libtorch refuses it (a state of another generator or size), ERR_DEVICE for a missing device
 */
export function setRngState(state: Uint8Array, device: Device = 'cpu'): void {
  const code = generatorDevice('setRngState', device);
  if (!(state instanceof Uint8Array) || state.byteLength === 0)
    throw invalidArgument('setRngState', 'state', 'the Uint8Array getRngState returned', state);
  runtime.setRngState(code, state);
}

function generatorDevice(op: string, device: Device): number {
  const code = deviceCode(op, device);
  if (code >= 0 && code >= cudaDeviceCount()) {
    throw new FlodlError('ERR_DEVICE', `${device} is not a device of this process`, {
      op,
      expected: `'cpu' or cuda:0..cuda:${cudaDeviceCount() - 1}`,
      got: device,
    });
  }
  return code;
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
