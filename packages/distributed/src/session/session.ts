import type { Module } from '@flodl/nn';
import { FlodlError, invalidArgument, type ProcessGroup } from '@flodl/tensor-native';
import type {
  AveragedEvent,
  AveragingBackend,
  AveragingContext,
  AveragingWindow,
} from '../averaging/backends/api.js';
import { CollectiveBackend, joinGroup } from '../averaging/backends/collective.js';
import { HostBackend } from '../averaging/backends/host.js';
import { windowMass } from '../averaging/host.js';
import { isCollectiveMode, LAUNCH_MODES, type LaunchMode } from '../modes.js';
import { RankClient } from '../rank/client.js';
import { ControlClient } from '../wire/client.js';
import type { DataChannel } from '../wire/data-channel.js';
import { BOOTSTRAP_CAPABILITY } from '../wire/handshake.js';
import { livenessFromEnv } from '../wire/liveness.js';
import type { CoordinatorMessage, SaveReason } from '../wire/messages.js';
import { resolveRunSecret } from '../wire/secret.js';

export type { AveragedEvent } from '../averaging/backends/api.js';
export { collectiveBackendFor } from '../averaging/backends/collective.js';
export { isCollectiveMode } from '../modes.js';

/** Environment variable with the process group's rendezvous port (collective modes). */
export const PROCESS_GROUP_PORT_ENV = 'FLODL_PG_PORT';

/** Options of {@link DistributedSession.join}; unset values come from the launcher's environment. */
export interface SessionOptions {
  /** Default `FLODL_MODE`. */
  mode?: LaunchMode;
  /** Shapes the mass: `steps^γ`. Default 1. */
  gamma?: number;
  /** CpuAsync only: EASGD blend factor α in (0, 1]; unset overwrites with the consensus. */
  easgdAlpha?: number;
  /** Collective modes: rendezvous port. Default `FLODL_PG_PORT`. */
  processGroupPort?: number;
  /**
   * Collective modes: the rendezvous host (rank 0's address) of the process group, and where
   * the lowest survivor hosts the new one after a death. Default `'127.0.0.1'` (one host).
   */
  processGroupHost?: string;
  /**
   * Bound on every wait (collective, consensus, shutdown), ms. Default twice the run's
   * liveness setting (`FLODL_LIVENESS_MS`; 60 000 when unset).
   */
  timeoutMs?: number;
  /**
   * Receives the coordinator messages the training loop acts on: `StartEpoch`,
   * `ExtendPartition` (a dead rank's leftover samples), roles, `SetGlobalStep`, `DeclareDead`,
   * `NewNcclSession` (after the group was re-formed), `Shutdown` / `ShutdownWithSave`.
   */
  onControl?: (message: CoordinatorMessage) => void;
  /** Called right before this rank's state enters an averaging round. */
  onBeforeAverage?: (round: { version: number; steps: number; mass: number }) => void;
  /** Called after an averaging round was applied to the model. */
  onAveraged?: (event: AveragedEvent) => void;
  /** The module hosting the RankClient's control worker (bundled builds / tests). */
  workerUrl?: URL;
  /**
   * Capabilities announced in this rank's `Hello`s, e.g. `encodeRunSettings(...)`: the
   * launcher forms its coordinator from them and refuses ranks that disagree. Default none.
   */
  capabilities?: string[];
}

/** What the training loop reports after each optimizer step. */
export interface StepReport {
  loss: number;
  /** Wall time of the step, ms. Default: the time since the previous report. */
  batchMs?: number;
  /** Part of it spent waiting for data, ms. Default 0. */
  dataMs?: number;
  /** Optimizer steps this report covers. Default 1. */
  steps?: number;
  /** ‖params‖ (global L2), sent every few steps. Default none. */
  paramNorm?: number;
}

const OP = 'DistributedSession';

/**
 * Longest single wait of a hold on the coordinator before it looks at its deadline and
 * stop flags again, ms; a message ends the wait at once.
 */
const HOLD_SLICE_MS = 25;

