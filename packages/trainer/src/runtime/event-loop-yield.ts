// Letting the event loop run during training: a step is synchronous native work, so a loop of
// steps that only awaits microtasks starves timers, sockets (the dashboard) and signal handlers
// for the whole run. Both tiers' steps pass through one EventLoopYield per runtime.

/** Steps that may run back to back before the event loop gets a turn, in ms. */
export const YIELD_INTERVAL_MS = 50;

/**
 * Gives the event loop a turn (a macrotask: `setImmediate`) once `intervalMs` of steps passed
 * since the last turn. `due()` is one clock read, cheap enough for every step; `pass()` is the
 * turn itself. Timers, I/O callbacks and signal listeners run inside `await pass()`.
 *
 * @example
 * ```ts fragment
 * const turns = new EventLoopYield();
 * for (const batch of batches) {
 *   step(batch);
 *   if (turns.due()) await turns.pass();
 * }
 * ```
 * PyTorch has no equivalent (Python's loop owns the thread; signals interrupt it).
 */
export class EventLoopYield {
  readonly intervalMs: number;
  #last = performance.now();

  constructor(intervalMs = YIELD_INTERVAL_MS) {
    this.intervalMs = intervalMs;
  }

  /** True once `intervalMs` passed since the last turn. */
  due(): boolean {
    return performance.now() - this.#last >= this.intervalMs;
  }

  /** Lets the event loop run once (timers, I/O, signals), then restarts the interval. */
  async pass(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.#last = performance.now();
  }
}
