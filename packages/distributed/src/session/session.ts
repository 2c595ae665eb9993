import type { Module } from '@flodl/nn';
import {
  createProcessGroup,
  type Device,
  type DistributedBackend,
  FlodlError,
  invalidArgument,
  type ProcessGroup,
} from '@flodl/tensor-native';
import {
  type CollectiveResult,
  collectiveAverage,
  releaseCollectiveBuffers,
} from '../averaging/collective.js';
import { type HostTensor, windowMass } from '../averaging/host.js';
import { applyConsensus, releaseSnapshotBuffers, snapshotContribution } from '../averaging/model.js';
import { LAUNCH_MODES, type LaunchMode } from '../launcher/options.js';
import { RankClient } from '../rank/client.js';
import { ControlClient } from '../wire/client.js';
import type { DataChannel } from '../wire/data-channel.js';
import { BOOTSTRAP_CAPABILITY } from '../wire/handshake.js';
import { livenessFromEnv } from '../wire/liveness.js';
import type { CoordinatorMessage, NewNcclSession, SaveReason } from '../wire/messages.js';
import { resolveRunSecret } from '../wire/secret.js';
import { decodeRendezvous, encodeRendezvous, freePortOn } from './rendezvous.js';

/** Environment variable with the process group's rendezvous port (collective modes). */
export const PROCESS_GROUP_PORT_ENV = 'FLODL_PG_PORT';

/** True for the modes that average through a device collective (Gloo on CPU). */
export function isCollectiveMode(mode: LaunchMode): boolean {
  return mode === 'NcclSync' || mode === 'NcclCadence';
}

/**
 * The process-group backend and device for `model`'s parameters: `nccl` on their CUDA device,
 * `gloo` on the CPU (a model without parameters averages nothing on the CPU).
 */
export function collectiveBackendFor(model: Module): { backend: DistributedBackend; device: Device } {
  const device = model.parameters()[0]?.device ?? 'cpu';
  return device === 'cpu' ? { backend: 'gloo', device } : { backend: 'nccl', device };
}

/** What a collective failure looks like when a peer died or stalled (the group is unusable after it). */
function isPeerFailure(error: unknown): boolean {
  return FlodlError.isInstance(error) && ['ERR_RANK_FAILED', 'ERR_TIMEOUT', 'ERR_IO'].includes(error.code);
}

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

/** One applied averaging round, as this rank saw it. */
export interface AveragedEvent {
  version: number;
  /** This rank's realized steps in the window, and its mass. */
  steps: number;
  mass: number;
  /** Σ mass of the parameters' accepted contributions (the one divisor). */
  totalMass: number;
  /**
   * Host modes: the consensus as received. Its bytes are valid during the callback only (they
   * receive the next round's consensus): copy what you keep.
   */
  consensus?: readonly HostTensor[];
  /** True when the consensus was EASGD-blended rather than adopted. */
  blended: boolean;
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
 * step points, follows its averaging commands. Collective modes (NcclSync / NcclCadence; Gloo
 * on CPU) average parameters and float buffers with the mass law through a process group on
 * `SyncNow` and ack with `SyncAck`. Host modes (CpuSync / CpuCadence / CpuAsync) stream a
 * mass-scaled snapshot over the data channel on `RequestParams` and apply the consensus on
 * `Update` (CpuSync / CpuCadence wait for it; CpuAsync keeps training and EASGD-blends it in
 * when it arrives).
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
  /** Collective modes: process groups formed after deaths. */
  reformations = 0;
  #stepCount = 0;
  #windowSteps = 0;
  #lastReport = performance.now();
  #backlog: CoordinatorMessage[] = [];
  #finished = false;
  #group: ProcessGroup | undefined;
  /** Why joining the survivors' group failed (thrown at the next SyncNow). */
  #reformFailure: unknown;

  private constructor(
    readonly model: Module,
    readonly mode: LaunchMode,
    readonly rank: number,
    readonly worldSize: number,
    readonly control: RankClient,
    group: ProcessGroup | undefined,
    readonly data: DataChannel | undefined,
    private readonly options: SessionOptions,
    private readonly timeoutMs: number,
  ) {
    this.#group = group;
  }

