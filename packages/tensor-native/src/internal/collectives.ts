// The addon's c10d entries, typed: the rendezvous store, process groups and their collectives
// (groups and stores are named by ids from the addon, tensors by handles). A native failure is
// re-labelled with the public op name (createProcessGroup, ProcessGroup.allReduce, ...),
// keeping its code, text and cause.
import { FlodlError } from '../errors.js';
import type { Handle } from './binding-types.js';
import { nativeOps } from './native-ops.js';

const native = nativeOps(
  'distStoreCreate',
  'distStoreFree',
  'distGroupCreate',
  'distGroupDestroy',
  'distAllReduce',
  'distBroadcast',
  'distAllGather',
  'distBarrier',
);

// The public name of each native entry, for the errors it raises.
const PUBLIC_OPS: Record<string, string> = {
  distStoreCreate: 'createProcessGroup',
  distGroupCreate: 'createProcessGroup',
  distAllReduce: 'ProcessGroup.allReduce',
  distBroadcast: 'ProcessGroup.broadcast',
  distAllGather: 'ProcessGroup.allGather',
  distBarrier: 'ProcessGroup.barrier',
  distGroupDestroy: 'ProcessGroup.destroy',
};

function relabel(error: unknown): unknown {
  if (!FlodlError.isInstance(error) || error.op === undefined) return error;
  const op = PUBLIC_OPS[error.op];
  if (op === undefined) return error;
  const text = error.message.startsWith(`${error.op}: `)
    ? error.message.slice(error.op.length + 2)
    : error.message;
  return new FlodlError(error.code, text.split('\n  ')[0]!, {
    op,
    expected: error.expected,
    got: error.got,
    nativeMessage: error.nativeMessage,
    cause: error,
  });
}

function relabelled<T>(run: () => T): T {
  try {
    return run();
  } catch (error) {
    throw relabel(error);
  }
}

/** Opens (`isServer`, rank 0) or dials the c10d TCPStore at `host:port`; returns the store's id. */
export function createStore(
  host: string,
  port: number,
  worldSize: number,
  isServer: boolean,
  timeoutMs: number,
): number {
  return relabelled(() => native.distStoreCreate(host, port, worldSize, isServer, timeoutMs) as number);
}

/** Drops this side's reference to a store (a group keeps its own). */
export function freeStore(storeId: number): void {
  native.distStoreFree(storeId);
}

/** Joins a process group through `storeId`; `deviceIndex` is the CUDA device of an nccl group, else -1. */
export function createGroup(
  storeId: number,
  backend: string,
  rank: number,
  worldSize: number,
  timeoutMs: number,
  prefix: string,
  deviceIndex: number,
): number {
  return relabelled(
    () => native.distGroupCreate(storeId, backend, rank, worldSize, timeoutMs, prefix, deviceIndex) as number,
  );
}

/** Leaves and frees a group; `abort` tears it down without waiting for peers. */
export function destroyGroup(groupId: number, abort: boolean): void {
  native.distGroupDestroy(groupId, abort);
}

export function allReduce(groupId: number, handles: Handle[], reduce: string): void {
  relabelled(() => native.distAllReduce(groupId, handles, reduce));
}

export function broadcast(groupId: number, handles: Handle[], root: number): void {
  relabelled(() => native.distBroadcast(groupId, handles, root));
}

/** Every rank's tensor, in rank order, as new handles. */
export function allGather(groupId: number, handle: Handle): Handle[] {
  return relabelled(() => native.distAllGather(groupId, handle) as Handle[]);
}

export function barrier(groupId: number): void {
  relabelled(() => native.distBarrier(groupId));
}