/**
 * A rank's end of a distributed run: reports each step's timing to the coordinator and, at
 * step points, follows its averaging commands through the averaging backend of the run's mode
 * (`averaging/backends/`). Collective modes (NcclSync / NcclCadence; Gloo on CPU) average
 * parameters and float buffers with the mass law through a process group on `SyncNow` and ack
 * with `SyncAck`. Host modes (CpuSync / CpuCadence / CpuAsync) stream a mass-scaled snapshot
 * over the data channel on `RequestParams` and apply the consensus on `Update` (CpuSync /
 * CpuCadence wait for it; CpuAsync keeps training and EASGD-blends it in when it arrives).
 *
 * Deaths: in host modes the coordinator host completes a round with the survivors and the
 * session goes on. In collective modes a collective that fails on a dead peer leaves the model
 * as it was; the session aborts the group, and on the coordinator's `NewNcclSession` joins the
 * survivors' new group (new dense ranks in ascending global order, a fresh rendezvous minted
 * by the lowest survivor on `RequestNewNcclId`). When the run cannot go on the coordinator
 * sends `ShutdownWithSave`: `stopped` turns true and `saveRequested` names the reason on the
 * rank that must persist its state.
 *
 * @example
 * ```ts
 * const session = await DistributedSession.join(model);
 * while (!session.stopped && step < steps) { trainStep(); await session.afterStep({ loss }); }
 * await session.finish();
 * ```
 */
export class DistributedSession {
  /** Version of the last applied round. */
  version = 0;
  /** True once the coordinator sent `Shutdown` or `ShutdownWithSave`. */
  stopped = false;
  /** Set when the coordinator asked this rank to save its state before exiting (`ShutdownWithSave`). */
  saveRequested: SaveReason | undefined;
  #stepCount = 0;
  #windowSteps = 0;
  #lastReport = performance.now();
  #backlog: CoordinatorMessage[] = [];
  #finished = false;
  readonly #backend: AveragingBackend;

  private constructor(
    readonly model: Module,
    readonly mode: LaunchMode,
    readonly rank: number,
    readonly worldSize: number,
    readonly control: RankClient,
    join: { group: ProcessGroup } | { data: DataChannel },
    private readonly options: SessionOptions,
    private readonly timeoutMs: number,
  ) {
    const context = this.#context();
    this.#backend =
      'group' in join
        ? new CollectiveBackend(context, {
            group: join.group,
            processGroupHost: options.processGroupHost ?? '127.0.0.1',
          })
        : new HostBackend(context, {
            data: join.data,
            async: mode === 'CpuAsync',
            ...(options.easgdAlpha === undefined ? {} : { easgdAlpha: options.easgdAlpha }),
          });
  }

  /** Collective modes: the live process group (undefined while it is being re-formed). */
  get group(): ProcessGroup | undefined {
    return this.#backend instanceof CollectiveBackend ? this.#backend.group : undefined;
  }

  /** Host modes: the data channel to the coordinator host. */
  get data(): DataChannel | undefined {
    return this.#backend instanceof HostBackend ? this.#backend.data : undefined;
  }

  /** Collective modes: process groups formed after deaths. */
  get reformations(): number {
    return this.#backend.reformations;
  }

