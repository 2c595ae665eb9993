// Moving batch tensors to the training device.
import {
  CudaEvent,
  CudaStream,
  type Device,
  elementSize,
  type Tensor,
  withStream,
} from '@flodl/tensor-native';

/** One copy stream per CUDA device, created on first use. */
const copyStreams = new Map<number, CudaStream>();

function copyStreamFor(device: number): CudaStream {
  let stream = copyStreams.get(device);
  if (stream === undefined) {
    stream = new CudaStream(device);
    copyStreams.set(device, stream);
  }
  return stream;
}

/**
 * The tensors on `device`. To a CUDA device each tensor is staged through page-locked memory
 * and copied with `nonBlocking: true` on a side stream, so the copy overlaps the kernels
 * already queued on the compute stream; an event recorded after the copies makes the compute
 * stream wait for them (the host never blocks), and `recordStream` keeps the copies' memory
 * safe from reuse while the compute stream still uses it. libtorch's caching host allocator
 * keeps each pinned block alive until its copy has run, so the staging tensors may be freed at
 * once. Tensors already there are returned as they are.
 *
 * PyTorch: `with torch.cuda.stream(side): x = batch.pin_memory().to(device, non_blocking=True)`,
 * then `torch.cuda.current_stream().wait_stream(side)` and `x.record_stream(...)`.
 */
export function stageToDevice(tensors: readonly Tensor[], device: Device): Tensor[] {
  if (device === 'cpu' || tensors.every((tensor) => tensor.device === device)) {
    return tensors.map((tensor) => (tensor.device === device ? tensor : tensor.to({ device })));
  }
  const index = device === 'cuda' ? 0 : Number(device.slice('cuda:'.length));
  const side = copyStreamFor(index);
  const copied = new CudaEvent();
  try {
    const moved = withStream(side, () =>
      tensors.map((tensor) => {
        if (tensor.device === device) return tensor;
        const source = tensor.device === 'cpu' ? tensor.pinMemory() : tensor;
        return source.to({ device, nonBlocking: true });
      }),
    );
    copied.record(side);
    const compute = CudaStream.current(index);
    copied.wait(compute);
    for (const tensor of moved) if (tensor.device === device) tensor.recordStream(compute);
    return moved;
  } finally {
    copied.dispose();
  }
}

/** Bytes held by `tensors` (elements × element size). */
export function byteSize(tensors: readonly Tensor[]): number {
  let bytes = 0;
  for (const tensor of tensors) bytes += tensor.numel * elementSize(tensor.dtype);
  return bytes;
}
