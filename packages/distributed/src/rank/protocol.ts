import type { MessagePort } from 'node:worker_threads';
import type { FlodlErrorCode } from '@flodl/tensor-native';
import type { CoordinatorMessage, RankMessage, Welcome } from '../wire/messages.js';

/** `workerData` key that makes a module host the control worker (see `client.ts`). */
export const WORKER_FLAG = '__flodlRankControlWorker';

/** Int32 slots of the shared state between the main thread and the control worker. */
export const SLOT = {
  /** Bumped (and notified) after every item the worker posts to the main thread. */
  seq: 0,
  /** Messages held for the main thread (in the port and in its inbox). */
  pending: 1,
  /** 1 while the worker waits for the main thread to drain. */
  paused: 2,
  /** The step count every `Heartbeat` reports. */
  stepCount: 3,
} as const;
export const STATE_SLOTS = 4;

/** An error as it crosses threads. */
export interface ErrorShape {
  code: FlodlErrorCode | undefined;
  message: string;
}

/** What the worker needs to connect. */
export interface WorkerConfig {
  [WORKER_FLAG]: true;
  host: string;
  port: number;
  rank: number;
  worldSize: number;
  secret: Uint8Array;
  heartbeatMs: number;
  timeoutMs: number;
  connectTimeoutMs: number;
  maxPending: number;
  capabilities: string[];
  state: SharedArrayBuffer;
  stream: MessagePort;
}

/** Worker → main, on the stream port (in order with the coordinator's messages). */
export type StreamItem =
  | { kind: 'message'; message: CoordinatorMessage }
  | { kind: 'closed'; error: ErrorShape | undefined };

/** Main → worker, on the stream port. */
export type Command =
  | { kind: 'send'; messages: RankMessage[] }
  | { kind: 'resume' }
  | { kind: 'close'; timeoutMs: number };

/** Worker → main, on the worker's parent port (lifecycle). */
export type Lifecycle =
  | { kind: 'ready'; welcome: Welcome }
  | { kind: 'failed'; error: ErrorShape }
  | { kind: 'closed' };

export function errorShape(error: unknown): ErrorShape {
  const code = (error as { code?: unknown } | null)?.code;
  return {
    code: typeof code === 'string' && code.startsWith('ERR_') ? (code as FlodlErrorCode) : undefined,
    message: error instanceof Error ? error.message : String(error),
  };
}
