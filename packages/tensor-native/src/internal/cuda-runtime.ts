// The addon's CUDA runtime entries, typed: device count, synchronization, allocator statistics,
// and the stream and event pools (streams and events are named by ids from the addon).

import type { Handle } from './binding-types.js';
import { nativeOps } from './native-ops.js';

const native = nativeOps(
  'cudaDeviceCount',
  'cudaSynchronize',
  'cudaMemoryStats',
  'cudaResetPeakMemoryStats',
  'cudaEmptyCache',
  'cudaDeviceName',
  'streamCreate',
  'streamCurrent',
  'streamSynchronize',
  'streamQuery',
  'streamSetCurrent',
  'recordStream',
  'eventCreate',
  'eventRecord',
  'eventWait',
  'eventSynchronize',
  'eventQuery',
  'eventElapsed',
  'eventDestroy',
  'graphCreate',
  'graphCaptureBegin',
  'graphCaptureEnd',
  'graphReplay',
  'graphDestroy',
  'graphCapturing',
);

/** Allocator statistics of one CUDA device, in bytes. */
export interface CudaMemoryStats {
  allocated: number;
  reserved: number;
  peakAllocated: number;
  peakReserved: number;
  active: number;
}

/** Visible CUDA devices (0 on a build or machine without CUDA). */
export function cudaDeviceCount(): number {
  return native.cudaDeviceCount();
}

/** Waits for the work queued on `device` (the current device when undefined). */
export function cudaSynchronize(device: number | undefined): void {
  native.cudaSynchronize(device);
}

export function cudaMemoryStats(device: number | undefined): CudaMemoryStats {
  const [allocated, reserved, peakAllocated, peakReserved, active] = native.cudaMemoryStats(device);
  return { allocated, reserved, peakAllocated, peakReserved, active };
}

export function cudaResetPeakMemoryStats(device: number | undefined): void {
  native.cudaResetPeakMemoryStats(device);
}

export function cudaEmptyCache(): void {
  native.cudaEmptyCache();
}

export function cudaDeviceName(device: number | undefined): string | null {
  return native.cudaDeviceName(device);
}

/** CUDA streams of libtorch's pool, by id. */
export const streams = {
  create: (device: number, highPriority: boolean): number => native.streamCreate(device, highPriority),
  current: (device: number): number => native.streamCurrent(device),
  synchronize: (id: number): void => native.streamSynchronize(id),
  query: (id: number): boolean => native.streamQuery(id),
  /** Makes `id` its device's current stream; returns the stream it replaced. */
  setCurrent: (id: number): number => native.streamSetCurrent(id),
  /** Tells the caching allocator that stream `id` uses the tensor `handle`. */
  recordTensor: (handle: Handle, id: number): void => native.recordStream(handle, id),
};

/** CUDA events, by id. */
export const events = {
  create: (enableTiming: boolean): number => native.eventCreate(enableTiming),
  record: (id: number, streamId: number): void => native.eventRecord(id, streamId),
  wait: (id: number, streamId: number): void => native.eventWait(id, streamId),
  synchronize: (id: number): void => native.eventSynchronize(id),
  query: (id: number): boolean => native.eventQuery(id),
  /** Milliseconds from `start` to `end`. */
  elapsed: (start: number, end: number): number => native.eventElapsed(start, end),
  destroy: (id: number): void => native.eventDestroy(id),
};

/** CUDA graphs, by id: capture of the current stream, replay, and the capture status. */
export const graphs = {
  create: (): number => native.graphCreate(),
  /** `poolOf`: -1, or a graph whose memory pool this capture shares; `mode`: 0 global, 1 thread-local, 2 relaxed. */
  captureBegin: (id: number, poolOf: number, mode: number): void =>
    native.graphCaptureBegin(id, poolOf, mode),
  captureEnd: (id: number): void => native.graphCaptureEnd(id),
  replay: (id: number): void => native.graphReplay(id),
  destroy: (id: number): void => native.graphDestroy(id),
  /** Whether the current stream of `device` is being captured. */
  capturing: (device: number): boolean => native.graphCapturing(device),
};
