// The addon's autograd entries, typed: each tensor's autograd state (requires-grad, leaf,
// grad_fn, .grad, .data, version), backward, autograd.grad and the thread's grad mode.

import type { Handle } from './binding-types.js';
import { nativeOps } from './native-ops.js';

const native = nativeOps(
  'requiresGrad',
  'setRequiresGrad',
  'isLeaf',
  'grad',
  'gradFn',
  'setGrad',
  'retainGrad',
  'variableData',
  'setData',
  'detach_',
  'version',
  'backward',
  'autogradGrad',
  'isGradEnabled',
  'setGradEnabled',
  'inferenceMode',
  'isInferenceModeEnabled',
  'isInference',
);

export function requiresGrad(handle: Handle): boolean {
  return native.requiresGrad(handle);
}

export function setRequiresGrad(handle: Handle, requiresGrad: boolean): void {
  native.setRequiresGrad(handle, requiresGrad);
}

export function isLeaf(handle: Handle): boolean {
  return native.isLeaf(handle);
}

/** The name of the node that made the tensor (`'AddBackward0'`), or null for a leaf. */
export function gradFn(handle: Handle): string | null {
  return native.gradFn(handle);
}

/** A new handle to the tensor's `.grad`, or null when it has none. */
export function grad(handle: Handle): Handle | null {
  return native.grad(handle);
}

/** Sets (`gradient` a handle) or clears (undefined) the tensor's `.grad`. */
export function setGrad(handle: Handle, gradient: Handle | undefined): void {
  native.setGrad(handle, gradient);
}

export function retainGrad(handle: Handle): void {
  native.retainGrad(handle);
}

/** A new handle to the tensor's data, outside the graph (`t.data`). */
export function variableData(handle: Handle): Handle {
  return native.variableData(handle);
}

/** Replaces the tensor's data with `source`'s (`t.data = source`). */
export function setData(handle: Handle, source: Handle): void {
  native.setData(handle, source);
}

export function detachInPlace(handle: Handle): void {
  native.detach_(handle);
}

/** The in-place version counter. */
export function version(handle: Handle): number {
  return native.version(handle);
}

export function backward(
  handle: Handle,
  gradOutput: Handle | undefined,
  retainGraph: boolean,
  createGraph: boolean,
  accumulate: boolean,
): void {
  native.backward(handle, gradOutput, retainGraph, createGraph, accumulate);
}

/** Gradients of `outputs` with respect to `inputs` as new handles (null for an unused input). */
export function gradients(
  outputs: Handle[],
  inputs: Handle[],
  gradOutputs: Handle[] | undefined,
  retainGraph: boolean | undefined,
  createGraph: boolean,
  allowUnused: boolean,
): (Handle | null)[] {
  return native.autogradGrad(outputs, inputs, gradOutputs, retainGraph, createGraph, allowUnused);
}

export function isGradEnabled(): boolean {
  return native.isGradEnabled();
}

export function setGradEnabled(enabled: boolean): void {
  native.setGradEnabled(enabled);
}

/** Calls `fn` under libtorch's c10::InferenceMode guard (`enabled` false: a normal-mode region). */
export function inferenceMode<T>(fn: () => T, enabled: boolean): T {
  return native.inferenceMode(fn, enabled);
}

export function isInferenceModeEnabled(): boolean {
  return native.isInferenceModeEnabled();
}

/** True for a tensor made inside inference mode. */
export function isInference(handle: Handle): boolean {
  return native.isInference(handle);
}
