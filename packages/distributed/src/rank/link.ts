// The rank link: a rank's one door to its coordinator. It owns the connection (one control
// connection, hosted off the main thread by RankClient, and in host modes the data channel
// beside it), the one inbox of coordinator messages, and a typed call for everything a rank
// tells the coordinator.

import { openDataChannel } from '../wire/client.js';
import type { DataChannel } from '../wire/data-channel.js';
import type {
  Batch,
  CheckpointResult,
  CoordinatorMessage,
  EvalResult,
  IntentKind,
  Metrics,
  SyncAck,
} from '../wire/messages.js';
import { resolveRunSecret } from '../wire/secret.js';
import { RankClient, type RankClientOptions, type WaitForOptions } from './client.js';

/** Options of {@link RankLink.connect}. */
export interface RankLinkOptions extends RankClientOptions {
  /**
   * Host modes: open the data channel to the coordinator host (parameters travel on it) before
   * the control connection. Default false.
   */
  dataChannel?: boolean;
}

/** A plan's report (`Metrics` on the wire): the epoch, its batches and samples, timings, scalars. */
export type PlanReport = Omit<Metrics, 'type'>;

/**
 * A rank's end of the control plane, and the only way it talks to the coordinator. `connect`
 * dials once: the control connection (its heartbeats run on a worker thread, so they flow
 * during long native calls) and, in host modes, the data channel. What the coordinator sends
 * waits in one inbox until the rank drains it at a step point (`poll`); what the rank sends
 * goes through one typed call per message. The rank's session and its training runtime share
 * one link.
 *
 * @example
 * ```ts
 * const link = await RankLink.connect({ coordinator: '127.0.0.1:29500', rank, worldSize });
 * link.reportBatch({ batchMs: 41.5, dataMs: 2.1, stepCount: 1, batchLoss: 0.71 });
 * for (const message of link.poll()) follow(message);
 * await link.close();
 * ```
 */
export class RankLink {
  private constructor(
    private readonly client: RankClient,
    /** Host modes: the data channel to the coordinator host. */
    readonly data: DataChannel | undefined,
  ) {}

  /**
   * Connects to the coordinator: the data channel first when asked (host modes), then the
   * control connection; the coordinator joins the rank once both are up.
   *
   * @throws FlodlError ERR_TIMEOUT when the coordinator cannot be reached or does not answer in time
   * @throws WireError ERR_WIRE `handshake` when the coordinator refuses (the reason is in the message)
   * @throws FlodlError ERR_INVALID_ARGUMENT for bad options
   */
  static async connect(options: RankLinkOptions): Promise<RankLink> {
    const { dataChannel, ...clientOptions } = options;
    const secret = options.secret ?? resolveRunSecret();
    let data: DataChannel | undefined;
    if (dataChannel) {
      const split = options.coordinator.lastIndexOf(':');
      data = await openDataChannel({
        host: options.coordinator.slice(0, split).replace(/^\[|\]$/g, ''),
        port: Number(options.coordinator.slice(split + 1)),
        secret,
        rank: options.rank,
        worldSize: options.worldSize,
        ...(options.connectTimeoutMs === undefined ? {} : { connectTimeoutMs: options.connectTimeoutMs }),
        capabilities: options.capabilities ?? [],
      });
    }
    try {
      return new RankLink(await RankClient.connect({ ...clientOptions, secret }), data);
    } catch (error) {
      data?.close();
      throw error;
    }
  }

  // ---- the inbox ----------------------------------------------------------------------------

  /** Every coordinator message that arrived since the last call, oldest first (never blocks). */
  poll(): CoordinatorMessage[] {
    return this.client.poll();
  }

  /** Resolves `true` as soon as a message is in (at once when one waits), `false` after `timeoutMs`. */
  arrival(timeoutMs: number): Promise<boolean> {
    return this.client.arrival(timeoutMs);
  }

  /**
   * Blocks this thread until a message matching `predicate` arrives and returns it; the ones
   * before it go to `onControl` or stay in the inbox (see `RankClient.waitFor`).
   *
   * @throws FlodlError ERR_TIMEOUT when none matches within `timeoutMs`
   */
  waitFor<T extends CoordinatorMessage>(
    predicate: ((message: CoordinatorMessage) => message is T) | ((message: CoordinatorMessage) => boolean),
    options: WaitForOptions = {},
  ): T {
    return this.client.waitFor<T>(predicate, options);
  }

  /** Messages that arrived and were not drained yet. */
  get pending(): number {
    return this.client.pending;
  }

  /** True once the connection was closed or lost. */
  get isClosed(): boolean {
    return this.client.isClosed;
  }

  // ---- what a rank tells the coordinator -------------------------------------------------

  /** One training step (`Batch`): its timing, the step count and the loss. */
  reportBatch(batch: Omit<Batch, 'type'>): void {
    this.client.reportBatch(batch);
  }

  /** Hands the step reports that wait to the worker now (the coordinator plans from them). */
  flush(): void {
    this.client.flush();
  }

  /** A closed plan's report (`Metrics`). */
  reportPlan(report: PlanReport): void {
    this.client.metrics(report);
  }

  /** The outcome of an elected eval (`EvalResult`). */
  evalResult(result: Omit<EvalResult, 'type'>): void {
    this.client.send({ type: 'EvalResult', ...result });
  }

  /** The outcome of an elected checkpoint (`CheckpointResult`). */
  checkpointResult(result: Omit<CheckpointResult, 'type'>): void {
    this.client.send({ type: 'CheckpointResult', ...result });
  }

  /** How long the epoch callback of `epoch` ran (`EpochFnElapsed`). */
  epochFnElapsed(epoch: number, elapsedMs: number): void {
    this.client.send({ type: 'EpochFnElapsed', epoch, elapsedMs });
  }

  /** The learning rate changed (`LrUpdate`). */
  lrUpdate(lr: number): void {
    this.client.send({ type: 'LrUpdate', lr });
  }

  /** Asks for an eval or a checkpoint at the next coherent boundary (a request: the coordinator decides). */
  intent(intent: IntentKind): void {
    this.client.intent(intent);
  }

  /** A collective round is done on this rank (`SyncAck`; acks are not batches). */
  syncAck(ack: Omit<SyncAck, 'type'>): void {
    this.client.syncAck(ack);
  }

  /** This rank's snapshot of round `version` is on the data channel (`SnapshotReady`). */
  snapshotReady(version: number): void {
    this.client.send({ type: 'SnapshotReady', version });
  }

  /** The lowest survivor minted the new group's rendezvous (`NewNcclIdGenerated`). */
  rendezvousMinted(uidBytes: Uint8Array): void {
    this.client.send({ type: 'NewNcclIdGenerated', uidBytes });
  }

  /** Announces a clean exit (`close` sends it too). */
  exiting(): void {
    this.client.exiting();
  }

  /** Closes the data channel and the control connection (see `RankClient.close`). Idempotent. */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    this.data?.close();
    return this.client.close(options);
  }
}
