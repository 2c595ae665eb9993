// The host backend (CpuSync / CpuCadence / CpuAsync): a round ships this rank's mass-scaled
// snapshot over the data channel to the coordinator host, which averages the contributions by
// mass and sends the consensus back.
import { FlodlError } from '@flodl/tensor-native';
import type { DataChannel } from '../../wire/data-channel.js';
import type { CoordinatorMessage } from '../../wire/messages.js';
import type { HostTensor } from '../host.js';
import { applyConsensus, releaseSnapshotBuffers, snapshotContribution } from '../model.js';
import type { AveragingBackend, AveragingCommand, AveragingContext, AveragingWindow } from './api.js';

const OP = 'DistributedSession';

/** Options of {@link HostBackend}. */
export interface HostBackendOptions {
  /** The data channel to the coordinator host, opened at join. */
  data: DataChannel;
  /**
   * CpuAsync: the rank keeps training after its snapshot and takes the consensus when it
   * arrives; CpuSync / CpuCadence hold until it is applied.
   */
  async: boolean;
  /** CpuAsync only: EASGD blend factor α in (0, 1]; unset overwrites with the consensus. */
  easgdAlpha?: number;
}

/**
 * Streams a mass-scaled snapshot over the data channel on `RequestParams` and applies the
 * consensus on `Update`. CpuSync / CpuCadence wait for it inside the request, so every rank
 * leaves the round equal; CpuAsync keeps training and EASGD-blends it in when it arrives. A
 * death needs nothing here: the coordinator host completes the round with the survivors.
 */
export class HostBackend implements AveragingBackend {
  readonly holdsRound: boolean;
  readonly reformations = 0;
  #pendingWindow: AveragingWindow | undefined;

  constructor(
    private readonly context: AveragingContext,
    private readonly options: HostBackendOptions,
  ) {
    this.holdsRound = !options.async;
  }

  /** The data channel to the coordinator host. */
  get data(): DataChannel {
    return this.options.data;
  }

  async serve(command: AveragingCommand): Promise<void> {
    switch (command.type) {
      case 'RequestParams':
        await this.#requestParams(command.version);
        return;
      case 'Update':
        await this.#update(command.version);
        return;
      default:
        throw new FlodlError('ERR_INVALID_ARGUMENT', `${command.type} in a host averaging mode`, { op: OP });
    }
  }

  peerDied(): void {}

  reform(): void {}

  close(): void {
    this.options.data.close();
    releaseSnapshotBuffers(this.context.model);
  }

  async #requestParams(version: number): Promise<void> {
    const context = this.context;
    const window = context.closeWindow(version);
    // Bytes kept for the model: sent before the next round's snapshot writes them again.
    await this.options.data.send(version, snapshotContribution(context.model, window.mass));
    context.control.send({ type: 'SnapshotReady', version });
    this.#pendingWindow = window;
    if (this.options.async) return;
    // CpuSync / CpuCadence: hold until the consensus is in, so every rank leaves the round equal.
    const backlog = context.backlog;
    const deadline = Date.now() + context.timeoutMs;
    for (;;) {
      const messages = context.control.poll();
      const index = messages.findIndex((message) => message.type === 'Update');
      // A Throttle that came before the Update is served by this very hold.
      const notThrottle = (message: CoordinatorMessage) => message.type !== 'Throttle';
      if (index >= 0) {
        backlog.push(...messages.slice(0, index).filter(notThrottle), ...messages.slice(index + 1));
        await this.#update((messages[index] as { version: number }).version);
        // A graceful stop sent behind this round is served now, with what came before it
        // (SetGlobalStep): the rank stops at this round, before another step.
        if (backlog.some(isGracefulStop)) {
          for (const message of backlog.splice(0)) await context.serve(message);
        }
        return;
      }
      backlog.push(...messages.filter(notThrottle));
      // The run ends without this round (a save-and-exit after deaths): stop waiting for it.
      // A graceful stop is served after the round (sent behind its RequestParams): every rank
      // leaves it with the consensus, then stops.
      const end = backlog.findIndex(
        (message) => message.type === 'Shutdown' || message.type === 'ShutdownWithSave',
      );
      const ending = backlog[end];
      if (end >= 0 && (!(ending && isGracefulStop(ending)) || Date.now() > deadline)) {
        const [message] = backlog.splice(end, 1);
        await context.serve(message as CoordinatorMessage);
        return;
      }
      if (Date.now() > deadline) {
        throw new FlodlError('ERR_TIMEOUT', `no Update for round ${version} within ${context.timeoutMs} ms`, {
          op: OP,
        });
      }
      await context.awaitControl(deadline - Date.now());
    }
  }

  async #update(version: number): Promise<void> {
    const context = this.context;
    const data = this.options.data;
    const received = await data.receiveContribution({ timeoutMs: context.timeoutMs });
    if (received.version !== version) {
      throw new FlodlError(
        'ERR_RANK_FAILED',
        `consensus of round ${received.version} for Update ${version}`,
        { op: OP },
      );
    }
    const consensus: HostTensor[] = received.tensors.map((tensor) => ({
      name: tensor.name,
      dtype: tensor.dtype,
      shape: tensor.shape,
      mass: tensor.mass,
      bytes: tensor.bytes,
    }));
    const alpha = this.options.async ? this.options.easgdAlpha : undefined;
    applyConsensus(context.model, consensus, alpha === undefined ? {} : { easgdAlpha: alpha });
    const window = this.#pendingWindow?.version === version ? this.#pendingWindow : { steps: 0, mass: 0 };
    this.#pendingWindow = undefined;
    context.applied({
      version,
      steps: window.steps,
      mass: window.mass,
      totalMass: consensus.find((tensor) => tensor.name.startsWith('p:'))?.mass ?? 0,
      consensus,
      blended: alpha !== undefined,
    });
    // Applied and seen: its buffers receive the next round's consensus (no fresh memory per round).
    data.recycle(received.tensors);
  }
}

/** A graceful stop (`ShutdownWithSave(GracefulShutdown)`): served after the round it was sent behind. */
export function isGracefulStop(message: CoordinatorMessage): boolean {
  return message.type === 'ShutdownWithSave' && message.reason === 'GracefulShutdown';
}
