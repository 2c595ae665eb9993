// The addon's per-tensor entries that Tensor itself is built on, typed: metadata (shape,
// strides, dtype and device codes, layout), reading the values, and copies and moves.

import type { DeviceCode, DTypeCode, Handle } from './binding-types.js';
import { nativeOps } from './native-ops.js';

const native = nativeOps(
  'shape',
  'strides',
  'dtype',
  'device',
  'numel',
  'dim',
  'isContiguous',
  'isPinned',
  'sameStorage',
  'item',
  'to',
  'toTypedArray',
  'clone',
  'detach',
  'contiguous',
  'pinMemory',
);

export function shapeOf(handle: Handle): number[] {
  return native.shape(handle);
}

export function stridesOf(handle: Handle): number[] {
  return native.strides(handle);
}

export function dtypeCodeOf(handle: Handle): DTypeCode {
  return native.dtype(handle);
}

export function deviceCodeOf(handle: Handle): DeviceCode {
  return native.device(handle);
}

export function numelOf(handle: Handle): number {
  return native.numel(handle);
}

export function dimOf(handle: Handle): number {
  return native.dim(handle);
}

export function isContiguous(handle: Handle): boolean {
  return native.isContiguous(handle);
}

export function isPinned(handle: Handle): boolean {
  return native.isPinned(handle);
}

/** True when both tensors view the same storage. */
export function sameStorage(a: Handle, b: Handle): boolean {
  return native.sameStorage(a, b);
}

/** The value of a one-element tensor. */
export function itemOf(handle: Handle): number | boolean {
  return native.item(handle);
}

/** A flat copy of the values (see Tensor.toTypedArray for which array each dtype gives). */
export function typedArrayOf(
  handle: Handle,
): Float32Array | Float64Array | Int32Array | BigInt64Array | Uint8Array {
  return native.toTypedArray(handle);
}

/** Converts and/or moves (`dtype` -1 keeps it, `device` undefined keeps it); a new handle. */
export function convert(
  handle: Handle,
  dtype: DTypeCode,
  device: DeviceCode | undefined,
  nonBlocking: boolean,
  copy: boolean,
): Handle {
  return native.to(handle, dtype, device, nonBlocking, copy);
}

export function cloneOf(handle: Handle): Handle {
  return native.clone(handle);
}

export function detachedOf(handle: Handle): Handle {
  return native.detach(handle);
}

export function contiguousOf(handle: Handle): Handle {
  return native.contiguous(handle);
}

export function pinnedOf(handle: Handle): Handle {
  return native.pinMemory(handle);
}
