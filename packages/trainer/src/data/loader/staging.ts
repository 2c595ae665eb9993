// Moving batch tensors to the training device.
import { type Device, elementSize, type Tensor } from '@flodl/tensor-native';

/**
 * The tensors on `device`. To a CUDA device each tensor is staged through page-locked memory
 * and copied with `nonBlocking: true`, so the copy overlaps host work; libtorch's caching host
 * allocator keeps the pinned block alive until the copy has run, so the staging tensor may be
 * freed at once (the caller's scope does that). Tensors already there are returned as they are.
 *
 * PyTorch: `batch.pin_memory().to(device, non_blocking=True)`.
 */
export function stageToDevice(tensors: readonly Tensor[], device: Device): Tensor[] {
  return tensors.map((tensor) => {
    if (tensor.device === device) return tensor;
    if (device === 'cpu') return tensor.to({ device });
    const source = tensor.device === 'cpu' ? tensor.pinMemory() : tensor;
    return source.to({ device, nonBlocking: true });
  });
}

/** Bytes held by `tensors` (elements × element size). */
export function byteSize(tensors: readonly Tensor[]): number {
  let bytes = 0;
  for (const tensor of tensors) bytes += tensor.numel * elementSize(tensor.dtype);
  return bytes;
}
