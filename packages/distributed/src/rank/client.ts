import {
  isMainThread,
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
  workerData,
} from 'node:worker_threads';
import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import { encodeMessage } from '../wire/codec.js';
import { livenessFromEnv } from '../wire/liveness.js';
import type {
  Batch,
  CoordinatorMessage,
  IntentKind,
  Metrics,
  RankMessage,
  SyncAck,
  Welcome,
} from '../wire/messages.js';
import { resolveRunSecret } from '../wire/secret.js';
import {
  type Command,
  type ErrorShape,
  type Lifecycle,
  SLOT,
  STATE_SLOTS,
  type StreamItem,
  WORKER_FLAG,
  type WorkerConfig,
} from './protocol.js';
import { runControlWorker } from './worker.js';

// This module hosts the control worker too: a Worker started on it with the flag runs the
// worker instead (so a bundled build needs no separate entry file).
if (!isMainThread && (workerData as Record<string, unknown> | null)?.[WORKER_FLAG] === true) {
  void runControlWorker(workerData as WorkerConfig);
}

/** Options of `RankClient.connect`. */
export interface RankClientOptions {
  /** The coordinator's address, `host:port` (`[v6]:port` for IPv6). */
  coordinator: string;
  /** This process's global rank. */
  rank: number;
  /** The run's world size. */
  worldSize: number;
  /** The run secret. Default `resolveRunSecret()` (FLODL_SECRET / FLODL_SECRET_FILE). */
  secret?: Uint8Array;
  /**
   * Cadence of `Heartbeat`s, sent from the worker thread, ms. Default from the run's liveness
   * setting (`FLODL_LIVENESS_MS`: a sixth of it, at most 1000).
   */
  heartbeatMs?: number;
  /**
   * The connection counts as lost after this long without a frame from the coordinator, ms.
   * Default the run's liveness setting (`FLODL_LIVENESS_MS`, 30 000 when unset).
   */
  timeoutMs?: number;
  /** Bound on reaching the coordinator and the handshake, ms. Default 30 000. */
  connectTimeoutMs?: number;
  /**
   * A step report (`reportBatch`) that comes within this long of the last hand-over to the
   * worker waits, at most this long, to go with the next one, ms: each hand-over wakes the
   * worker thread and then the coordinator, which on a machine whose cores all train costs
   * the rank part of its core. Steps longer than this send every report at once; any other
   * message, a wait on the coordinator (`waitFor`, `arrival`) and `close` send what waits
   * first, in order; a timer or a `poll` once the hold is up sends it otherwise. `0` hands
   * each report over at once. Default `FLODL_REPORT_HOLD_MS`, else 50.
   */
  reportHoldMs?: number;
  /** Coordinator messages held for the main thread before the worker stops reading. Default 4096. */
  maxPending?: number;
  /** Capabilities announced in `Hello`. Default none. */
  capabilities?: string[];
  /** The module that hosts the control worker. Default this module (its built file). */
  workerUrl?: URL;
}

/** Options of `RankClient.waitFor`. */
export interface WaitForOptions {
  /** Bound on the wait, ms. Default 30 000. */
  timeoutMs?: number;
  /**
   * Receives every message that does not match, in order, while waiting. Without it they
   * stay in the inbox for the next `poll`.
   */
  onControl?: (message: CoordinatorMessage) => void;
}

const OP = 'RankClient';

/** The longest delay a Node timer keeps (longer ones fire at once, with a warning). */
const MAX_TIMER_MS = 2_147_483_647;

/** The environment variable that sets `reportHoldMs` for every rank of a run. */
const REPORT_HOLD_ENV = 'FLODL_REPORT_HOLD_MS';
const DEFAULT_REPORT_HOLD_MS = 50;
const MAX_REPORT_HOLD_MS = 1000;