  /** Collective modes: the live process group (undefined while it is being re-formed). */
  get group(): ProcessGroup | undefined {
    return this.#group;
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
    let group: ProcessGroup | undefined;
    if (isCollectiveMode(mode)) {
      const port = options.processGroupPort ?? Number(env[PROCESS_GROUP_PORT_ENV]);
      if (!Number.isInteger(port) || port < 1) {
        throw invalidArgument(`${OP}.join`, PROCESS_GROUP_PORT_ENV, 'a port for the process group', port);
      }
      group = joinGroup(model, {
        rank,
        worldSize,
        host: options.processGroupHost ?? '127.0.0.1',
        port,
        timeoutMs,
      });
    }
    // Formation: wait until the coordinator has every rank (its first StartEpoch or SetGlobalStep).
    const formed = control.waitFor(
      (message) => message.type === 'StartEpoch' || message.type === 'SetGlobalStep',
      {
        timeoutMs,
      },
    );
    options.onControl?.(formed);
    return new DistributedSession(model, mode, rank, worldSize, control, group, data, options, timeoutMs);
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
      if (message.type === 'RequestParams' && this.mode !== 'CpuAsync') requested = true;
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
      this.data?.close();
      this.#group?.destroy();
      releaseCollectiveBuffers(this.model);
      releaseSnapshotBuffers(this.model);
      await this.control.close();
    }
  }

  async #handle(message: CoordinatorMessage): Promise<void> {
    switch (message.type) {
      case 'SyncNow':
        this.#syncNow();
        return;
      case 'RequestParams':
        await this.#requestParams(message.version);
        return;
      case 'Update':
        await this.#update(message.version);
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
        // The group includes a dead rank: every later collective on it would fail or hang.
        this.#group?.abort();
        this.#group = undefined;
        this.options.onControl?.(message);
        return;
      case 'RequestNewNcclId':
        await this.#mintRendezvous();
        return;
      case 'NewNcclSession':
        this.#reform(message);
        this.options.onControl?.(message);
        return;
      default:
        this.options.onControl?.(message);
    }
  }

  /** The lowest survivor: a fresh rendezvous on this host, where it will be the new rank 0. */
  async #mintRendezvous(): Promise<void> {
    const host = this.options.processGroupHost ?? '127.0.0.1';
    const port = await freePortOn(host);
    this.control.send({ type: 'NewNcclIdGenerated', uidBytes: encodeRendezvous({ host, port }) });
  }

  /** Joins the survivors' new group; a failure surfaces at the next SyncNow. */
  #reform(message: NewNcclSession): void {
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
      this.#group = joinGroup(this.model, {
        rank: message.newRank,
        worldSize: message.newWorldSize,
        ...rendezvous,
        timeoutMs: this.timeoutMs,
      });
      this.#reformFailure = undefined;
      this.reformations += 1;
    } catch (error) {
      this.#reformFailure = error;
    }
  }

  #openWindow(version: number): { steps: number; mass: number } {
    const steps = this.#windowSteps;
    const mass = windowMass(steps, this.options.gamma ?? 1);
    this.options.onBeforeAverage?.({ version, steps, mass });
    this.#windowSteps = 0;
    return { steps, mass };
  }

  #syncNow(): void {
    if (!isCollectiveMode(this.mode))
      throw new FlodlError('ERR_INVALID_ARGUMENT', `SyncNow in host mode ${this.mode}`, { op: OP });
    const group = this.#group;
    if (!group) {
      if (this.#reformFailure !== undefined) throw this.#reformFailure;
      return; // the group died with a peer: this round was aborted, a re-formation is coming
    }
    const version = this.version + 1;
    const { steps, mass } = this.#openWindow(version);
    let result: CollectiveResult;
    try {
      result = collectiveAverage(group, this.model, mass);
    } catch (error) {
      if (!isPeerFailure(error)) throw error;
      // The model is as it was (the collective writes it only at the end): reopen the window,
      // drop the group, and wait for the coordinator's DeclareDead and re-formation.
      this.#windowSteps += steps;
      group.abort();
      this.#group = undefined;
      return;
    }
    this.version = version;
    this.control.syncAck({
      stepCount: this.#stepCount,
      divergence: result.divergence,
      preNorm: result.preNorm,
      postNorm: result.postNorm,
    });
    this.options.onAveraged?.({ version, steps, mass, totalMass: result.totalMass, blended: false });
  }

  #pendingWindow: { version: number; steps: number; mass: number } | undefined;

  async #requestParams(version: number): Promise<void> {
    const data = this.#dataChannel();
    const window = { version, ...this.#openWindow(version) };
    // Bytes kept for the model: sent before the next round's snapshot writes them again.
    await data.send(version, snapshotContribution(this.model, window.mass));
    this.control.send({ type: 'SnapshotReady', version });
    this.#pendingWindow = window;
    if (this.mode === 'CpuAsync') return;
    // CpuSync / CpuCadence: hold until the consensus is in, so every rank leaves the round equal.
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      const messages = this.control.poll();
      const index = messages.findIndex((message) => message.type === 'Update');
      // A Throttle that came before the Update is served by this very hold.
      const notThrottle = (message: CoordinatorMessage) => message.type !== 'Throttle';
      if (index >= 0) {
        this.#backlog.push(...messages.slice(0, index).filter(notThrottle), ...messages.slice(index + 1));
        await this.#update((messages[index] as { version: number }).version);
        // A graceful stop sent behind this round is served now, with what came before it
        // (SetGlobalStep): the rank stops at this round, before another step.
        if (this.#backlog.some(isGracefulStop)) {
          for (const message of this.#backlog.splice(0)) await this.#handle(message);
        }
        return;
      }
      this.#backlog.push(...messages.filter(notThrottle));
      // The run ends without this round (a save-and-exit after deaths): stop waiting for it.
      // A graceful stop is served after the round (sent behind its RequestParams): every rank
      // leaves it with the consensus, then stops.
      const end = this.#backlog.findIndex(
        (message) => message.type === 'Shutdown' || message.type === 'ShutdownWithSave',
      );
      const ending = this.#backlog[end];
      if (end >= 0 && (!(ending && isGracefulStop(ending)) || Date.now() > deadline)) {
        const [message] = this.#backlog.splice(end, 1);
        await this.#handle(message as CoordinatorMessage);
        return;
      }
      if (Date.now() > deadline) {
        throw new FlodlError('ERR_TIMEOUT', `no Update for round ${version} within ${this.timeoutMs} ms`, {
          op: OP,
        });
      }
      await this.awaitControl(deadline - Date.now());
    }
  }

  async #update(version: number): Promise<void> {
    const data = this.#dataChannel();
    const received = await data.receiveContribution({ timeoutMs: this.timeoutMs });
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
    const alpha = this.mode === 'CpuAsync' ? this.options.easgdAlpha : undefined;
    applyConsensus(this.model, consensus, alpha === undefined ? {} : { easgdAlpha: alpha });
    this.version = version;
    const window = this.#pendingWindow?.version === version ? this.#pendingWindow : { steps: 0, mass: 0 };
    this.#pendingWindow = undefined;
    this.options.onAveraged?.({
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

  #dataChannel(): DataChannel {
    if (!this.data)
      throw new FlodlError('ERR_INVALID_ARGUMENT', `host averaging in collective mode ${this.mode}`, {
        op: OP,
      });
    return this.data;
  }
}

/** A process group on the backend of `model`'s device (nccl on CUDA, gloo on the CPU). */
function joinGroup(
  model: Module,
  where: { rank: number; worldSize: number; host: string; port: number; timeoutMs: number },
): ProcessGroup {
  const { backend, device } = collectiveBackendFor(model);
  return createProcessGroup({ backend, ...where, ...(backend === 'nccl' ? { device } : {}) });
}

/** A graceful stop (`ShutdownWithSave(GracefulShutdown)`): served after the round it was sent behind. */
function isGracefulStop(message: CoordinatorMessage): boolean {
  return message.type === 'ShutdownWithSave' && message.reason === 'GracefulShutdown';
}
