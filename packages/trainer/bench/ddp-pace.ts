// Unequal ranks on one machine for `pnpm bench:ddp`: a rank at speed s < 1 idles, at the start
// of every trainStep, for (1/s − 1) × its measured work per step, so it trains at s of its own
// pace. The idle is `Atomics.wait` on a SharedArrayBuffer: the thread blocks in the kernel and
// uses no CPU, so the other ranks keep their cores.
//
// The work per step is the median of the last WINDOW intervals between consecutive trainStep
// calls, less the idle this pacer inserted in each. The median ignores the odd long interval
// (an averaging round, a barrier, an epoch boundary, a GC), so those are not stretched too.

/** Intervals the median is taken over. */
const WINDOW = 15;

/** Slows the calling thread to `speed` (0 < speed ≤ 1) of its own step rate. */
export class Pacer {
  readonly #speed: number;
  readonly #cell = new Int32Array(new SharedArrayBuffer(4));
  readonly #work: number[] = [];
  #lastStart = 0;
  #lastIdle = 0;
  /** Idle inserted so far, ms. */
  idleMs = 0;

  constructor(speed: number) {
    if (!(speed > 0 && speed <= 1)) throw new RangeError(`speed must be in (0, 1], got ${speed}`);
    this.#speed = speed;
  }

  /** Call at the start of every step: measures the step before, then idles for this one. Returns the idle, ms. */
  step(): number {
    const now = performance.now();
    if (this.#speed === 1) return 0;
    if (this.#lastStart > 0) {
      this.#work.push(Math.max(0, now - this.#lastStart - this.#lastIdle));
      if (this.#work.length > WINDOW) this.#work.shift();
    }
    this.#lastStart = now;
    const sorted = [...this.#work].sort((a, b) => a - b);
    const work = sorted.length === 0 ? 0 : (sorted[Math.floor(sorted.length / 2)] as number);
    const idle = work * (1 / this.#speed - 1);
    if (idle > 0) Atomics.wait(this.#cell, 0, 0, idle);
    // What the wait really took (it may wake late), so the next interval's work is right.
    this.#lastIdle = performance.now() - now;
    this.idleMs += this.#lastIdle;
    return this.#lastIdle;
  }
}
