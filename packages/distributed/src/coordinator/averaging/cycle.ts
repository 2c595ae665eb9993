import type { ApplyPolicy } from '../config.js';
import type { WindowReport } from '../el-che/window-report.js';
import type { DivergenceReport } from '../guard.js';
import { fillExcessMs, hasDeliveredSample, type RankWindow } from './window-ledger.js';

/**
 * Assembles the {@link WindowReport} ElChe is fed at a reduce (floDl `build_window_report`)
 * from the ranks' closed windows. Dead ranks report nothing. The delivered scale is offered
 * only when the mode rides it (Cadence and Async; Sync stays compute-only) and every live
 * stepping rank has a delivered sample: mixing scales across ranks inverted allocations on
 * floDl's rig (all-or-none coherence gate).
 */
export function buildWindowReport(
  windows: readonly RankWindow[],
  live: readonly boolean[],
  policy: ApplyPolicy,
  syncMs: number,
): WindowReport {
  const moversComplete = windows.every(
    (window, rank) => !live[rank] || window.steps === 0 || hasDeliveredSample(window),
  );
  const pick = (read: (window: RankWindow) => number) =>
    windows.map((window, rank) => (live[rank] ? read(window) : 0));
  return {
    wallMs: pick((window) => window.wallMs),
    steps: pick((window) => window.steps),
    deliveredMs: pick((window) => window.deliveredMs),
    deliveredBatches: pick((window) => window.deliveredBatches),
    fillMs: pick(fillExcessMs),
    deliveredCoherent: policy !== 'Sync' && moversComplete,
    syncMs,
  };
}

/**
 * Per-rank divergence slots filled by acks (NCCL) or by the first batch after a consensus (CPU),
 * read once per reduce and then cleared.
 */
export class DivergenceSlots {
  #deltas: (number | undefined)[];
  #preNorms: (number | undefined)[];
  #postNorm: number | undefined;

  constructor(worldSize: number) {
    this.#deltas = new Array<number | undefined>(worldSize).fill(undefined);
    this.#preNorms = new Array<number | undefined>(worldSize).fill(undefined);
  }

  /** Records what `rank` measured (non-finite values are ignored). */
  record(rank: number, delta?: number, preNorm?: number, postNorm?: number): void {
    if (delta !== undefined && Number.isFinite(delta)) this.#deltas[rank] = delta;
    if (preNorm !== undefined && Number.isFinite(preNorm)) this.#preNorms[rank] = preNorm;
    if (postNorm !== undefined && Number.isFinite(postNorm)) this.#postNorm = postNorm;
  }

  /** Forgets `rank`'s slot (death). */
  drop(rank: number): void {
    this.#deltas[rank] = undefined;
    this.#preNorms[rank] = undefined;
  }

  /** The report of the filled slots, or undefined when no rank reported. */
  report(): DivergenceReport | undefined {
    const deltas = this.#deltas.filter((delta): delta is number => delta !== undefined);
    if (deltas.length === 0) return undefined;
    const preNorms = this.#preNorms.filter((norm): norm is number => norm !== undefined);
    return {
      deltas,
      ...(preNorms.length === deltas.length ? { preNorms } : {}),
      ...(this.#postNorm === undefined ? {} : { postNorm: this.#postNorm }),
    };
  }

  /** Empties every slot for the next window. */
  clear(): void {
    this.#deltas.fill(undefined);
    this.#preNorms.fill(undefined);
    this.#postNorm = undefined;
  }
}
