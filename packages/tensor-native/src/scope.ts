// Deterministic tensor lifetime. Every tensor created while a scope is open belongs to it
// and is freed when the scope ends, unless it is returned from `tidy` or marked with
// `keep`. Tensors created outside any scope are owned by the caller (`dispose()`/`using`),
// with a FinalizationRegistry as a last-resort safety net only.
import { FlodlError } from './errors.js';
import { freeHandle, freeHandles, reclaimHandle, retireHandle } from './internal/handle-table.js';

/** What scopes and the safety net need from a tensor. */
export interface Disposable {
  /** @internal native handle; -1 once disposed */
  _h: number;
  /** @internal set by keep() */
  _kept: boolean;
  /** @internal watched by the garbage-collection safety net */
  _netted: boolean;
}

// A tensor dropped without dispose() is freed when its JS object is collected. A disposed
// netted tensor only "retires" its slot, which this callback later returns to reuse, so the
// handle held here can never name another tensor.
const safetyNet = new FinalizationRegistry<number>((handle) => {
  reclaimHandle(handle);
});

function register(tensor: Disposable): void {
  tensor._netted = true;
  safetyNet.register(tensor, tensor._h);
}

// Tensors owned by the caller wait in a nursery before the safety net watches them: most are
// disposed within a few ops, and those never pay FinalizationRegistry.register (80-200 ns)
// nor the retire/reclaim round trips, their slot is reused at once. The live ones are handed
// to the safety net every NURSERY births, and the rest once per turn of the event loop, so a
// tensor dropped without dispose is still freed when it is collected.
const NURSERY = 256;
const nursery: (Disposable | undefined)[] = new Array(NURSERY).fill(undefined);
let nurseryCount = 0;
let sweepPending = false;

function sweepNursery(): void {
  for (let k = 0; k < nurseryCount; k++) {
    const tensor = nursery[k]!;
    nursery[k] = undefined;
    if (tensor._h >= 0) register(tensor);
  }
  nurseryCount = 0;
}

function sweepOnNextTurn(): void {
  sweepPending = false;
  sweepNursery();
}

function net(tensor: Disposable): void {
  nursery[nurseryCount++] = tensor;
  if (nurseryCount === NURSERY) sweepNursery();
  else if (!sweepPending) {
    sweepPending = true;
    setImmediate(sweepOnNextTurn).unref();
  }
}

class Scope {
  readonly tracked: Disposable[] = [];
  constructor(readonly name: string | undefined) {}
}

const stack: Scope[] = [];
let doomed = new Float64Array(256);
let current: Scope | null = null;

/** @internal Called for every tensor that is born. */
export function track(tensor: Disposable): void {
  if (current !== null) current.tracked.push(tensor);
  else net(tensor);
}

/** @internal Frees a tensor's native side now (dispose). */
export function release(tensor: Disposable): void {
  if (tensor._netted) retireHandle(tensor._h);
  else freeHandle(tensor._h);
  tensor._h = -1;
}

function adoptInto(scope: Scope | null, tensor: Disposable): void {
  if (scope !== null && !tensor._kept) scope.tracked.push(tensor);
  else net(tensor);
}

/** Opens a scope by hand (for async code, where `tidy` cannot follow the awaits). */
export function beginScope(name?: string): ScopeHandle {
  const scope = new Scope(name);
  stack.push(scope);
  current = scope;
  return { scope, depth: stack.length };
}

/** A scope opened with `beginScope`. */
export interface ScopeHandle {
  readonly scope: unknown;
  readonly depth: number;
}

/**
 * Closes a scope opened with `beginScope`: frees its tensors except `keep`s and those in
 * `survivors`, which move to the enclosing scope (or to the caller when there is none).
 *
 * @throws FlodlError ERR_SCOPE when scopes are closed out of order.
 */
