import { FlodlError, invalidArgument } from '@flodl/tensor-native';
import { DEFAULT_ANCHOR, DEFAULT_MAX_ANCHOR, DEFAULT_OVERHEAD_TARGET, type ElCheConfig } from '../config.js';
import { checkInteger, checkNumberInRange } from '../validate.js';
import { electAnchor } from './cohort.js';
import { nextPhase, type Phase, phaseAtLeast } from './phase.js';
import { TRUST_WINDOW_CAPACITY, TrustWindow } from './trust-window.js';
import {
  type AnchorProposal,
  GROWTH_REARM_STABLE,
  proposeGrowth,
  proposeShrink,
  SHRINK_BAND,
  SHRINK_PATIENCE,
  windowOverhead,
} from './window-pressure.js';
import { selectFeed, type WindowReport } from './window-report.js';

/** Dead zone: a rank's batch count changes only when the new target differs by more than 5%. */
export const DEAD_ZONE = 0.05;
/** Upper clamp of one rank's speed ratio `slowMs / ms` (a degenerate sub-ms sample must not schedule 10⁵ batches). */
export const MAX_SPEED_RATIO = 64;
/** `batchCounts` snapshots kept for {@link ElChe.recentBatchShare}. */
export const BATCH_COUNTS_HISTORY = 10;

/**
 * What a convergence assessment asks ElChe to do with its window (floDl `AnchorVerdict`),
 * whoever produced it (guard, meta-controller): `Stable` commits a staged proposal,
 * `SuppressGrowth` vetoes growth and latches it off, `NudgeDown` discards the proposal and
 * shrinks the anchor by `factor`.
 */
export type AnchorVerdict =
  | { readonly kind: 'Stable'; readonly relaxUp: boolean }
  | { readonly kind: 'SuppressGrowth' }
  | { readonly kind: 'NudgeDown'; readonly factor: number };

/** Options of {@link ElChe}; unset values take floDl's defaults. */
export interface ElCheOptions {
  /** Initial anchor (batches per window of the slow rank). Default 10. */
  anchor?: number;
  /** Floor of the shrink path. Default: the initial anchor. */
  minAnchor?: number;
  /** Ceiling of growth. Default 200. */
  maxAnchor?: number;
  /** Per-window fixed-overhead target. Default 0.05. */
  overheadTarget?: number;
  /** Per-update count change cap, and the throttle lead. Default none. */
  maxBatchDiff?: number;
  /** Window-pressure growth applies (false under Sync: it has no window). Default true. */
  windowGrowth?: boolean;
}

/** ElChe's checkpointable trajectory (floDl `ElCheState`). */
export interface ElCheState {
  readonly anchor: number;
  readonly anchorRank: number | undefined;
  readonly smoothedMsPerBatch: readonly number[];
  readonly phase: Phase;
  readonly calibrationCount: number;
}

const OP = 'ElChe';

/**
 * ElChe, the heterogeneous cadence controller: the column marches at its slowest member's
 * pace. The slow rank (the anchor rank) runs `anchor` batches per window; every other rank r
 * runs `round(anchor × slowMs / ms_r)` so all finish at about the same wall time, then
 * parameters are averaged.
 *
 * Per window the coordinator calls {@link ElChe.reportWindow} (timing), then
 * {@link ElChe.applyVerdict} (the guard's verdict on any staged anchor change).
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` for a world size < 1 or invalid options.
 * @example
 * ```ts
 * const elChe = new ElChe(2, { anchor: 10 });
 * elChe.reportTiming([300, 100], [10, 10], 0); // rank 0 is 3× slower
 * elChe.batchCounts; // [10, 30]
 * ```
 * floDl: `ElChe::new(2, 10)` then `report_timing(&wall_ms, &batches, sync_ms)`.
 */
export class ElChe {
  readonly worldSize: number;
  #anchor: number;
  #minAnchor: number;
  #maxAnchor: number;
  readonly overheadTarget: number;
  readonly maxBatchDiff: number | undefined;
  readonly windowGrowth: boolean;
  #batchCounts: number[];
  #windows: TrustWindow[];
  #zeroReports: number[];
  #countsHistory: number[][] = [];
  #calibrated = false;
  #phase: Phase = 'Probe';
  #anchorRank: number | undefined;
  #calibrationCount = 0;
  #pendingSlackMs: number[];
  #pendingFillMs: number[];
  #proposal: AnchorProposal | undefined;
  #growthEnabled = true;
  #consecutiveStable = 0;
  #lowOverheadStreak = 0;
  #lastOverhead: number | undefined;
  #maxTotalBatches: number | undefined;
  #windowCapBinding = false;
  #removed: boolean[];

