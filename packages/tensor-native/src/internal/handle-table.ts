// The addon's per-environment tensor table, by handle: freeing, retiring (a slot the
// garbage-collection safety net still names), reclaiming, and the live count.

import type { Handle } from './binding-types.js';
import { nativeOps } from './native-ops.js';

const native = nativeOps('free', 'retire', 'reclaim', 'freeMany', 'isLive', 'liveCount');

/** Frees the tensor of `handle`; its slot is reused at once. */
export function freeHandle(handle: Handle): void {
  native.free(handle);
}

/** Frees the tensor of `handle` but keeps its slot until {@link reclaimHandle} returns it. */
export function retireHandle(handle: Handle): void {
  native.retire(handle);
}

/** Frees the tensor of `handle` if still live, and returns its slot for reuse. */
export function reclaimHandle(handle: Handle): void {
  native.reclaim(handle);
}

/** Frees the first `count` handles of `handles` in one native call, reading them in place. */
export function freeHandles(handles: Float64Array, count: number): void {
  native.freeMany(handles, count);
}

export function isLiveHandle(handle: Handle): boolean {
  return native.isLive(handle);
}

/** Tensors alive in this JS environment's table. */
export function liveHandleCount(): number {
  return native.liveCount();
}
