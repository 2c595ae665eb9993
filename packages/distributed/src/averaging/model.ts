import { noGrad } from '@flodl/autograd';
import type { Module } from '@flodl/nn';
import {
  copyFromBytes_,
  type DType,
  elementSize,
  invalidArgument,
  isFloatingPoint,
  type Tensor,
  tidy,
  toBytes,
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

/** Each model's kept snapshot bytes, one array per averaged tensor (see {@link snapshotContribution}). */
const snapshotBytes = new WeakMap<Module, Uint8Array[]>();

/**
 * A rank's host-mode contribution: parameters pre-scaled by `mass`, float buffers by 1 if it
 * stepped, each tensor shipping its own mass (the data channel's `TensorBegin.mass`), as the
 * little-endian bytes the data channel sends. Each tensor is scaled and written in one pass
 * into bytes kept for the model (`toBytes` with `into`; off the CPU, scaled on its device and
 * copied over), so steady rounds allocate nothing: the bytes stay valid until the model's next
 * snapshot (send them before taking another) or {@link releaseSnapshotBuffers}. The values are
 * those of `tensor.mul(mass)`, bit for bit. Half-precision tensors travel as float32.
 *
 * **Shape**: each entry carries its parameter's shape.
 * @example
 * await data.send(version, snapshotContribution(model, windowMass(steps)));
 */
export function snapshotContribution(
  model: Module,
  mass: number,
): Extract<OutgoingTensor, { bytes: Uint8Array }>[] {
  const { params, buffers } = averagedState(model);
  const weight = mass > 0 ? 1 : 0;
  const entries: [string, Tensor, number][] = [
    ...params.map(([name, tensor]): [string, Tensor, number] => [PARAM_PREFIX + name, tensor, mass]),
    ...buffers.map(([name, tensor]): [string, Tensor, number] => [BUFFER_PREFIX + name, tensor, weight]),
  ];
  const kept = snapshotBytes.get(model) ?? [];
  const snapshot = noGrad(() =>
    entries.map(([name, tensor, scale], index) => {
      const dtype = hostDtype(tensor.dtype);
      const size = tensor.numel * elementSize(dtype);
      let into = kept[index];
      if (into?.length !== size) {
        into = new Uint8Array(size);
        kept[index] = into;
      }
      toBytes(tensor, { into, scale, dtype });
      return { name, mass: scale, dtype, shape: tensor.shape, bytes: into };
    }),
  );
  kept.length = entries.length;
  snapshotBytes.set(model, kept);
  return snapshot;
}

/** Frees the bytes {@link snapshotContribution} keeps for `model` (a session does at its finish). */
export function releaseSnapshotBuffers(model: Module): void {
  snapshotBytes.delete(model);
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