  constructor(worldSize: number, options: ElCheOptions = {}) {
    this.worldSize = checkInteger(OP, 'worldSize', worldSize, 1);
    this.#anchor = checkInteger(OP, 'anchor', options.anchor ?? DEFAULT_ANCHOR, 1);
    this.#maxAnchor = checkInteger(
      OP,
      'maxAnchor',
      options.maxAnchor ?? Math.max(DEFAULT_MAX_ANCHOR, this.#anchor),
      1,
    );
    this.#minAnchor = checkInteger(OP, 'minAnchor', options.minAnchor ?? this.#anchor, 1);
    if (this.#minAnchor > this.#maxAnchor || this.#anchor > this.#maxAnchor) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'anchor bounds are inconsistent', {
        op: OP,
        expected: 'minAnchor <= maxAnchor and anchor <= maxAnchor',
        got: `anchor ${this.#anchor}, minAnchor ${this.#minAnchor}, maxAnchor ${this.#maxAnchor}`,
      });
    }
    this.overheadTarget = checkNumberInRange(
      OP,
      'overheadTarget',
      options.overheadTarget ?? DEFAULT_OVERHEAD_TARGET,
      0.01,
      0.5,
    );
    this.maxBatchDiff =
      options.maxBatchDiff === undefined
        ? undefined
        : checkInteger(OP, 'maxBatchDiff', options.maxBatchDiff, 0);
    this.windowGrowth = options.windowGrowth ?? true;
    this.#batchCounts = new Array<number>(worldSize).fill(this.#anchor);
    this.#windows = Array.from({ length: worldSize }, () => new TrustWindow(TRUST_WINDOW_CAPACITY));
    this.#zeroReports = new Array<number>(worldSize).fill(0);
    this.#pendingSlackMs = new Array<number>(worldSize).fill(0);
    this.#pendingFillMs = new Array<number>(worldSize).fill(0);
    this.#removed = new Array<boolean>(worldSize).fill(false);
  }

  /** An ElChe configured from a resolved {@link ElCheConfig} (growth off under Sync; speed hint applied). */
  static fromConfig(worldSize: number, config: ElCheConfig): ElChe {
    const elChe = new ElChe(worldSize, {
      anchor: config.anchor,
      minAnchor: config.minAnchor,
      maxAnchor: config.maxAnchor,
      overheadTarget: config.overheadTarget,
      ...(config.maxBatchDiff === undefined ? {} : { maxBatchDiff: config.maxBatchDiff }),
      windowGrowth: !config.mode.endsWith('Sync'),
    });
    if (config.speedHint) elChe.withSpeedRatio(config.speedHint.slowRank, config.speedHint.ratio);
    else if (config.partitionRatios) elChe.withInitialAnchor(indexOfMin(config.partitionRatios, worldSize));
    return elChe;
  }

  /**
   * Seeds counts before any measurement: `slowRank` runs `anchor`, the others `anchor × ratio`
   * (floDl `with_speed_ratio`). Measurements replace the guess at the first report.
   */
  withSpeedRatio(slowRank: number, ratio: number): this {
    this.#checkRank('slowRank', slowRank);
    const clamped = Math.max(1, ratio);
    for (let rank = 0; rank < this.worldSize; rank++) {
      this.#batchCounts[rank] =
        rank === slowRank ? this.#anchor : Math.max(1, Math.round(this.#anchor * clamped));
    }
    this.#anchorRank = slowRank;
    return this;
  }

  /** Pins the cold-start anchor rank without a ratio (floDl `with_initial_anchor`); election may move it at Stable. */
  withInitialAnchor(slowRank: number): this {
    this.#checkRank('slowRank', slowRank);
    this.#anchorRank = slowRank;
    return this;
  }

  get phase(): Phase {
    return this.#phase;
  }
  /** The elected slow rank, or undefined before the first reading. */
  get anchorRank(): number | undefined {
    return this.#anchorRank;
  }
  /** Batches the anchor rank runs per window. */
  get anchor(): number {
    return this.#anchor;
  }
  get minAnchor(): number {
    return this.#minAnchor;
  }
  get maxAnchor(): number {
    return this.#maxAnchor;
  }
  /** Per-rank batches for the current window (0 for a removed rank). */
  get batchCounts(): readonly number[] {
    return [...this.#batchCounts];
  }
  /** `batchCounts[rank]` without copying the list (0 for an unknown rank). */
  batchCount(rank: number): number {
    return this.#batchCounts[rank] ?? 0;
  }
  /** Calibrations so far (successful timing reports). */
  get calibrationCount(): number {
    return this.#calibrationCount;
  }
  /** True after the first successful timing report. */
  get calibrated(): boolean {
    return this.#calibrated;
  }
  /** Window-pressure growth latch: off after a non-Stable verdict until 5 Stables in a row. */
  get growthEnabled(): boolean {
    return this.#growthEnabled;
  }
  /** The staged anchor change awaiting a verdict (diagnostic). */
  get proposal(): AnchorProposal | undefined {
    return this.#proposal;
  }
  /** The last measured per-window overhead fraction (diagnostic). */
  get lastOverhead(): number | undefined {
    return this.#lastOverhead;
  }
  /** True when the counts differ before any measurement (a speed hint was applied). */
  hasSpeedHint(): boolean {
    const counts = this.#batchCounts.filter((_, rank) => !this.#removed[rank]);
    return counts.some((count) => count !== counts[0]);
  }

  /** Smoothed ms/batch of `rank` (trust-window mean), or undefined without a reading. */
  smoothedMs(rank: number): number | undefined {
    const window = this.#windows[rank];
    return window && !window.isEmpty() ? window.mean() : undefined;
  }

  /** Smoothed ms/batch per rank; 0 where there is no reading. */
  msPerBatch(): number[] {
    return this.#windows.map((window) => window.mean());
  }

  /** Wall time (ms) of one window: `anchor × slowMs`; 0 before calibration (floDl `anchor_wall_ms`). */
  anchorWallMs(): number {
    if (!this.#calibrated) return 0;
    return this.#anchor * this.#slowMs();
  }

  /** Sum of the per-rank counts. */
  totalBatches(): number {
    return this.#batchCounts.reduce((sum, count) => sum + count, 0);
  }

  /**
   * Caps `Σ batchCounts` (a window must fit in one epoch). While the cap binds, growth
   * proposals are suppressed: a larger anchor would deliver nothing.
   */
  setMaxTotalBatches(maxTotal: number | undefined): void {
    this.#maxTotalBatches = maxTotal !== undefined && maxTotal > 0 ? maxTotal : undefined;
  }

  /**
   * Stages per-rank callback wall time (ms) to absorb at the next recompute: the firing rank's
   * count drops by `ceil(slack / ms)` so its callback runs in freed slack (consumed once).
   */
  applyCallbackSlack(slackMs: readonly number[]): void {
    if (slackMs.length !== this.worldSize) return;
    this.#pendingSlackMs = [...slackMs];
  }

  /** Takes `rank` out of the cohort (membership shrink): no readings, count 0, never the anchor. */
  removeRank(rank: number): void {
    this.#checkRank('rank', rank);
    if (this.#removed[rank]) return;
    this.#removed[rank] = true;
    this.#windows[rank]?.clear();
    this.#batchCounts[rank] = 0;
    if (this.#anchorRank === rank) {
      this.#anchorRank = electAnchor(this.msPerBatch(), undefined, this.#eligible());
      if (this.#anchorRank === undefined) this.#anchorRank = this.#removed.indexOf(false);
      if (this.#anchorRank < 0) this.#anchorRank = undefined;
    }
    const slowMs = this.#slowMs();
    if (slowMs > 0) this.#recompute(slowMs, true);
    else this.#batchCounts = this.#batchCounts.map((count, index) => (this.#removed[index] ? 0 : count));
  }

  /** True when `rank` was removed by {@link ElChe.removeRank}. */
  isRemoved(rank: number): boolean {
    return this.#removed[rank] === true;
  }

  /**
   * Ingests one window: selects the timing scale ({@link selectFeed}), stages the fill, and
   * feeds {@link ElChe.reportTiming} unless the window carries no signal at all.
   */
  reportWindow(report: WindowReport): void {
    if (report.fillMs.length === this.worldSize) this.#pendingFillMs = [...report.fillMs];
    const feed = selectFeed(report);
    if (feed.ms.some((ms) => ms > 0)) this.reportTiming(feed.ms, feed.batches, report.syncMs);
  }

  /**
   * Reports one window's timing: `wallMs[r]` over `batches[r]` actual batches (actual, not
   * planned, so a fast rank that over-ran is not mis-measured), and the reduce's `syncMs`.
   * Pushes trust windows, elects the anchor (only to set it, or at ≥ Stable), stages a
   * window-pressure proposal (from the 2nd calibration), recomputes counts, advances the phase.
   *
   * @throws FlodlError `ERR_INVALID_ARGUMENT` when the arrays are not `worldSize` long.
   */
  reportTiming(wallMs: readonly number[], batches: readonly number[], syncMs: number): void {
    if (wallMs.length !== this.worldSize || batches.length !== this.worldSize) {
      throw invalidArgument(OP, 'wallMs/batches', `arrays of length ${this.worldSize}`, [
        wallMs.length,
        batches.length,
      ]);
    }
    for (let rank = 0; rank < this.worldSize; rank++) {
      if (this.#removed[rank]) continue;
      const wall = wallMs[rank] ?? 0;
      const count = batches[rank] ?? 0;
      if (count > 0 && wall > 0 && Number.isFinite(wall)) {
        this.#windows[rank]?.push(wall / count);
        this.#zeroReports[rank] = 0;
      } else {
        this.#zeroReports[rank] = (this.#zeroReports[rank] ?? 0) + 1;
        // A rank silent for a whole trust window starts fresh when it returns.
        if ((this.#zeroReports[rank] ?? 0) >= TRUST_WINDOW_CAPACITY) this.#windows[rank]?.clear();
      }
    }
    // Probe and Warmup hold the pin so cold-start skew cannot hand the role to a fast rank.
    if (this.#anchorRank === undefined || phaseAtLeast(this.#phase, 'Stable')) {
      const elected = electAnchor(this.msPerBatch(), this.#anchorRank, this.#eligible());
      if (elected !== undefined) this.#anchorRank = elected;
    }
    if (this.#anchorRank === undefined) return;
    let slowMs = this.#slowMs();
    if (slowMs <= 0) {
      // A pinned anchor that never reports would freeze the phase machine: re-elect.
      if ((this.#zeroReports[this.#anchorRank] ?? 0) >= TRUST_WINDOW_CAPACITY) {
        const elected = electAnchor(this.msPerBatch(), undefined, this.#eligible());
        if (elected !== undefined) this.#anchorRank = elected;
        slowMs = this.#slowMs();
      }
      if (slowMs <= 0) return;
    }
    this.#proposal = undefined;
    if (phaseAtLeast(this.#phase, 'Stable') || (this.#phase === 'Warmup' && this.#calibrationCount >= 1)) {
      this.#proposal = this.#propose(syncMs);
    }
    this.#pendingFillMs.fill(0);
    this.#recompute(slowMs, false);
    if (this.#countsHistory.length >= BATCH_COUNTS_HISTORY) this.#countsHistory.shift();
    this.#countsHistory.push([...this.#batchCounts]);
    this.#calibrated = true;
    this.#calibrationCount += 1;
    this.#phase = nextPhase(this.#phase, this.#calibrationCount);
  }

  /** Applies a verdict: the one seam through which guard and meta-controller steer the anchor. */
  applyVerdict(verdict: AnchorVerdict): void {
    switch (verdict.kind) {
      case 'Stable': {
        this.#consecutiveStable += 1;
        if (this.#consecutiveStable >= GROWTH_REARM_STABLE) this.#growthEnabled = true;
        this.#commitProposal();
        if (verdict.relaxUp && phaseAtLeast(this.#phase, 'Stable')) this.relaxAnchorUp();
        return;
      }
      case 'SuppressGrowth': {
        // Only growth is vetoed; a staged shrink is the safe direction and still lands.
        if (this.#proposal?.kind === 'grow') this.#proposal = undefined;
        this.#commitProposal();
        this.#consecutiveStable = 0;
        this.#growthEnabled = false;
        return;
      }
      case 'NudgeDown': {
        // Discard first: a proposal staged from the pre-nudge anchor must not overwrite the nudge.
        this.#proposal = undefined;
        this.#consecutiveStable = 0;
        this.#growthEnabled = false;
        this.nudgeAnchorDown(verdict.factor);
        return;
      }
    }
  }

  /**
   * Shrinks the anchor to `ceil(anchor × factor)` (factor clamped to [0.1, 1]); may go below
   * `minAnchor`, down to 1, because divergence outranks the overhead floor.
   */
  nudgeAnchorDown(factor: number): void {
    if (!Number.isFinite(factor)) return;
    const clamped = Math.min(1, Math.max(0.1, factor));
    this.#anchor = Math.max(1, Math.min(this.#anchor, Math.ceil(this.#anchor * clamped)));
    const slowMs = this.#slowMs();
    if (slowMs > 0) this.#recompute(slowMs, false);
  }

  /**
   * Grows the anchor by one toward `maxAnchor` (opt-in `relaxUp`, Async); refused when the
   * projected fastest−slowest spread would exceed `maxBatchDiff`.
   */
  relaxAnchorUp(): void {
    if (this.#anchor >= this.#maxAnchor) return;
    if (this.maxBatchDiff !== undefined) {
      const speeds = this.msPerBatch().filter((ms, rank) => ms > 0 && !this.#removed[rank]);
      if (speeds.length > 0) {
        const next = this.#anchor + 1;
        const fastest = Math.max(1, Math.round((next * Math.max(...speeds)) / Math.min(...speeds)));
        if (fastest - next > this.maxBatchDiff) return;
      }
    }
    this.#anchor += 1;
    const slowMs = this.#slowMs();
    if (slowMs > 0) this.#recompute(slowMs, false);
  }

  /** The counts scaled down to sum to at most `maxTotal`, preserving proportions (floDl `clamp_total`). */
  clampTotal(maxTotal: number): number[] {
    const total = this.totalBatches();
    if (total <= maxTotal) return [...this.#batchCounts];
    const scale = maxTotal / total;
    const clamped = this.#batchCounts.map((count) =>
      count === 0 ? 0 : Math.max(1, Math.floor(count * scale)),
    );
    let remainder = maxTotal - clamped.reduce((sum, count) => sum + count, 0);
    for (let rank = 0; rank < clamped.length && remainder > 0; rank++) {
      if (this.#removed[rank]) continue;
      clamped[rank] = (clamped[rank] ?? 0) + 1;
      remainder -= 1;
    }
    return clamped;
  }

  /**
   * Smoothed per-rank share of the allocation over the last 10 windows (the per-epoch batch
   * share metric); the current counts before any window; equal shares when degenerate.
   */
  recentBatchShare(): number[] {
    const sums = new Array<number>(this.worldSize).fill(0);
    const history = this.#countsHistory.length > 0 ? this.#countsHistory : [this.#batchCounts];
    let total = 0;
    for (const snapshot of history) {
      for (let rank = 0; rank < this.worldSize; rank++) {
        sums[rank] = (sums[rank] ?? 0) + (snapshot[rank] ?? 0);
        total += snapshot[rank] ?? 0;
      }
    }
    if (total <= 0) return new Array<number>(this.worldSize).fill(1 / this.worldSize);
    return sums.map((sum) => sum / total);
  }

  /** The checkpointable trajectory (floDl `to_state`). */
  toState(): ElCheState {
    return {
      anchor: this.#anchor,
      anchorRank: this.#anchorRank,
      smoothedMsPerBatch: this.msPerBatch(),
      phase: this.#phase,
      calibrationCount: this.#calibrationCount,
    };
  }

  /**
   * Restores a trajectory (floDl `restore_from_state`); each trust window is seeded with the
   * saved mean. @throws FlodlError `ERR_INVALID_ARGUMENT` on a world-size mismatch.
   */
  restoreState(state: ElCheState): void {
    if (state.smoothedMsPerBatch.length !== this.worldSize) {
      throw invalidArgument(
        OP,
        'state.smoothedMsPerBatch',
        `length ${this.worldSize}`,
        state.smoothedMsPerBatch.length,
      );
    }
    this.#anchor = state.anchor;
    this.#anchorRank = state.anchorRank;
    this.#phase = state.phase;
    this.#calibrationCount = state.calibrationCount;
    state.smoothedMsPerBatch.forEach((ms, rank) => {
      this.#windows[rank]?.clear();
      if (ms > 0) this.#windows[rank]?.push(ms);
    });
    this.#calibrated = state.smoothedMsPerBatch.some((ms) => ms > 0);
    const slowMs = this.#slowMs();
    if (slowMs > 0) this.#recompute(slowMs, true);
  }

  #checkRank(name: string, rank: number): void {
    if (!Number.isInteger(rank) || rank < 0 || rank >= this.worldSize) {
      throw invalidArgument(OP, name, `a rank in [0, ${this.worldSize - 1}]`, rank);
    }
  }

  #eligible(): boolean[] {
    return this.#removed.map((removed) => !removed);
  }

  #slowMs(): number {
    return this.#anchorRank === undefined ? 0 : (this.#windows[this.#anchorRank]?.mean() ?? 0);
  }

  #propose(syncMs: number): AnchorProposal | undefined {
    if (!this.windowGrowth || this.#anchorRank === undefined) return undefined;
    const overhead = windowOverhead(
      this.#anchor,
      this.#slowMs(),
      syncMs,
      this.#pendingFillMs[this.#anchorRank] ?? 0,
    );
    this.#lastOverhead = overhead;
    if (overhead === undefined) return undefined;
    const common = { anchor: this.#anchor, overhead, target: this.overheadTarget, phase: this.#phase };
    const grown = proposeGrowth({ ...common, minAnchor: this.#minAnchor, maxAnchor: this.#maxAnchor });
    if (grown !== undefined || overhead > this.overheadTarget) {
      this.#lowOverheadStreak = 0;
      if (grown === undefined || !this.#growthEnabled || this.#windowCapBinding) return undefined;
      return { kind: 'grow', anchor: grown };
    }
    if (phaseAtLeast(this.#phase, 'Stable') && overhead < this.overheadTarget * SHRINK_BAND) {
      this.#lowOverheadStreak += 1;
      if (this.#lowOverheadStreak >= SHRINK_PATIENCE) {
        this.#lowOverheadStreak = 0;
        const shrunk = proposeShrink(this.#anchor, overhead, this.overheadTarget, this.#minAnchor);
        return shrunk === undefined ? undefined : { kind: 'shrink', anchor: shrunk };
      }
      return undefined;
    }
    this.#lowOverheadStreak = 0;
    return undefined;
  }

  #commitProposal(): void {
    const proposal = this.#proposal;
    this.#proposal = undefined;
    if (!proposal) return;
    this.#anchor = proposal.anchor;
    const slowMs = this.#slowMs();
    if (slowMs > 0) this.#recompute(slowMs, false);
  }

  /** Counts from the current anchor and smoothed speeds, with the dead zone and caps. */
  #recompute(slowMs: number, force: boolean): void {
    for (let rank = 0; rank < this.worldSize; rank++) {
      if (this.#removed[rank]) {
        this.#batchCounts[rank] = 0;
        continue;
      }
      const ms = this.#windows[rank]?.mean() ?? 0;
      const untargeted =
        ms <= 0 || Math.abs(ms - slowMs) < 1e-6
          ? this.#anchor
          : Math.max(1, Math.round(this.#anchor * Math.min(slowMs / ms, MAX_SPEED_RATIO)));
      const slack = this.#pendingSlackMs[rank] ?? 0;
      const slackBatches = slack > 0 && ms > 0 ? Math.ceil(slack / ms) : 0;
      const target = Math.max(1, untargeted - slackBatches);
      const current = this.#batchCounts[rank] ?? 0;
      // Always move on the first calibration, for a staged slack, and for a returning rank.
      if (
        force ||
        !this.#calibrated ||
        slackBatches > 0 ||
        current === 0 ||
        Math.abs(target - current) > current * DEAD_ZONE
      ) {
        let next = target;
        if (this.maxBatchDiff !== undefined && this.#calibrated && current > 0) {
          next =
            target > current
              ? Math.min(target, current + this.maxBatchDiff)
              : Math.max(1, target, current - this.maxBatchDiff);
        }
        this.#batchCounts[rank] = next;
      }
    }
    this.#windowCapBinding = false;
    const cap = this.#maxTotalBatches;
    const total = this.totalBatches();
    if (cap !== undefined && total > cap) {
      this.#windowCapBinding = true;
      const scale = cap / total;
      this.#batchCounts = this.#batchCounts.map((count) =>
        count === 0 ? 0 : Math.max(1, Math.floor(count * scale)),
      );
      const left = cap - this.totalBatches();
      if (left > 0) {
        const fastest = this.#batchCounts.indexOf(Math.max(...this.#batchCounts));
        this.#batchCounts[fastest] = (this.#batchCounts[fastest] ?? 0) + left;
      }
    }
    this.#pendingSlackMs.fill(0);
  }
}

function indexOfMin(values: readonly number[], length: number): number {
  let best = 0;
  for (let index = 1; index < Math.min(values.length, length); index++) {
    if ((values[index] ?? 0) < (values[best] ?? 0)) best = index;
  }
  return best;
}
