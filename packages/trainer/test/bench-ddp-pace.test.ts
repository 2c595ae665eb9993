// The pacer of bench:ddp on a simulated clock: a rank at speed s must take warm / s per step,
// where warm is its work run straight after the previous step, even when a step that follows an
// idle runs slower (cold caches), as it does on real cores, and when its steps wait for a core.
import { describe, expect, it } from 'vitest';
import { Pacer, type PacerClock } from '../bench/ddp-pace.js';

/** A simulated thread: `idle` advances the clock, `work` advances it by the step's work. */
class SimThread implements PacerClock {
  t = 0;
  /** Run-queue wait so far. */
  queued = 0;
  idled = false;
  now(): number {
    return this.t;
  }
  idle(ms: number): void {
    this.t += ms;
    this.idled = true;
  }
  waited(): number {
    return this.queued;
  }
}

/** Runs `steps` steps whose work is `work(step, afterIdle)`; returns each step's period. */
function run(
  pacer: Pacer,
  clock: SimThread,
  steps: number,
  work: (step: number, afterIdle: boolean) => number,
) {
  const periods: number[] = [];
  for (let step = 0; step < steps; step += 1) {
    const from = clock.t;
    clock.idled = false;
    pacer.begin();
    clock.t += work(step, clock.idled);
    pacer.end();
    periods.push(clock.t - from);
  }
  return periods;
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;

describe('bench:ddp pacer', () => {
  it('paces a rank to warm / speed though a step after an idle runs 20% slower', () => {
    const clock = new SimThread();
    const periods = run(new Pacer(0.5, clock), clock, 400, (_, cold) => (cold ? 12 : 10));
    expect(mean(periods.slice(40))).toBeCloseTo(20, 0);
  });

  it('follows the rank when its warm work changes', () => {
    const clock = new SimThread();
    const periods = run(
      new Pacer(0.25, clock),
      clock,
      800,
      (step, cold) => (step < 400 ? 10 : 6) * (cold ? 1.1 : 1),
    );
    expect(mean(periods.slice(100, 400))).toBeCloseTo(40, 0);
    expect(mean(periods.slice(550))).toBeCloseTo(24, 0);
  });

  it('is not set by a slow first step, and pays back a stall only within one period', () => {
    const clock = new SimThread();
    const periods = run(new Pacer(0.5, clock), clock, 400, (step) =>
      step === 0 ? 500 : step === 200 ? 300 : 10,
    );
    expect(mean(periods.slice(20, 200))).toBeCloseTo(20, 0);
    // After the 300 ms stall the rank idles less for at most one period's worth, then paces again.
    expect(periods.slice(201, 210).every((p) => p >= 10)).toBe(true);
    expect(mean(periods.slice(220))).toBeCloseTo(20, 0);
  });

  it('paces from the work without the waits for a core, and fills the period in wall time', () => {
    // Each step computes 10 ms and waits 4 ms more for a core (another thread runs there).
    const clock = new SimThread();
    const pacer = new Pacer(0.5, clock);
    const periods = run(pacer, clock, 400, () => {
      clock.queued += 4;
      return 14;
    });
    expect(pacer.warmMs).toBeCloseTo(10, 6);
    expect(mean(periods.slice(40))).toBeCloseTo(20, 0);
    // Where the waits leave no room for an idle, the rank runs flat out.
    const crowded = new SimThread();
    const flat = run(new Pacer(0.5, crowded), crowded, 100, () => {
      crowded.queued += 15;
      return 25;
    });
    expect(flat.slice(10).every((p) => p === 25)).toBe(true);
  });

  it('leaves a rank at speed 1 alone and refuses speeds outside (0, 1]', () => {
    const clock = new SimThread();
    const periods = run(new Pacer(1, clock), clock, 50, () => 10);
    expect(periods.every((p) => p === 10)).toBe(true);
    expect(() => new Pacer(0)).toThrow(RangeError);
    expect(() => new Pacer(1.5)).toThrow(RangeError);
  });
});