  /**
   * Joins the run this process was launched into (`FLODL_RANK`, `FLODL_WORLD_SIZE`,
   * `FLODL_COORDINATOR`, `FLODL_SECRET`, `FLODL_MODE`): connects the control client, opens
   * the data channel (host modes) or the process group (collective modes), and waits for
   * formation (the coordinator's first `StartEpoch` or `SetGlobalStep`).
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT when the role is missing or malformed
   */
  static async join(model: Module, options: SessionOptions = {}): Promise<DistributedSession> {
    const env = process.env;
    const rank = Number(env.FLODL_RANK);
    const worldSize = Number(env.FLODL_WORLD_SIZE);
    if (!Number.isInteger(rank) || !Number.isInteger(worldSize) || rank < 0 || rank >= worldSize) {
      throw invalidArgument(
        `${OP}.join`,
        'FLODL_RANK / FLODL_WORLD_SIZE',
        'a rank in [0, world size)',
        `${env.FLODL_RANK}/${env.FLODL_WORLD_SIZE}`,
      );
    }
    const mode = (options.mode ?? env.FLODL_MODE) as LaunchMode;
    if (!LAUNCH_MODES.includes(mode))
      throw invalidArgument(`${OP}.join`, 'mode', LAUNCH_MODES.join(' | '), mode);
    if (options.easgdAlpha !== undefined && mode !== 'CpuAsync') {
      throw invalidArgument(`${OP}.join`, 'easgdAlpha', 'only with CpuAsync', mode);
    }
    const coordinator = env.FLODL_COORDINATOR ?? '';
    const timeoutMs = options.timeoutMs ?? livenessFromEnv().sessionTimeoutMs;
    const secret = resolveRunSecret();
    let data: DataChannel | undefined;
    if (!isCollectiveMode(mode)) {
      // RankClient has no data channel: a short-lived ControlClient opens it, then hands
      // the control channel over to the RankClient (the host joins the rank on the second).
      const split = coordinator.lastIndexOf(':');
      const bootstrap = await ControlClient.connect({
        host: coordinator.slice(0, split).replace(/^\[|\]$/g, ''),
        port: Number(coordinator.slice(split + 1)),
        secret,
        rank,
        worldSize,
        connectTimeoutMs: timeoutMs,
        capabilities: [BOOTSTRAP_CAPABILITY, ...(options.capabilities ?? [])],
      });
      data = await bootstrap.openDataChannel();
      await bootstrap.close();
    }
    const control = await RankClient.connect({
      coordinator,
      rank,
      worldSize,
      secret,
      connectTimeoutMs: timeoutMs,
      ...(options.workerUrl ? { workerUrl: options.workerUrl } : {}),
      ...(options.capabilities ? { capabilities: options.capabilities } : {}),
    });
    let join: { group: ProcessGroup } | { data: DataChannel } | undefined = data && { data };
    if (isCollectiveMode(mode)) {
      const port = options.processGroupPort ?? Number(env[PROCESS_GROUP_PORT_ENV]);
      if (!Number.isInteger(port) || port < 1) {
        throw invalidArgument(`${OP}.join`, PROCESS_GROUP_PORT_ENV, 'a port for the process group', port);
      }
      join = {
        group: joinGroup(model, {
          rank,
          worldSize,
          host: options.processGroupHost ?? '127.0.0.1',
          port,
          timeoutMs,
        }),
      };
    }
    // Formation: wait until the coordinator has every rank (its first StartEpoch or SetGlobalStep).
    const formed = control.waitFor(
      (message) => message.type === 'StartEpoch' || message.type === 'SetGlobalStep',
      {
        timeoutMs,
      },
    );
    options.onControl?.(formed);
    return new DistributedSession(
      model,
      mode,
      rank,
      worldSize,
      control,
      join as { group: ProcessGroup } | { data: DataChannel },
      options,
      timeoutMs,
    );
  }

  /** Steps this rank has run. */
  get stepCount(): number {
    return this.#stepCount;
  }

  /** Steps since this rank's state last entered an averaging round. */
  get windowSteps(): number {
    return this.#windowSteps;
  }

  /** Reports the step(s) just taken and follows every control message that arrived. */
  async afterStep(report: StepReport): Promise<void> {
    const steps = report.steps ?? 1;
    if (!Number.isInteger(steps) || steps < 1)
      throw invalidArgument(`${OP}.afterStep`, 'steps', 'an integer ≥ 1', steps);
    const now = performance.now();
    this.#stepCount += steps;
    this.#windowSteps += steps;
    this.control.reportBatch({
      batchMs: report.batchMs ?? now - this.#lastReport,
      dataMs: report.dataMs ?? 0,
      stepCount: this.#stepCount,
      batchLoss: report.loss,
      ...(report.paramNorm === undefined ? {} : { paramNorm: report.paramNorm }),
    });
    this.#lastReport = now;
    await this.drain();
  }

