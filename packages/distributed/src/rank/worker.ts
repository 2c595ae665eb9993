import { parentPort } from 'node:worker_threads';
import { ControlClient } from '../wire/client.js';
import type { RankMessage } from '../wire/messages.js';
import {
  type Command,
  errorShape,
  type Lifecycle,
  SLOT,
  type StreamItem,
  type WorkerConfig,
} from './protocol.js';

/** Bound of one `receive` in the pump; it only loops again. */
const RECEIVE_SLICE_MS = 60_000;

/**
 * The control worker: owns the `ControlClient` (handshake, heartbeat timer, frame reads)
 * on this thread's event loop, forwards the coordinator's messages to the main thread
 * (at most `maxPending` unread) and sends what the main thread posts, in order.
 */
export async function runControlWorker(config: WorkerConfig): Promise<void> {
  const lifecycle = (item: Lifecycle) => parentPort?.postMessage(item);
  const state = new Int32Array(config.state);
  const stream = config.stream;
  const post = (item: StreamItem) => {
    stream.postMessage(item);
    Atomics.add(state, SLOT.seq, 1);
    Atomics.notify(state, SLOT.seq);
  };

  let client: ControlClient;
  try {
    client = await ControlClient.connect({
      host: config.host,
      port: config.port,
      rank: config.rank,
      worldSize: config.worldSize,
      secret: config.secret,
      capabilities: config.capabilities,
      heartbeatIntervalMs: config.heartbeatMs,
      coordinatorTimeoutMs: config.timeoutMs,
      connectTimeoutMs: config.connectTimeoutMs,
    });
  } catch (error) {
    lifecycle({ kind: 'failed', error: errorShape(error) });
    stream.close();
    return;
  }
  // Heartbeats report the step count the main thread publishes.
  Object.defineProperty(client, 'stepCount', {
    get: () => Atomics.load(state, SLOT.stepCount),
    set: () => {},
  });

  let wake: (() => void) | undefined;
  let closing: Promise<void> | undefined;
  let sending: Promise<void> = Promise.resolve();

  stream.on('message', (command: Command) => {
    switch (command.kind) {
      case 'send':
        sending = sending.then(() => sendQuietly(client, command.messages));
        break;
      case 'resume':
        wake?.();
        break;
      case 'close':
        closing ??= (async () => {
          await sending;
          await sendQuietly(client, [{ type: 'Exiting' }]);
          await client.close({ timeoutMs: command.timeoutMs });
        })();
        wake?.();
        break;
    }
  });
  lifecycle({ kind: 'ready', welcome: client.welcome });

  // Pump: in order, never more than maxPending unread by the main thread. Messages beyond
  // stay in the client's own (bounded) queue, which drops a stuck connection.
  for (;;) {
    // Once closing, nothing is held back: the main thread has stopped reading.
    if (!closing && Atomics.load(state, SLOT.pending) >= config.maxPending) {
      const resumed = new Promise<void>((resolve) => (wake = resolve));
      Atomics.store(state, SLOT.paused, 1);
      if (!closing && Atomics.load(state, SLOT.pending) >= config.maxPending) await resumed;
      wake = undefined;
      continue;
    }
    try {
      const message = await client.receive({ timeoutMs: RECEIVE_SLICE_MS });
      Atomics.add(state, SLOT.pending, 1);
      post({ kind: 'message', message });
    } catch (error) {
      if (!client.isClosed) continue; // a quiet slice
      post({ kind: 'closed', error: closing ? undefined : errorShape(error) });
      break;
    }
  }
  await closing;
  lifecycle({ kind: 'closed' });
  stream.close();
  parentPort?.close();
}

async function sendQuietly(client: ControlClient, messages: RankMessage[]): Promise<void> {
  // The frames go out in call order in one write; a failed send ends the connection, and
  // the pump reports why, in order.
  await client.sendAll(messages).catch(() => {});
}
