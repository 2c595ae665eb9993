// Unequal ranks on one machine for `pnpm bench:ddp`: a rank at speed s < 1 idles, at the start
// of every trainStep, for (1/s − 1) × its measured work per step, so it trains at s of its own
// pace. The idle is `Atomics.wait` on a SharedArrayBuffer: the thread blocks in the kernel and
// uses no CPU, so the other ranks keep their cores.
//
// The work of a step is the time from the start of its forward (after the idle) to the end of
// its optimizer step: compute only, no data wait, no averaging round, no barrier, so those are
// not stretched. The idle is sized from the median of the last WINDOW steps' work, which
// ignores the odd slow step (a GC, a page fault).
import { Adam, type AdamOptions } from '@flodl/nn';

/** Steps the median is taken over. */
const WINDOW = 15;

/** Slows the calling thread to `speed` (0 < speed ≤ 1) of its own compute rate. */
export class Pacer {
  readonly #speed: number;
  readonly #cell = new Int32Array(new SharedArrayBuffer(4));
  readonly #work: number[] = [];
  #start: number | undefined;
  /** Idle inserted so far, ms. */
  idleMs = 0;

  constructor(speed: number) {
    if (!(speed > 0 && speed <= 1)) throw new RangeError(`speed must be in (0, 1], got ${speed}`);
    this.#speed = speed;
  }

  /** Call at the start of every step (before the forward): idles for it, returns the idle in ms. */
  begin(): number {
    let idle = 0;
    if (this.#speed < 1 && this.#work.length > 0) {
      const sorted = [...this.#work].sort((a, b) => a - b);
      const wait = (sorted[Math.floor(sorted.length / 2)] as number) * (1 / this.#speed - 1);
      const before = performance.now();
      Atomics.wait(this.#cell, 0, 0, wait);
      idle = performance.now() - before; // what the wait really took
      this.idleMs += idle;
    }
    this.#start = performance.now();
    return idle;
  }

  /** Call when the step's optimizer update is done: books the step's work. */
  end(): void {
    if (this.#start === undefined || this.#speed === 1) return;
    this.#work.push(performance.now() - this.#start);
    if (this.#work.length > WINDOW) this.#work.shift();
    this.#start = undefined;
  }
}

/** Adam that tells `pacer` when each update is done (the end of the step's compute). */
export class PacedAdam extends Adam {
  readonly #pacer: Pacer;

  constructor(params: ConstructorParameters<typeof Adam>[0], options: AdamOptions, pacer: Pacer) {
    super(params, options);
    this.#pacer = pacer;
  }

  override step(): void;
  override step<T>(closure: () => T): T;
  override step<T>(closure?: () => T): T | undefined {
    if (closure === undefined) {
      super.step();
      this.#pacer.end();
      return undefined;
    }
    const result = super.step(closure);
    this.#pacer.end();
    return result;
  }
}
