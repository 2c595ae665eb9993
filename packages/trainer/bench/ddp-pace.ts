// Unequal ranks on one machine for `pnpm bench:ddp`: a rank at speed s < 1 idles, at the start
// of its steps, so that each step (work and idle) lasts warm / s, where warm is what the rank's
// step takes when it runs straight after the previous one: the rank trains at s of its own pace.
// The idle is `Atomics.wait` on a SharedArrayBuffer: the thread blocks in the kernel and uses no
// CPU, so the other ranks keep their cores.
//
// The work of a step is the time from the start of its forward (after the idle) to the end of
// its optimizer step: compute only, no data wait, no averaging round, no barrier, so those are
// not stretched. A step that starts after an idle runs slower than one that does not (its
// caches and the core's clock have gone cold: measured here, 12% on the CNN at speed 0.5), so
// sizing the idle from the paced steps' own work would slow the rank below s. Instead every
// PROBE_EVERY-th step runs unpaced and times the warm work (the median of the last WINDOW such
// steps); each paced step idles for warm / s less what the rank is expected to work (the median
// of its last WINDOW paced steps), and the difference between the period aimed at and the one
// measured is carried to the next step, so a probe's idle and a cold step's extra time are paid
// back. The medians ignore the odd slow step (a GC, a page fault).
//
// A probe's warm work leaves out the time the thread waited for a core (its run-queue wait, from
// /proc/thread-self/schedstat on Linux): on a machine whose cores the ranks share with the
// launcher and the control threads, that work lands on the core a slow rank leaves idle, and a
// pace set from the wall time of the slow rank's steps would count it as the rank's own compute
// and slow the rank further (on 2 cores, the MLP's slow rank went at about a quarter of its
// speed alone rather than a half). Where the wait cannot be read, the warm work is wall time.
import { openSync, readSync } from 'node:fs';
import { Adam, type AdamOptions } from '@flodl/nn';

/** Steps each median is taken over. */
const WINDOW = 15;
/** Every this many steps, one runs without idle to time the warm work. */
const PROBE_EVERY = 8;
/** The first steps all run unpaced, so one slow first step (allocation, warm-up) does not set the pace. */
const FIRST_PROBES = 3;

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

/** The pacer's clock and idle (tests give it a simulated one). */
export interface PacerClock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Blocks the thread for `ms` without using CPU. */
  idle(ms: number): void;
  /** Milliseconds the thread has waited for a core so far (0 where the system does not say). */
  waited(): number;
}

/** The calling thread's run-queue wait so far, ms, from its schedstat (Linux); undefined elsewhere. */
function schedWait(): (() => number) | undefined {
  let fd: number;
  try {
    fd = openSync('/proc/thread-self/schedstat', 'r');
  } catch {
    return undefined;
  }
  const buffer = Buffer.alloc(96);
  // "<ns on a core> <ns waiting on the run queue> <timeslices>"; a wait is booked when the
  // thread gets its core back, so a running thread reads every wait up to now.
  return () => {
    const length = readSync(fd, buffer, 0, buffer.length, 0);
    const fields = buffer.toString('latin1', 0, length).split(' ');
    return Number(fields[1]) / 1e6;
  };
}

const cell = new Int32Array(new SharedArrayBuffer(4));
let readWait: (() => number) | undefined | null = null;
const realClock: PacerClock = {
  now: () => performance.now(),
  idle: (ms) => {
    Atomics.wait(cell, 0, 0, ms);
  },
  waited: () => {
    if (readWait === null) readWait = schedWait(); // opened on first use, by the pacing thread
    return readWait === undefined ? 0 : readWait();
  },
};

/** Slows the calling thread to `speed` (0 < speed ≤ 1) of its own compute rate. */
export class Pacer {
  readonly #speed: number;
  readonly #clock: PacerClock;
  /** Work of recent unpaced (probe) steps, ms. */
  readonly #warm: number[] = [];
  /** Work of recent paced steps, ms. */
  readonly #cold: number[] = [];
  #steps = 0;
  /** Period aimed at less period spent so far, ms: idle still owed (negative: overspent). */
  #owed = 0;
  #idle = 0;
  #probe = false;
  #start: number | undefined;
  #waitedAtStart = 0;
  /** Idle inserted so far, ms. */
  idleMs = 0;
  /**
   * The warm work per step the pace is set from, ms, less the thread's waits for a core (0 before
   * the first probe, and at speed 1).
   */
  get warmMs(): number {
    return this.#warm.length > 0 ? median(this.#warm) : 0;
  }

  constructor(speed: number, clock: PacerClock = realClock) {
    if (!(speed > 0 && speed <= 1)) throw new RangeError(`speed must be in (0, 1], got ${speed}`);
    this.#speed = speed;
    this.#clock = clock;
  }

  /** Call at the start of every step (before the forward): idles for it, returns the idle in ms. */
  begin(): number {
    this.#idle = 0;
    if (this.#speed < 1) {
      this.#probe = this.#warm.length < FIRST_PROBES || this.#steps % PROBE_EVERY === 0;
      this.#steps += 1;
      if (!this.#probe) {
        const period = median(this.#warm) / this.#speed;
        const expected = this.#cold.length > 0 ? median(this.#cold) : median(this.#warm);
        const wait = period - expected + this.#owed;
        if (wait > 0) {
          const before = this.#clock.now();
          this.#clock.idle(wait);
          this.#idle = this.#clock.now() - before; // what the wait really took
          this.idleMs += this.#idle;
        }
      }
    }
    this.#start = this.#clock.now();
    if (this.#probe) this.#waitedAtStart = this.#clock.waited();
    return this.#idle;
  }

  /** Call when the step's optimizer update is done: books the step's work. */
  end(): void {
    if (this.#start === undefined || this.#speed === 1) return;
    const work = this.#clock.now() - this.#start;
    this.#start = undefined;
    // A probe books its compute (what it would take with a core to itself); a paced step books
    // its wall time, which is what the idle before the next one has to fill up to the period.
    if (this.#probe) this.#warm.push(work - (this.#clock.waited() - this.#waitedAtStart));
    else this.#cold.push(work);
    if (this.#warm.length > WINDOW) this.#warm.shift();
    if (this.#cold.length > WINDOW) this.#cold.shift();
    const period = median(this.#warm) / this.#speed;
    // Carried to the next step, bounded so a stall (a GC, a swap) is not paid back for long.
    this.#owed = Math.min(period, Math.max(-period, this.#owed + period - work - this.#idle));
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