export function endScope(handle: ScopeHandle, survivors: Iterable<Disposable> = []): void {
  const scope = handle.scope as Scope;
  if (stack[stack.length - 1] !== scope) {
    throw new FlodlError('ERR_SCOPE', 'scopes must be closed in the reverse order they were opened', {
      op: 'endScope',
      expected: `the innermost scope (depth ${stack.length})`,
      got: `a scope at depth ${handle.depth}`,
    });
  }
  stack.pop();
  current = stack.length > 0 ? stack[stack.length - 1]! : null;
  const keep = survivors instanceof Set ? (survivors as Set<Disposable>) : new Set(survivors);
  const anyKept = keep.size > 0;
  const tracked = scope.tracked;
  if (doomed.length < tracked.length) doomed = new Float64Array(Math.max(tracked.length, doomed.length * 2));
  let count = 0;
  for (const tensor of tracked) {
    if (tensor._h < 0) continue;
    if (tensor._kept || (anyKept && keep.has(tensor))) adoptInto(current, tensor);
    else {
      doomed[count++] = tensor._h;
      tensor._h = -1;
    }
  }
  tracked.length = 0;
  // One native call frees the whole scope, reading the handles in place.
  if (count > 0) freeHandles(doomed, count);
}

/**
 * Runs `fn` in a scope: every tensor created inside is freed when it returns, except the
 * tensors it returns (directly, or inside arrays and plain objects) and those passed to `keep`.
 *
 * @example
 * ```ts
 * const loss = tidy(() => prediction.sub(target).pow(2).mean()); // the temporaries are freed
 * ```
 * @throws FlodlError ERR_SCOPE when `fn` returns a Promise (use beginScope/endScope there).
 */
export function tidy<T>(fn: () => T): T;
export function tidy<T>(name: string, fn: () => T): T;
export function tidy<T>(nameOrFn: string | (() => T), maybeFn?: () => T): T {
  const fn = typeof nameOrFn === 'function' ? nameOrFn : maybeFn;
  if (typeof fn !== 'function') {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'tidy needs a function', { op: 'tidy' });
  }
  const handle = beginScope(typeof nameOrFn === 'string' ? nameOrFn : undefined);
  let result: T;
  let survivors: Disposable[];
  try {
    result = fn();
    if (result instanceof Promise) {
      throw new FlodlError('ERR_SCOPE', 'tidy cannot follow async functions; use beginScope()/endScope()', {
        op: 'tidy',
      });
    }
    survivors = collectTensors(result);
  } catch (error) {
    endScope(handle);
    throw error;
  }
  endScope(handle, survivors);
  return result;
}

/** Marks a tensor to survive every enclosing scope; it is then the caller's to dispose. */
export function keep<T extends Disposable>(tensor: T): T {
  tensor._kept = true;
  return tensor;
}

/** How many scopes are open on this thread. */
export function scopeDepth(): number {
  return stack.length;
}

/** @internal The tensors `tidy` keeps from a returned value (directly, in arrays, maps and plain objects). */
export function collectTensors(value: unknown, found: Disposable[] = [], depth = 0): Disposable[] {
  if (value === null || typeof value !== 'object' || depth > 8) return found;
  // Proxies and getters may throw on a read: such values hold no tensors we can see.
  try {
    visit(value, found, depth);
  } catch {
    // nothing to keep from this value
  }
  return found;
}

function visit(value: object, found: Disposable[], depth: number): void {
  if (typeof (value as Disposable)._h === 'number' && '_kept' in value) {
    found.push(value as Disposable);
    return;
  }
  if (Array.isArray(value)) {
    for (const item of value) collectTensors(item, found, depth + 1);
  } else if (value instanceof Map) {
    for (const item of value.values()) collectTensors(item, found, depth + 1);
  } else if (Object.getPrototypeOf(value) === Object.prototype) {
    for (const item of Object.values(value)) collectTensors(item, found, depth + 1);
  } else if (typeof (value as { tensors?: unknown }).tensors === 'function') {
    // Containers (Variables, batches) expose their tensors for scopes to see.
    collectTensors((value as { tensors(): unknown }).tensors(), found, depth + 1);
  }
}