/**
 * The rank's end of the control channel, with its socket I/O and heartbeats on a worker
 * thread: heartbeats keep flowing while the main thread is blocked in a long native call
 * (a collective, a device sync). The main thread drains the coordinator's messages at its
 * own step points (`poll`, `waitFor`) and sends reports (`send` and the typed helpers).
 * A lost connection surfaces as a FlodlError (ERR_RANK_FAILED, or ERR_TIMEOUT when the
 * coordinator went silent) on the next `poll` / `waitFor`, after the messages that
 * arrived before it.
 *
 * @example
 * ```ts
 * await using control = await RankClient.connect({ coordinator: '10.0.0.1:7400', rank, worldSize });
 * for (const message of control.poll()) handle(message);
 * const plan = control.waitFor((m) => m.type === 'StartEpoch', { timeoutMs: 60_000, onControl: handle });
 * control.reportBatch({ batchMs: 41.5, dataMs: 2.1, stepCount: 1, batchLoss: 0.7 });
 * ```
 */
export class RankClient {
  private readonly state: Int32Array;
  private readonly inbox: CoordinatorMessage[] = [];
  private failure: FlodlError | undefined;
  private closing: Promise<void> | undefined;
  private exited = false;
  /** Messages not handed to the worker yet (step reports within `reportHoldMs`), oldest first. */
  private outbox: RankMessage[] = [];
  private handedOver = Number.NEGATIVE_INFINITY;
  /** Sends what waits once `reportHoldMs` is up, should the event loop turn before anything else does. */
  private holdTimer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly worker: Worker,
    private readonly port: MessagePort,
    state: SharedArrayBuffer,
    /** This process's rank. */
    readonly rank: number,
    /** The coordinator's answer to the handshake. */
    readonly welcome: Welcome,
    private readonly reportHoldMs: number,
  ) {
    this.state = new Int32Array(state);
    worker.on('exit', () => {
      this.exited = true;
      this.failure ??= this.closing
        ? undefined
        : new FlodlError('ERR_RANK_FAILED', 'the control worker thread ended unexpectedly', { op: OP });
    });
    worker.on('error', (error) => {
      this.failure ??= new FlodlError(
        'ERR_RANK_FAILED',
        `the control worker thread failed: ${error.message}`,
        {
          op: OP,
          cause: error,
        },
      );
    });
  }

  /**
   * Starts the control worker, which connects to the coordinator (with retries) and runs
   * the handshake; resolves once the rank is admitted.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for bad options
   * @throws FlodlError ERR_TIMEOUT when the coordinator cannot be reached in time
   * @throws FlodlError ERR_RANK_FAILED (or the wire's code) when the handshake is refused or the worker fails
   */
  static async connect(options: RankClientOptions): Promise<RankClient> {
    const { host, port } = parseAddress(options?.coordinator);
    const maxPending = options.maxPending ?? 4096;
    if (!Number.isInteger(maxPending) || maxPending < 1) {
      throw invalidArgument(`${OP}.connect`, 'maxPending', 'a positive integer', maxPending);
    }
    const reportHoldMs = reportHoldOf(options.reportHoldMs);
    const secret = options.secret ?? resolveRunSecret();
    const liveness = livenessFromEnv();
    const state = new SharedArrayBuffer(STATE_SLOTS * Int32Array.BYTES_PER_ELEMENT);
    const channel = new MessageChannel();
    const config: WorkerConfig = {
      [WORKER_FLAG]: true,
      host,
      port,
      rank: options.rank,
      worldSize: options.worldSize,
      secret,
      heartbeatMs: options.heartbeatMs ?? liveness.heartbeatIntervalMs,
      timeoutMs: options.timeoutMs ?? liveness.coordinatorTimeoutMs,
      connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
      maxPending,
      capabilities: options.capabilities ?? [],
      state,
      stream: channel.port2,
    };
    const worker = new Worker(options.workerUrl ?? new URL(import.meta.url), {
      workerData: config,
      transferList: [channel.port2],
      stdout: false,
      stderr: false,
    });
    const welcome = await new Promise<Welcome>((resolve, reject) => {
      const fail = (error: FlodlError) => {
        worker.removeAllListeners();
        void worker.terminate();
        channel.port1.close();
        reject(error);
      };
      worker.on('message', (item: Lifecycle) => {
        if (item.kind === 'ready') {
          worker.removeAllListeners();
          resolve(item.welcome);
        } else if (item.kind === 'failed') {
          fail(toError(item.error, 'connecting to the coordinator'));
        }
      });
      worker.on('error', (error) =>
        fail(
          new FlodlError('ERR_RANK_FAILED', `the control worker failed to start: ${error.message}`, {
            op: OP,
            cause: error,
          }),
        ),
      );
      worker.on('exit', (code) =>
        fail(
          new FlodlError('ERR_RANK_FAILED', `the control worker exited (code ${code}) before the handshake`, {
            op: OP,
          }),
        ),
      );
    });
    // The worker ends with the process; `close` is the orderly way out.
    worker.unref();
    channel.port1.unref();
    return new RankClient(worker, channel.port1, state, options.rank, welcome, reportHoldMs);
  }

  /** Coordinator messages held for this thread (queued by the worker or in the inbox). */
  get pending(): number {
    return Atomics.load(this.state, SLOT.pending);
  }

  /** True once the connection is lost or closed. */
  get isClosed(): boolean {
    return this.failure !== undefined || this.closing !== undefined;
  }

  /** The step count every heartbeat reports; `reportBatch` and `syncAck` advance it. */
  get stepCount(): number {
    return Atomics.load(this.state, SLOT.stepCount);
  }

  set stepCount(value: number) {
    Atomics.store(this.state, SLOT.stepCount, value | 0);
  }

  /**
   * Every coordinator message that has arrived, in order; never waits. Step reports held
   * longer than `reportHoldMs` go out here too, so a loop that polls without turning the
   * event loop (where the hold's timer cannot fire) still sends them.
   *
   * @throws FlodlError ERR_RANK_FAILED / ERR_TIMEOUT when the connection was lost (once
   *   the messages before the loss are drained)
   */
  poll(): CoordinatorMessage[] {
    if (this.outbox.length > 0 && this.holdIsUp()) this.flush();
    this.drain();
    if (this.inbox.length > 0) return this.take(this.inbox.length);
    this.throwIfDown();
    return [];
  }

  /**
   * Blocks this thread (Atomics.wait: no event loop turns) until a message matching
   * `predicate` arrives and returns it. Other messages go, in order, to `onControl` or
   * stay in the inbox for the next `poll`. Heartbeats keep flowing meanwhile.
   *
   * @throws FlodlError ERR_TIMEOUT when none matches within `timeoutMs`
   * @throws FlodlError ERR_RANK_FAILED / ERR_TIMEOUT when the connection was lost
   */
  waitFor<T extends CoordinatorMessage>(
    predicate: ((message: CoordinatorMessage) => message is T) | ((message: CoordinatorMessage) => boolean),
    options: WaitForOptions = {},
  ): T {
    this.flush(); // the coordinator may need what waits to answer
    const timeoutMs = options.timeoutMs ?? 30_000;
    const deadline = Date.now() + timeoutMs;
    let scanned = 0;
    for (;;) {
      const seq = Atomics.load(this.state, SLOT.seq);
      this.drain();
      while (scanned < this.inbox.length) {
        const message = this.inbox[scanned] as CoordinatorMessage;
        if (predicate(message)) {
          this.inbox.splice(scanned, 1);
          this.released(1);
          return message as T;
        }
        if (options.onControl) {
          this.inbox.splice(scanned, 1);
          this.released(1);
          options.onControl(message);
        } else {
          scanned += 1;
        }
      }
      this.throwIfDown();
      const remaining = deadline - Date.now();
      if (remaining <= 0) {
        const full = Atomics.load(this.state, SLOT.paused) === 1;
        throw new FlodlError('ERR_TIMEOUT', `no matching coordinator message within ${timeoutMs} ms`, {
          op: `${OP}.waitFor`,
          expected: 'the coordinator to send it',
          got: `${this.inbox.length} other message(s) in the inbox${full ? ' (full: drain with poll or pass onControl)' : ''}`,
        });
      }
      Atomics.wait(this.state, SLOT.seq, seq, remaining);
    }
  }

  /**
   * Resolves as soon as a coordinator message is waiting for `poll` (at once when one
   * already is, or when the connection is lost), or after `timeoutMs`: `true` when one
   * is, `false` on the timeout. Unlike `waitFor` it does not block: the event loop turns
   * meanwhile (sockets, timers), so a hold that waits on the coordinator wakes when its
   * message lands rather than on the next timer tick. `0` only looks.
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for a timeout outside [0, 2147483647] ms
   */
  async arrival(timeoutMs: number): Promise<boolean> {
    if (!(timeoutMs >= 0 && timeoutMs <= MAX_TIMER_MS)) {
      throw invalidArgument(
        `${OP}.arrival`,
        'timeoutMs',
        `a number of ms in [0, ${MAX_TIMER_MS}]`,
        timeoutMs,
      );
    }
    const seq = Atomics.load(this.state, SLOT.seq);
    this.drain();
    if (this.inbox.length > 0 || this.failure !== undefined || this.closing !== undefined) return true;
    if (timeoutMs === 0) return false;
    this.flush(); // the coordinator may need what waits to answer
    const waited = Atomics.waitAsync(this.state, SLOT.seq, seq, timeoutMs);
    let outcome: 'ok' | 'not-equal' | 'timed-out';
    if (!waited.async) outcome = waited.value;
    else {
      // The wait's end is this timer's, not the waitAsync's own timeout: a pending waitAsync
      // does not keep the event loop alive, and a rank with nothing else pending (no data
      // socket in the collective modes) must not see its loop run empty mid-wait.
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<'timed-out'>((resolve) => {
        timer = setTimeout(() => resolve('timed-out'), timeoutMs);
      });
      outcome = await Promise.race([waited.value, timedOut]);
      clearTimeout(timer);
    }
    if (outcome === 'timed-out') return false;
    this.drain();
    return this.inbox.length > 0 || this.failure !== undefined;
  }

  /**
   * Queues `message` for the worker to send (in order; returns at once).
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for an invalid message (nothing is sent)
   * @throws FlodlError ERR_RANK_FAILED / ERR_TIMEOUT when the connection was lost or closed
   */
  send(message: RankMessage): void {
    this.queue(message, `${OP}.send`);
    this.flush();
  }

  /**
   * Reports one training step (and advances the heartbeat's step count). A report within
   * `reportHoldMs` of the last hand-over to the worker waits, at most that long, to go with
   * the next message (see `flush`).
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for an invalid report (nothing is sent)
   * @throws FlodlError ERR_RANK_FAILED / ERR_TIMEOUT when the connection was lost or closed
   */
  reportBatch(batch: Omit<Batch, 'type'>): void {
    this.queue({ type: 'Batch', ...batch }, `${OP}.reportBatch`);
    this.stepCount = batch.stepCount;
    if (this.holdIsUp()) this.flush();
    else if (this.holdTimer === undefined) {
      this.holdTimer = setTimeout(
        () => this.flush(),
        this.handedOver + this.reportHoldMs - performance.now(),
      );
      this.holdTimer.unref();
    }
  }

  /** Whether `reportHoldMs` has passed since the last hand-over to the worker. */
  private holdIsUp(): boolean {
    return performance.now() - this.handedOver >= this.reportHoldMs;
  }

  /** Hands the step reports that wait to the worker now (other messages, waits and `close` do it first). */
  flush(): void {
    if (this.closing === undefined) this.handOver();
  }

  private handOver(): void {
    if (this.holdTimer !== undefined) {
      clearTimeout(this.holdTimer);
      this.holdTimer = undefined;
    }
    if (this.outbox.length === 0) return;
    const messages = this.outbox;
    this.outbox = [];
    this.handedOver = performance.now();
    this.command({ kind: 'send', messages });
  }

  private queue(message: RankMessage, op: string): void {
    encodeMessage(message); // validates here, where the caller can see the error
    if (this.closing) throw new FlodlError('ERR_RANK_FAILED', 'the control channel is closed', { op });
    this.throwIfDown();
    this.outbox.push(message);
  }

  /** Acknowledges a `SyncNow` (acks are not batches). */
  syncAck(ack: Omit<SyncAck, 'type'>): void {
    this.send({ type: 'SyncAck', ...ack });
    this.stepCount = ack.stepCount;
  }

  /** Reports a chunk's / epoch's metrics. */
  metrics(metrics: Omit<Metrics, 'type'>): void {
    this.send({ type: 'Metrics', ...metrics });
  }

  /** Asks the coordinator for an eval or a checkpoint (a request: it decides). */
  intent(intent: IntentKind): void {
    this.send({ type: 'Intent', intent });
  }

  /** Announces a clean exit (`close` sends it too). */
  exiting(): void {
    this.send({ type: 'Exiting' });
  }

  /**
   * Sends `Exiting` (unless the connection is already lost), flushes, closes the
   * connection and stops the worker, within `timeoutMs` (default 5000). Idempotent.
   */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    this.closing ??= this.shutdown(options.timeoutMs ?? 5000);
    return this.closing;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  private async shutdown(timeoutMs: number): Promise<void> {
    if (!this.exited) {
      const exited = new Promise<void>((resolve) => {
        if (this.exited) resolve();
        this.worker.once('exit', () => resolve());
      });
      if (!this.failure) {
        this.handOver(); // what waits goes before the worker's Exiting
        this.command({ kind: 'close', timeoutMs });
      } else void this.worker.terminate();
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), timeoutMs + 1000);
      });
      if ((await Promise.race([exited, late])) === 'late') await this.worker.terminate();
      clearTimeout(timer);
    }
    this.port.close();
  }

  private command(command: Command): void {
    this.port.postMessage(command);
  }

  /** Moves everything the worker posted into the inbox. */
  private drain(): void {
    for (;;) {
      const received = receiveMessageOnPort(this.port);
      if (!received) return;
      const item = received.message as StreamItem;
      if (item.kind === 'message') this.inbox.push(item.message);
      else if (!this.closing) this.failure ??= lostError(item.error);
    }
  }

  private take(count: number): CoordinatorMessage[] {
    const taken = this.inbox.splice(0, count);
    this.released(taken.length);
    return taken;
  }

  /** `count` messages left this thread's hands: the worker may forward more. */
  private released(count: number): void {
    Atomics.sub(this.state, SLOT.pending, count);
    if (Atomics.compareExchange(this.state, SLOT.paused, 1, 0) === 1) this.command({ kind: 'resume' });
  }

  private throwIfDown(): void {
    if (this.failure) throw this.failure;
    if (this.closing) throw new FlodlError('ERR_RANK_FAILED', 'the control channel is closed', { op: OP });
  }
}

