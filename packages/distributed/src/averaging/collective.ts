// The collective averaging round (NcclSync / NcclCadence; Gloo on CPU): the mass law through a
// process group's allReduce, on flat buffers that live as long as the model does.
import { noGrad } from '@flodl/autograd';
import type { Module } from '@flodl/nn';
import {
  aten,
  type Device,
  type DType,
  fromData,
  invalidArgument,
  keep,
  type ProcessGroup,
  type Tensor,
  tidy,
  zeros,
} from '@flodl/tensor-native';
import { bufferWeight } from './host.js';
import { averagedState } from './model.js';

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

/** Tensors of one dtype and device, and the flat buffer they travel in. */
interface Bucket {
  members: Tensor[];
  flat: Tensor;
}

/** A model's buckets, and the tensors they were made for. */
interface Plan {
  params: Bucket[];
  buffers: Bucket[];
  tensors: Tensor[];
}

const plans = new WeakMap<Module, Plan>();

/**
 * Mass-law averaging through a process group (NcclSync / NcclCadence; Gloo on CPU): every rank
 * writes its parameters pre-scaled by its `mass`, and its float buffers by 1 if it stepped, into
 * one flat buffer per dtype and device; one allReduce call carries them and the masses (a SUM
 * per buffer, issued together); then one pass per buffer divides each share, writes it into
 * its tensor and sums the divergence norms in float64. Every rank ends with the same bits. A
 * round where no rank has mass changes nothing. The model is written only after every
 * allReduce succeeded, so a failed round (a dead peer) leaves it as it was.
 *
 * The flat buffers are kept for the model's next rounds (one model-sized copy per rank, made on
 * the first round and again when the parameters change); `releaseCollectiveBuffers(model)` frees
 * them.
 *
 * Works where the model lives: on CUDA the masses travel on the parameters' GPU (an nccl group
 * reduces only tensors on its device), and the norms are summed there, so the host reads two
 * small tensors per round (the masses and three norms).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for a negative or non-finite mass; whatever the
 *   group's allReduce throws (ERR_RANK_FAILED for a dead peer)
 * @example collectiveAverage(group, model, windowMass(stepsSinceAverage, gamma));
 */
export function collectiveAverage(group: ProcessGroup, model: Module, mass: number): CollectiveResult {
  if (!(mass >= 0 && Number.isFinite(mass)))
    throw invalidArgument('collectiveAverage', 'mass', 'a finite number >= 0', mass);
  const plan = planFor(model);
  const device = plan.params[0]?.flat.device ?? plan.buffers[0]?.flat.device ?? group.device;
  return noGrad(() =>
    tidy(() => {
      const weight = mass > 0 ? bufferWeight(1) : 0;
      for (const bucket of plan.params) aten.call('averagePack', bucket.members, bucket.flat, mass);
      for (const bucket of plan.buffers) aten.call('averagePack', bucket.members, bucket.flat, weight);
      const flats = [...plan.params, ...plan.buffers].map((bucket) => bucket.flat);
      const masses = fromData([mass, weight], [2], { dtype: 'float64', device });
      // One call: the backend runs the buffers' and the masses' reductions together.
      group.allReduce([...flats, masses], { op: 'sum' });
      const [totalMass, steppedRanks] = masses.toArray() as [number, number];
      let norms: [number, number, number] = [0, 0, 0];
      if (totalMass > 0 && plan.params.length > 0) {
        const sums = plan.params.map(
          (bucket) => aten.call('averageUnpack', bucket.members, bucket.flat, totalMass, true) as Tensor,
        );
        const summed =
          sums.length === 1
            ? sums[0]!
            : sums.map((sum) => sum.to({ device: 'cpu' })).reduce((a, b) => a.add(b));
        norms = summed.toArray() as [number, number, number];
      }
      if (steppedRanks > 0) {
        for (const bucket of plan.buffers)
          aten.call('averageUnpack', bucket.members, bucket.flat, steppedRanks, false);
      }
      const [preSq, diffSq, postSq] = norms;
      const postNorm = Math.sqrt(postSq);
      return {
        totalMass,
        steppedRanks,
        divergence: postNorm > 0 ? Math.sqrt(diffSq) / postNorm : 0,
        preNorm: Math.sqrt(preSq),
        postNorm,
      };
    }),
  );
}

/** Frees the flat buffers `collectiveAverage` keeps for `model` (made again by its next round). */
export function releaseCollectiveBuffers(model: Module): void {
  const plan = plans.get(model);
  if (plan === undefined) return;
  plans.delete(model);
  for (const bucket of [...plan.params, ...plan.buffers]) bucket.flat.dispose();
}

/** The model's buckets: the kept ones while its averaged tensors are the same objects (a Tensor's shape is fixed). */
function planFor(model: Module): Plan {
  const { params, buffers } = averagedState(model);
  const tensors = [...params, ...buffers].map(([, tensor]) => tensor);
  const previous = plans.get(model);
  const same =
    previous?.tensors.length === tensors.length &&
    tensors.every((tensor, index) => tensor === previous.tensors[index]);
  if (previous !== undefined && same) return previous;
  if (previous !== undefined) releaseCollectiveBuffers(model);
  const plan: Plan = {
    params: buckets(params.map(([, tensor]) => tensor)),
    buffers: buckets(buffers.map(([, tensor]) => tensor)),
    tensors,
  };
  plans.set(model, plan);
  return plan;
}

/** Groups tensors by dtype and device, in their order, each group with a fresh flat buffer. */
function buckets(tensors: Tensor[]): Bucket[] {
  const groups = new Map<string, { dtype: DType; device: Device; members: Tensor[] }>();
  for (const tensor of tensors) {
    const key = `${tensor.dtype}@${tensor.device}`;
    const group = groups.get(key) ?? { dtype: tensor.dtype, device: tensor.device, members: [] };
    group.members.push(tensor);
    groups.set(key, group);
  }
  return [...groups.values()].map(({ dtype, device, members }) => {
    const count = members.reduce((sum, tensor) => sum + tensor.numel, 0);
    return { members, flat: keep(zeros([count], { dtype, device })) };
  });
}
