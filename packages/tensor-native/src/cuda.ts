// CUDA runtime queries. Every function answers sensibly on a machine without CUDA:
// isAvailable() is false, deviceCount() is 0, memory figures are 0, and the rest do nothing.
import { FlodlError } from './errors.js';
import {
  type CudaMemoryStats,
  cudaDeviceCount,
  cudaDeviceName,
  cudaEmptyCache,
  cudaMemoryStats,
  cudaResetPeakMemoryStats,
  cudaSynchronize,
} from './internal/cuda-runtime.js';
import { checkNonNegativeInteger } from './internal/validate.js';

export type { CudaMemoryStats } from './internal/cuda-runtime.js';

function deviceIndex(op: string, device: number | undefined): number | undefined {
  if (device === undefined) return undefined;
  checkNonNegativeInteger(op, 'device', device);
  const count = cudaDeviceCount();
  if (count > 0 && device >= count) {
    throw new FlodlError('ERR_DEVICE', `cuda:${device} does not exist`, {
      op,
      expected: `a device in [0, ${count - 1}]`,
      got: String(device),
    });
  }
  return device;
}

/** CUDA utilities. PyTorch: `torch.cuda`. */
export const cuda = {
  /** True when this build has CUDA and at least one GPU is visible. PyTorch: `torch.cuda.is_available()`. */
  isAvailable(): boolean {
    return cudaDeviceCount() > 0;
  },
  /** Visible CUDA devices (0 without CUDA). */
  deviceCount(): number {
    return cudaDeviceCount();
  },
  /** Waits for all work queued on `device` (default 0). No-op without CUDA. */
  synchronize(device?: number): void {
    if (cudaDeviceCount() === 0) return;
    cudaSynchronize(deviceIndex('cuda.synchronize', device));
  },
  /** Allocator statistics of `device` (all zero without CUDA). */
  memoryStats(device?: number): CudaMemoryStats {
    if (cudaDeviceCount() === 0)
      return { allocated: 0, reserved: 0, peakAllocated: 0, peakReserved: 0, active: 0 };
    return cudaMemoryStats(deviceIndex('cuda.memoryStats', device));
  },
  /** Bytes held by live tensors. PyTorch: `torch.cuda.memory_allocated()`. */
  memoryAllocated(device?: number): number {
    return cuda.memoryStats(device).allocated;
  },
  /** Bytes reserved by the caching allocator. PyTorch: `torch.cuda.memory_reserved()`. */
  memoryReserved(device?: number): number {
    return cuda.memoryStats(device).reserved;
  },
  /** Peak of `memoryAllocated` since start or the last reset. PyTorch: `torch.cuda.max_memory_allocated()`. */
  maxMemoryAllocated(device?: number): number {
    return cuda.memoryStats(device).peakAllocated;
  },
  /** Resets the peak statistics. */
  resetPeakMemoryStats(device?: number): void {
    if (cudaDeviceCount() === 0) return;
    cudaResetPeakMemoryStats(deviceIndex('cuda.resetPeakMemoryStats', device));
  },
  /** Returns cached, unused blocks to the driver. PyTorch: `torch.cuda.empty_cache()`. */
  emptyCache(): void {
    cudaEmptyCache();
  },
  /** The device's product name, or null without CUDA. */
  deviceName(device?: number): string | null {
    if (cudaDeviceCount() === 0) return null;
    return cudaDeviceName(deviceIndex('cuda.deviceName', device));
  },
};