  /**
   * Waits, without blocking the event loop, until a coordinator message is in, for one
   * slice of a hold (25 ms) or the `leftMs` its caller has left before a deadline, whichever
   * is shorter (at least 1 ms); `true` when a message is in. A hold on the coordinator (a
   * round's consensus, a lockstep round, the next plan) calls it between its `drain`s, so it
   * wakes when the message lands rather than on a timer tick, and checks its deadline and
   * stop flags at least once a slice.
   */
  awaitControl(leftMs = Number.POSITIVE_INFINITY): Promise<boolean> {
    return this.control.arrival(Math.max(1, Math.min(HOLD_SLICE_MS, leftMs)));
  }

  /** Follows every control message that arrived (a step point without a step). */
  async drain(): Promise<void> {
    const messages = [...this.#backlog.splice(0), ...this.control.poll()];
    // A SyncNow followed by a DeclareDead belongs to a round the coordinator aborted.
    let lastDeath = -1;
    for (const [index, message] of messages.entries()) if (message.type === 'DeclareDead') lastDeath = index;
    let requested = false;
    for (const [index, message] of messages.entries()) {
      if (message.type === 'SyncNow' && index < lastDeath) continue;
      // CpuSync's Throttle after a RequestParams is served by the hold until the Update.
      if (message.type === 'Throttle' && requested) continue;
      if (message.type === 'RequestParams' && this.#backend.holdsRound) requested = true;
      await this.#handle(message);
    }
  }

  /**
   * Announces the end of training, keeps serving averaging rounds until the coordinator's
   * `Shutdown`, then closes everything. Idempotent.
   *
   * @throws FlodlError ERR_TIMEOUT when no Shutdown arrives within the timeout
   */
  async finish(): Promise<void> {
    if (this.#finished) return;
    this.#finished = true;
    try {
      this.control.exiting();
      const deadline = Date.now() + this.timeoutMs;
      while (!this.stopped) {
        await this.drain();
        if (this.stopped) break;
        if (Date.now() > deadline) {
          throw new FlodlError('ERR_TIMEOUT', `no Shutdown within ${this.timeoutMs} ms`, {
            op: `${OP}.finish`,
          });
        }
        await this.awaitControl();
      }
    } finally {
      this.#backend.close();
      await this.control.close();
    }
  }

  async #handle(message: CoordinatorMessage): Promise<void> {
    switch (message.type) {
      case 'SyncNow':
      case 'RequestParams':
      case 'Update':
      case 'RequestNewNcclId':
        await this.#backend.serve(message);
        return;
      case 'ShutdownWithSave':
        this.saveRequested = message.reason;
        this.stopped = true;
        this.options.onControl?.(message);
        return;
      case 'Shutdown':
        this.stopped = true;
        this.options.onControl?.(message);
        return;
      case 'DeclareDead':
        this.#backend.peerDied();
        this.options.onControl?.(message);
        return;
      case 'NewNcclSession':
        this.#backend.reform(message);
        this.options.onControl?.(message);
        return;
      default:
        this.options.onControl?.(message);
    }
  }

  /** What the averaging backend may read and do of this session. */
  #context(): AveragingContext {
    const session = this;
    return {
      model: this.model,
      control: this.control,
      timeoutMs: this.timeoutMs,
      backlog: this.#backlog,
      get version() {
        return session.version;
      },
      get stepCount() {
        return session.#stepCount;
      },
      closeWindow: (version) => this.#closeWindow(version),
      reopenWindow: (steps) => {
        this.#windowSteps += steps;
      },
      applied: (event) => {
        this.version = event.version;
        this.options.onAveraged?.(event);
      },
      serve: (message) => this.#handle(message),
      awaitControl: (leftMs) => this.awaitControl(leftMs),
    };
  }

  #closeWindow(version: number): AveragingWindow {
    const steps = this.#windowSteps;
    const mass = windowMass(steps, this.options.gamma ?? 1);
    this.options.onBeforeAverage?.({ version, steps, mass });
    this.#windowSteps = 0;
    return { version, steps, mass };
  }
}
