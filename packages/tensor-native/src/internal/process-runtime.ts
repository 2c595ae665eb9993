// The addon's process-level entries, typed: seeding, intra-op threads, build information,
// libtorch's global backend switches and its autocast state.

import type { DeviceCode, DTypeCode } from './binding-types.js';
import { nativeOps } from './native-ops.js';

const native = nativeOps(
  'manualSeed',
  'rngState',
  'setRngState',
  'setNumThreads',
  'getNumThreads',
  'buildInfo',
  'distInfo',
  'backendFlag',
  'setBackendFlag',
  'autocastState',
  'autocastEnter',
  'autocastExit',
);

/** What this build of the addon was compiled against. */
export interface NativeBuildInfo {
  torchVersion: string;
  cuda: boolean;
  gloo: boolean;
  nccl: boolean;
}

/** Which collectives the addon was really compiled with (their headers were present). */
export interface CollectivesInfo {
  c10d: boolean;
  gloo: boolean;
  nccl: boolean;
}

export function manualSeed(seed: number): void {
  native.manualSeed(seed);
}

/** The state of the default generator of the CPU (`device` -1) or a CUDA device, as bytes. */
export function rngState(device: DeviceCode): Uint8Array {
  return native.rngState(device);
}

export function setRngState(device: DeviceCode, state: Uint8Array): void {
  native.setRngState(device, state);
}

export function setNumThreads(threads: number): void {
  native.setNumThreads(threads);
}

export function getNumThreads(): number {
  return native.getNumThreads();
}

export function nativeBuildInfo(): NativeBuildInfo {
  return native.buildInfo();
}

export function collectivesInfo(): CollectivesInfo {
  return native.distInfo() as CollectivesInfo;
}

/** A global backend switch of libtorch by its dotted name (`'cudnn.benchmark'`, …). */
export function backendFlag(name: string): boolean {
  return native.backendFlag(name);
}

export function setBackendFlag(name: string, value: boolean): void {
  native.setBackendFlag(name, value);
}

/** The autocast state of the CPU or CUDA: whether it is on, and its dtype code. */
export function autocastState(cuda: boolean): [enabled: boolean, dtype: DTypeCode] {
  return native.autocastState(cuda) as [boolean, DTypeCode];
}

/** Sets the autocast state of the CPU or CUDA (enter and exit take the same arguments). */
export function autocastEnter(cuda: boolean, enabled: boolean, dtype: DTypeCode): void {
  native.autocastEnter(cuda, enabled, dtype);
}

export function autocastExit(cuda: boolean, enabled: boolean, dtype: DTypeCode): void {
  native.autocastExit(cuda, enabled, dtype);
}
