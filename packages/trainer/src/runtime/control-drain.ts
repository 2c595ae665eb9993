// The rank's side of the control channel: what the coordinator said, followed at step points
// (plans, roles, global step, throttling, callbacks, aggregated metrics, shutdown).

import type { CoordinatorMessage, DistributedSession, EpochMetrics, EpochPlan } from '@flodl/distributed';
import type { SaveReason } from '@flodl/distributed/wire';

/** A callback's outcome, as the coordinator hears it. */
export interface CallbackOutcome {
  error?: string;
  elapsedMs: number;
}

/** What a control message asks of the runtime beyond the drain's own state. */
export interface ControlHost {
  readonly rank: number;
  /** Whether this rank has an eval callback to run when elected. */
  readonly evaluates: boolean;
  /** Appends `ExtendPartition` picks to the open plan of `epoch`; false when none is open. */
  extendOpenPlan(epoch: number, offset: number, size: number): boolean;
  setGlobalStep(globalStep: number): void;
  evaluate(): Promise<CallbackOutcome & { metric: number }>;
  checkpoint(version: number): Promise<CallbackOutcome>;
  /** Another rank writes this `Checkpoint`'s bundle: this rank adds its own optimizer state. */
  checkpointPart(version: number): Promise<void>;
  /**
   * `ShutdownWithSave` reached a rank not yet shut down: the coordinator chose it, the
   * freshest, to save the run alone (a graceful stop, which every rank gets, is `saveAtStop`).
   */
  saveBeforeShutdown(reason: SaveReason): Promise<void>;
  /** A graceful stop: every rank saves (its optimizer state; the elected rank the bundle). */
  saveAtStop(): Promise<void>;
}

/**
 * Queues what the coordinator sends (`receive`, from the session's `onControl`) and follows it
 * when the runtime services control: between steps and while idle between plans, so a
 * `SyncNow` is never left waiting on a rank that is blocked elsewhere.
 */
export class ControlDrain {
  /** Plans handed out and not begun yet, oldest first. */
  readonly plans: EpochPlan[] = [];
  /** The rank the coordinator elected for callbacks. */
  epochRole: number | undefined;
  /** The latest aggregated epoch the coordinator broadcast. */
  latest: EpochMetrics | undefined;
  metricsStream: EpochMetrics[] | undefined;
  evalStream: [number, number][] | undefined;
  /** A `Shutdown` / `ShutdownWithSave` arrived, or the runtime was asked to stop. */
  shutdown = false;
  readonly #host: ControlHost;
  #inbox: CoordinatorMessage[] = [];
  #throttled = false;
  #throttledAt = 0;
  /** A graceful stop's bundle is due once the messages in hand are followed. */
  #stopSave = false;

  constructor(host: ControlHost) {
    this.#host = host;
  }

  /** Queues `message`; `version` is the averaging round the rank last applied. */
  receive(message: CoordinatorMessage, version: number): void {
    // A Throttle holds until the round after the one applied when it arrived.
    if (message.type === 'Throttle') this.#throttledAt = version;
    this.#inbox.push(message);
  }

  /** Follows every message that arrived, then holds while throttled (until the next round or the end). */
  async service(session: DistributedSession, stopped: () => boolean): Promise<void> {
    await session.drain();
    await this.#handleInbox(session);
    if (!this.#throttled) return;
    // Throttle: hold until the next averaging round (or the end of the run).
    const version = this.#throttledAt;
    while (session.version === version && !stopped()) {
      await session.awaitControl();
      await session.drain();
      await this.#handleInbox(session);
    }
    this.#throttled = false;
  }

  async #handleInbox(session: DistributedSession): Promise<void> {
    while (this.#inbox.length > 0) {
      const message = this.#inbox.shift() as CoordinatorMessage;
      await this.#handle(session, message);
    }
    if (!this.#stopSave) return;
    this.#stopSave = false;
    // What came behind the stop in its round (the SetGlobalStep) is taken in first.
    await session.drain();
    await this.#handleInbox(session);
    await this.#host.saveAtStop();
  }

  async #handle(session: DistributedSession, message: CoordinatorMessage): Promise<void> {
    const host = this.#host;
    switch (message.type) {
      case 'StartEpoch':
        this.plans.push(message.plan);
        return;
      case 'ExtendPartition':
        if (!host.extendOpenPlan(message.epoch, message.offset, message.size)) {
          this.plans.push({
            epoch: message.epoch,
            partitionOffset: message.offset,
            partitionSize: message.size,
          });
        }
        return;
      case 'SetGlobalStep':
        host.setGlobalStep(message.globalStep);
        return;
      case 'SetEpochCallbackRole':
        this.epochRole = message.rank;
        return;
      case 'Throttle':
        this.#throttled = true;
        return;
      case 'EpochAggregated':
        this.latest = message.metrics;
        this.metricsStream?.push(message.metrics);
        return;
      case 'EvalBroadcast':
        this.evalStream?.push([message.epoch, message.metric]);
        return;
      case 'ExecuteEvalCallback': {
        if (message.targetRank !== host.rank || !host.evaluates) return;
        const result = await host.evaluate();
        session.control.send({
          type: 'EvalResult',
          scheduleId: message.scheduleId,
          epoch: message.epoch,
          metric: result.metric,
          elapsedMs: result.elapsedMs,
          ...(result.error === undefined ? {} : { error: result.error }),
        });
        return;
      }
      case 'Checkpoint': {
        if (message.targetRank !== host.rank) {
          await host.checkpointPart(message.version);
          return;
        }
        const result = await host.checkpoint(message.version);
        session.control.send({
          type: 'CheckpointResult',
          version: message.version,
          elapsedMs: result.elapsedMs,
          ...(result.error === undefined ? {} : { error: result.error }),
        });
        return;
      }
      case 'Shutdown':
        this.shutdown = true;
        return;
      case 'ShutdownWithSave':
        // A graceful stop reaches every rank at the same round: each saves once the round's
        // messages are in. Otherwise this rank holds the freshest state and saves it alone.
        if (!this.shutdown) {
          if (message.reason === 'GracefulShutdown') this.#stopSave = true;
          else await host.saveBeforeShutdown(message.reason);
        }
        this.shutdown = true;
        return;
      default:
        // DeclareDead / NewNcclSession / heartbeats: the session owns them.
        return;
    }
  }
}
