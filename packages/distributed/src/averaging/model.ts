import { noGrad } from '@flodl/autograd';
import type { Module } from '@flodl/nn';
import {
  CudaStream,
  copyFromBytes_,
  type Device,
  type DType,
  invalidArgument,
  isFloatingPoint,
  type Tensor,
  tidy,
} from '@flodl/tensor-native';
import type { OutgoingTensor } from '../wire/data-channel.js';
import { checkAlpha, type HostTensor } from './host.js';

/** Name prefixes of the averaged state on the wire. */
export const PARAM_PREFIX = 'p:';
export const BUFFER_PREFIX = 'b:';

/** The state that is averaged: parameters, and float buffers (non-float buffers stay local). */
export interface AveragedState {
  params: [string, Tensor][];
  buffers: [string, Tensor][];
}

/** The parameters and float buffers of `model`, in a stable order. */
export function averagedState(model: Module): AveragedState {
  return {
    params: [...model.namedParameters()].filter(([, tensor]) => isFloatingPoint(tensor.dtype)),
    buffers: [...model.namedBuffers()].filter(([, tensor]) => isFloatingPoint(tensor.dtype)),
  };
}

/**
 * The dtype a tensor travels in on the host path: float32 and float64 as they are, half
 * precisions widened to float32 (the host root accumulates float32 and float64 only).
 */
export function hostDtype(dtype: DType): DType {
  return dtype === 'float64' ? 'float64' : 'float32';
}

/**
 * A rank's host-mode contribution: parameters pre-scaled by `mass`, float buffers by 1 if it
 * stepped, each tensor shipping its own mass (the data channel's `TensorBegin.mass`). Every
 * tensor comes back on the CPU, ready to serialize: a tensor on a GPU is scaled there and
 * copied out once, asynchronously into page-locked memory, with one wait per device before
 * this returns. Half-precision tensors travel as float32. The caller disposes the tensors.
 *
 * **Shape**: each tensor keeps its parameter's shape.
 * @example
 * const snapshot = snapshotContribution(model, windowMass(steps));
 * try { await data.send(version, snapshot); } finally { for (const entry of snapshot) entry.tensor.dispose(); }
 */
export function snapshotContribution(
  model: Module,
  mass: number,
): Extract<OutgoingTensor, { tensor: Tensor }>[] {
  const { params, buffers } = averagedState(model);
  const weight = mass > 0 ? 1 : 0;
  const entries: [string, Tensor, number][] = [
    ...params.map(([name, tensor]): [string, Tensor, number] => [PARAM_PREFIX + name, tensor, mass]),
    ...buffers.map(([name, tensor]): [string, Tensor, number] => [BUFFER_PREFIX + name, tensor, weight]),
  ];
  const copying = new Set<number>();
  const snapshot: Extract<OutgoingTensor, { tensor: Tensor }>[] = [];
  try {
    noGrad(() => {
      for (const [name, tensor, scale] of entries) {
        snapshot.push({ name, mass: scale, tensor: scaledOnHost(tensor, scale, copying) });
      }
    });
    // The copies were queued on each device's current stream: wait for them before anyone reads.
    for (const index of copying) CudaStream.current(index).synchronize();
  } catch (error) {
    for (const entry of snapshot) entry.tensor.dispose();
    throw error;
  }
  return snapshot;
}

/** `scale · tensor` on the CPU in its host dtype; notes the GPU it was copied from. */
function scaledOnHost(tensor: Tensor, scale: number, copying: Set<number>): Tensor {
  const dtype = hostDtype(tensor.dtype);
  const device = tensor.device;
  return tidy(() => {
    // Widen before scaling: a window's mass can overflow float16.
    const scaled = (dtype === tensor.dtype ? tensor : tensor.to({ dtype })).mul(scale);
    if (device === 'cpu') return scaled;
    copying.add(cudaIndex(device));
    // A non-blocking copy off a GPU lands in page-locked memory (libtorch pins the destination).
    return scaled.to({ device: 'cpu', nonBlocking: true });
  });
}

function cudaIndex(device: Device): number {
  return device === 'cuda' ? 0 : Number(device.slice('cuda:'.length));
}

/** Options of {@link applyConsensus}. */
export interface ApplyConsensusOptions {
  /** EASGD: blend parameters as `(1 − α)·W + α·W_avg` instead of overwriting (CpuAsync). */
  easgdAlpha?: number;
}

/**
 * Applies a consensus (from the host root) to `model`: parameters are overwritten, or blended
 * with EASGD (`W := (1 − α)·W + α·W_avg`); float buffers are overwritten; an entry of mass 0
 * (nobody weighted it) leaves its tensor as it is. Each value is
 * copied to its tensor's own device once and cast to its dtype there; the update is in place
 * and not recorded by autograd. Names the model lacks are an error.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for an unknown name or a shape mismatch
 */
export function applyConsensus(
  model: Module,
  consensus: readonly HostTensor[],
  options: ApplyConsensusOptions = {},
): void {
  const alpha = options.easgdAlpha;
  if (alpha !== undefined) checkAlpha(alpha);
  const { params, buffers } = averagedState(model);
  const targets = new Map<string, Tensor>([
    ...params.map(([name, tensor]) => [PARAM_PREFIX + name, tensor] as [string, Tensor]),
    ...buffers.map(([name, tensor]) => [BUFFER_PREFIX + name, tensor] as [string, Tensor]),
  ]);
  noGrad(() =>
    tidy(() => {
      for (const entry of consensus) {
        const target = targets.get(entry.name);
        // Nobody weighted it (a round no rank trained in): the rank keeps its own values.
        if (target && entry.mass === 0) continue;
        if (!target || target.shape.join(',') !== entry.shape.join(',')) {
          throw invalidArgument(
            'applyConsensus',
            entry.name,
            'a parameter or float buffer of the model',
            entry.shape,
          );
        }
        // Straight from the received bytes into the tensor: cast and device copy in one pass.
        const blend = alpha !== undefined && entry.name.startsWith(PARAM_PREFIX);
        copyFromBytes_(target, entry.bytes, entry.dtype, blend ? { lerp: alpha } : {});
      }
    }),
  );
}