/**
 * The report hold: `option` when given, else `FLODL_REPORT_HOLD_MS` when set, else the default.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT (naming the option or the variable) outside [0, 1000] ms
 */
function reportHoldOf(option: number | undefined): number {
  const text = process.env[REPORT_HOLD_ENV];
  if (option === undefined && (text === undefined || text === '')) return DEFAULT_REPORT_HOLD_MS;
  const value = option ?? Number(text);
  if (!(value >= 0 && value <= MAX_REPORT_HOLD_MS)) {
    const [name, got] = option === undefined ? [REPORT_HOLD_ENV, text] : ['reportHoldMs', option];
    throw invalidArgument(`${OP}.connect`, name, `a number of ms in [0, ${MAX_REPORT_HOLD_MS}]`, got);
  }
  return value;
}

function lostError(error: ErrorShape | undefined): FlodlError {
  if (error?.code === 'ERR_TIMEOUT') {
    return new FlodlError('ERR_TIMEOUT', `lost the coordinator: ${error.message}`, { op: OP });
  }
  const why = error ? error.message : 'the coordinator closed the control channel';
  return new FlodlError('ERR_RANK_FAILED', `lost the control connection to the coordinator: ${why}`, {
    op: OP,
  });
}

function toError(error: ErrorShape, doing: string): FlodlError {
  return new FlodlError(error.code ?? 'ERR_RANK_FAILED', `${doing}: ${error.message}`, {
    op: `${OP}.connect`,
  });
}

function parseAddress(address: unknown): { host: string; port: number } {
  const match = typeof address === 'string' ? /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(address) : null;
  const port = match ? Number(match[3]) : Number.NaN;
  if (!match || port < 1 || port > 65_535) {
    throw invalidArgument(`${OP}.connect`, 'coordinator', "'host:port' with a port in [1, 65535]", address);
  }
  return { host: (match[1] ?? match[2]) as string, port };
}
