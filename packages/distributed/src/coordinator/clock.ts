/**
 * The coordinator's only notion of time: milliseconds from an arbitrary origin. Injected so
 * the state machine runs identically under a real clock and a test's manual one.
 */
export interface Clock {
  /** Current time in milliseconds (monotonic, arbitrary origin). */
  now(): number;
}

/** The process's monotonic clock (`performance.now()`). */
export const systemClock: Clock = { now: () => performance.now() };

/**
 * A clock that moves only when told to: the fake clock of tests and of the simulated cluster.
 *
 * @example
 * ```ts
 * const clock = new ManualClock();
 * clock.advance(250);
 * clock.now(); // 250
 * ```
 */
export class ManualClock implements Clock {
  #now: number;

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  /** Moves the clock forward by `ms` (never backwards). */
  advance(ms: number): void {
    if (ms > 0) this.#now += ms;
  }

  /** Moves the clock to `ms` if that is later than now. */
  set(ms: number): void {
    if (ms > this.#now) this.#now = ms;
  }
}
