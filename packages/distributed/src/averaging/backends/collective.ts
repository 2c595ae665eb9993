// The collective backend (NcclSync / NcclCadence; Gloo on CPU devices): a round is one
// in-place mass-law reduction through the cohort's process group, and after a death the
// survivors form a new group at a rendezvous the lowest of them mints.
import type { Module } from '@flodl/nn';
import {
  createProcessGroup,
  type Device,
  type DistributedBackend,
  FlodlError,
  type ProcessGroup,
} from '@flodl/tensor-native';
import type { NewNcclSession } from '../../wire/messages.js';
import { type CollectiveResult, collectiveAverage, releaseCollectiveBuffers } from '../collective.js';
import type { AveragingBackend, AveragingCommand, AveragingContext } from './api.js';
import { decodeRendezvous, encodeRendezvous, freePortOn } from './rendezvous.js';

const OP = 'DistributedSession';

/**
 * The process-group backend and device for `model`'s parameters: `nccl` on their CUDA device,
 * `gloo` on the CPU (a model without parameters averages nothing on the CPU).
 */
export function collectiveBackendFor(model: Module): { backend: DistributedBackend; device: Device } {
  const device = model.parameters()[0]?.device ?? 'cpu';
  return device === 'cpu' ? { backend: 'gloo', device } : { backend: 'nccl', device };
}

/** A process group on the backend of `model`'s device (nccl on CUDA, gloo on the CPU). */
export function joinGroup(
  model: Module,
  where: { rank: number; worldSize: number; host: string; port: number; timeoutMs: number },
): ProcessGroup {
  const { backend, device } = collectiveBackendFor(model);
  return createProcessGroup({ backend, ...where, ...(backend === 'nccl' ? { device } : {}) });
}

/** What a collective failure looks like when a peer died or stalled (the group is unusable after it). */
function isPeerFailure(error: unknown): boolean {
  return FlodlError.isInstance(error) && ['ERR_RANK_FAILED', 'ERR_TIMEOUT', 'ERR_IO'].includes(error.code);
}

/** Options of {@link CollectiveBackend}. */
export interface CollectiveBackendOptions {
  /** The cohort's process group, formed at join. */
  group: ProcessGroup;
  /** Where this rank hosts a new group's rendezvous when it is the lowest survivor. */
  processGroupHost: string;
}

/**
 * Averages in place through a process group on `SyncNow` and acks with `SyncAck`. A
 * collective that fails on a dead peer leaves the model as it was: the window is given back,
 * the group aborted, and the rank waits for the coordinator's `DeclareDead` and
 * `NewNcclSession` (new dense ranks in ascending global order, a fresh rendezvous minted by
 * the lowest survivor on `RequestNewNcclId`). A failure to join the new group surfaces at the
 * next `SyncNow`.
 */
export class CollectiveBackend implements AveragingBackend {
  readonly holdsRound = false;
  reformations = 0;
  #group: ProcessGroup | undefined;
  /** Why joining the survivors' group failed (thrown at the next SyncNow). */
  #reformFailure: unknown;

  constructor(
    private readonly context: AveragingContext,
    private readonly options: CollectiveBackendOptions,
  ) {
    this.#group = options.group;
  }

  /** The live process group (undefined while it is being re-formed). */
  get group(): ProcessGroup | undefined {
    return this.#group;
  }

  async serve(command: AveragingCommand): Promise<void> {
    switch (command.type) {
      case 'SyncNow':
        this.#syncNow();
        return;
      case 'RequestNewNcclId':
        await this.#mintRendezvous();
        return;
      default:
        throw new FlodlError('ERR_INVALID_ARGUMENT', `host averaging in collective mode (${command.type})`, {
          op: OP,
        });
    }
  }

  peerDied(): void {
    // The group includes a dead rank: every later collective on it would fail or hang.
    this.#group?.abort();
    this.#group = undefined;
  }

  reform(message: NewNcclSession): void {
    this.#group?.abort();
    this.#group = undefined;
    const rendezvous = decodeRendezvous(message.uidBytes);
    try {
      if (!rendezvous) {
        throw new FlodlError('ERR_WIRE', 'NewNcclSession carries no host:port rendezvous', {
          op: `${OP}.reform`,
          expected: 'host:port',
          got: new TextDecoder().decode(message.uidBytes),
        });
      }
      this.#group = joinGroup(this.context.model, {
        rank: message.newRank,
        worldSize: message.newWorldSize,
        ...rendezvous,
        timeoutMs: this.context.timeoutMs,
      });
      this.#reformFailure = undefined;
      this.reformations += 1;
    } catch (error) {
      this.#reformFailure = error;
    }
  }

  close(): void {
    this.#group?.destroy();
    releaseCollectiveBuffers(this.context.model);
  }

  /** The lowest survivor: a fresh rendezvous on this host, where it will be the new rank 0. */
  async #mintRendezvous(): Promise<void> {
    const host = this.options.processGroupHost;
    const port = await freePortOn(host);
    this.context.control.send({ type: 'NewNcclIdGenerated', uidBytes: encodeRendezvous({ host, port }) });
  }

  #syncNow(): void {
    const context = this.context;
    const group = this.#group;
    if (!group) {
      if (this.#reformFailure !== undefined) throw this.#reformFailure;
      return; // the group died with a peer: this round was aborted, a re-formation is coming
    }
    const { version, steps, mass } = context.closeWindow(context.version + 1);
    let result: CollectiveResult;
    try {
      result = collectiveAverage(group, context.model, mass);
    } catch (error) {
      if (!isPeerFailure(error)) throw error;
      // The model is as it was (the collective writes it only at the end): reopen the window,
      // drop the group, and wait for the coordinator's DeclareDead and re-formation.
      context.reopenWindow(steps);
      group.abort();
      this.#group = undefined;
      return;
    }
    context.control.syncAck({
      stepCount: context.stepCount,
      divergence: result.divergence,
      preNorm: result.preNorm,
      postNorm: result.postNorm,
    });
    context.applied({ version, steps, mass, totalMass: result.totalMass, blended: false });
  }
}
