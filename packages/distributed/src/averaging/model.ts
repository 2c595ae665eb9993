import { noGrad } from '@flodl/autograd';
import type { Module } from '@flodl/nn';
import {
  fromBytes,
  fromData,
  invalidArgument,
  isFloatingPoint,
  type ProcessGroup,
  type Tensor,
  tidy,
} from '@flodl/tensor-native';
import type { OutgoingTensor } from '../wire/data-channel.js';
import { bufferWeight, checkAlpha, type HostTensor } from './host.js';

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

/** What one collective averaging did on this rank. */
export interface CollectiveResult {
  /** Σ mass of the ranks' parameters (the one divisor). */
  totalMass: number;
  /** Ranks that stepped (the buffers' divisor). */
  steppedRanks: number;
  /** ‖pre − post‖ / ‖post‖ of the parameters. */
  divergence: number;
  preNorm: number;
  postNorm: number;
}

/**
 * Mass-law averaging through a process group (NcclSync / NcclCadence; Gloo on CPU): every rank
 * pre-scales its parameters by its `mass` and its float buffers by 1 if it stepped, one
 * allReduce SUM carries the scaled tensors and one the masses, then each rank divides once.
 * Every rank ends with the same bits. A round where no rank has mass changes nothing.
 *
 * @example collectiveAverage(group, model, windowMass(stepsSinceAverage, gamma));
 */
export function collectiveAverage(group: ProcessGroup, model: Module, mass: number): CollectiveResult {
  if (!(mass >= 0 && Number.isFinite(mass)))
    throw invalidArgument('collectiveAverage', 'mass', 'a finite number ≥ 0', mass);
  const { params, buffers } = averagedState(model);
  return noGrad(() =>
    tidy(() => {
      const weight = mass > 0 ? bufferWeight(1) : 0;
      const scaledParams = params.map(([, tensor]) => tensor.mul(mass));
      const scaledBuffers = buffers.map(([, tensor]) => tensor.mul(weight));
      const masses = fromData([mass, weight], [2], { dtype: 'float64' });
      group.allReduce([...scaledParams, ...scaledBuffers], { op: 'sum' });
      group.allReduce(masses, { op: 'sum' });
      const [totalMass, steppedRanks] = masses.toArray() as number[];
      let preSq = 0;
      let diffSq = 0;
      let postSq = 0;
      if ((totalMass as number) > 0) {
        params.forEach(([, tensor], index) => {
          const average = (scaledParams[index] as Tensor).div(totalMass as number);
          preSq += tensor.square().sum().item() as number;
          diffSq += tensor.sub(average).square().sum().item() as number;
          postSq += average.square().sum().item() as number;
          tensor.copy_(average);
        });
      }
      if ((steppedRanks as number) > 0) {
        buffers.forEach(([, tensor], index) => {
          tensor.copy_((scaledBuffers[index] as Tensor).div(steppedRanks as number));
        });
      }
      const postNorm = Math.sqrt(postSq);
      return {
        totalMass: totalMass as number,
        steppedRanks: steppedRanks as number,
        divergence: postNorm > 0 ? Math.sqrt(diffSq) / postNorm : 0,
        preNorm: Math.sqrt(preSq),
        postNorm,
      };
    }),
  );
}

/**
 * A rank's host-mode contribution: parameters pre-scaled by `mass`, float buffers by 1 if it
 * stepped, each tensor shipping its own mass (the data channel's `TensorBegin.mass`).
 */
export function snapshotContribution(model: Module, mass: number): OutgoingTensor[] {
  const { params, buffers } = averagedState(model);
  const weight = mass > 0 ? 1 : 0;
  return noGrad(() => [
    ...params.map(([name, tensor]) => ({ name: PARAM_PREFIX + name, mass, tensor: tensor.mul(mass) })),
    ...buffers.map(([name, tensor]) => ({
      name: BUFFER_PREFIX + name,
      mass: weight,
      tensor: tensor.mul(weight),
    })),
  ]);
}

/** Options of {@link applyConsensus}. */
export interface ApplyConsensusOptions {
  /** EASGD: blend parameters as `(1 − α)·W + α·W_avg` instead of overwriting (CpuAsync). */
  easgdAlpha?: number;
}

/**
 * Applies a consensus (from the host root) to `model`: parameters are overwritten, or blended
 * with EASGD; float buffers are overwritten. Names the model lacks are an error.
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
        if (!target || target.shape.join(',') !== entry.shape.join(',')) {
          throw invalidArgument(
            'applyConsensus',
            entry.name,
            'a parameter or float buffer of the model',
            entry.shape,
          );
        }
        const value = fromBytes(entry.bytes, entry.shape, entry.dtype).to({ dtype: target.dtype });
        if (alpha !== undefined && entry.name.startsWith(PARAM_PREFIX)) target.lerp_(value, alpha);
        else target.copy_(value);
      }
    }),
  );
}
