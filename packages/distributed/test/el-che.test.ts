import { FlodlError } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import {
  COHORT_BAND,
  DOMINANCE_MARGIN,
  ElChe,
  electAnchor,
  GROWTH_STEP_CAP,
  type Phase,
  SHRINK_PATIENCE,
  slowCohort,
  TrustWindow,
  WindowLedger,
  windowOverhead,
} from '../src/coordinator/index.js';

/** Reports one window in which rank r ran `batches[r]` batches at `msPerBatch[r]`. */
function report(elChe: ElChe, msPerBatch: readonly number[], syncMs = 0, batches?: readonly number[]) {
  const counts = batches ?? elChe.batchCounts;
  elChe.reportTiming(
    msPerBatch.map((ms, rank) => ms * (counts[rank] ?? 0)),
    counts,
    syncMs,
  );
}

const STABLE = { kind: 'Stable', relaxUp: false } as const;

describe('TrustWindow', () => {
  it('keeps the last 5 readings and averages them', () => {
    const window = new TrustWindow();
    expect(window.mean()).toBe(0);
    for (const value of [10, 20, 30, 40, 50, 60]) window.push(value);
    expect(window.values()).toEqual([20, 30, 40, 50, 60]);
    expect(window.mean()).toBe(40);
  });
});

describe('slow cohort and anchor election', () => {
  it('keeps ranks within 15% of the slowest in the cohort', () => {
    expect(COHORT_BAND).toBe(0.15);
    expect(slowCohort([100, 86, 84, 10])).toEqual([0, 1]);
    expect(slowCohort([0, 0])).toEqual([]);
  });

  it('keeps the current anchor unless a challenger is ≥10% slower', () => {
    expect(DOMINANCE_MARGIN).toBe(0.1);
    expect(electAnchor([100, 109], 0)).toBe(0);
    expect(electAnchor([100, 111], 0)).toBe(1);
    // No current anchor in the cohort: the lowest index wins.
    expect(electAnchor([100, 95, 10], undefined)).toBe(0);
    expect(electAnchor([100, 95, 10], 2)).toBe(0);
  });

  it('never elects a clearly faster rank', () => {
    expect(electAnchor([35, 17.5, 10], undefined)).toBe(0);
  });
});

describe('ElChe phases', () => {
  it('advances Probe → Warmup → Stable (5) → Mature (20), monotonically', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    const seen: Phase[] = [elChe.phase];
    for (let calibration = 1; calibration <= 22; calibration++) {
      report(elChe, [30, 10]);
      seen.push(elChe.phase);
    }
    expect(seen[0]).toBe('Probe');
    expect(seen[1]).toBe('Warmup');
    expect(seen[4]).toBe('Warmup');
    expect(seen[5]).toBe('Stable');
    expect(seen[19]).toBe('Stable');
    expect(seen[20]).toBe('Mature');
    const order = ['Probe', 'Warmup', 'Stable', 'Mature'];
    for (let index = 1; index < seen.length; index++) {
      expect(order.indexOf(seen[index]!)).toBeGreaterThanOrEqual(order.indexOf(seen[index - 1]!));
    }
  });

  it('does not calibrate on a window without any signal', () => {
    const elChe = new ElChe(2);
    elChe.reportWindow({
      wallMs: [0, 0],
      steps: [0, 0],
      deliveredMs: [0, 0],
      deliveredBatches: [0, 0],
      fillMs: [0, 0],
      deliveredCoherent: false,
      syncMs: 5,
    });
    expect(elChe.phase).toBe('Probe');
    expect(elChe.calibrated).toBe(false);
  });
});

describe('ElChe batch counts', () => {
  it('converges to the speed ratios (1×, 2×, 3.5×) within 5%', () => {
    const elChe = new ElChe(3, { anchor: 20 });
    for (let window = 0; window < 8; window++) report(elChe, [35, 17.5, 10]);
    const [slow, medium, fast] = elChe.batchCounts as [number, number, number];
    expect(elChe.anchorRank).toBe(0);
    expect(slow).toBe(20);
    expect(Math.abs(medium / slow - 2) / 2).toBeLessThan(0.05);
    expect(Math.abs(fast / slow - 3.5) / 3.5).toBeLessThan(0.05);
  });

  it('counts with the actual batches run, not the planned ones', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    // The fast rank over-ran (25 actual vs 10 planned) in the same 300 ms.
    elChe.reportTiming([300, 300], [10, 25], 0);
    expect(elChe.batchCounts).toEqual([10, 25]);
  });

  it('holds counts steady under ±3% jitter (5% dead zone)', () => {
    const elChe = new ElChe(3, { anchor: 40 });
    let seed = 7;
    const noise = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return 1 + 0.03 * (2 * (seed / 2 ** 31) - 1);
    };
    for (let window = 0; window < 6; window++) report(elChe, [35, 17.5, 10]);
    const settled = elChe.batchCounts;
    for (let window = 0; window < 40; window++) {
      report(elChe, [35 * noise(), 17.5 * noise(), 10 * noise()]);
      expect(elChe.batchCounts).toEqual(settled);
    }
  });

  it('caps one update’s change at maxBatchDiff', () => {
    const elChe = new ElChe(2, { anchor: 10, maxBatchDiff: 3 });
    report(elChe, [10, 10]);
    expect(elChe.batchCounts).toEqual([10, 10]);
    report(elChe, [40, 10]);
    // Rank 1 wants to move toward 4× but may grow by 3 per update.
    expect(elChe.batchCounts[1]).toBe(13);
  });

  it('stages callback slack for exactly one recompute', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    report(elChe, [30, 10]);
    expect(elChe.batchCounts).toEqual([10, 30]);
    elChe.applyCallbackSlack([0, 55]);
    report(elChe, [30, 10]);
    expect(elChe.batchCounts).toEqual([10, 24]);
    report(elChe, [30, 10]);
    expect(elChe.batchCounts).toEqual([10, 30]);
  });

  it('drops a removed rank and re-elects the anchor among survivors', () => {
    const elChe = new ElChe(3, { anchor: 10 });
    report(elChe, [40, 20, 10]);
    expect(elChe.anchorRank).toBe(0);
    elChe.removeRank(0);
    expect(elChe.anchorRank).toBe(1);
    expect(elChe.batchCounts).toEqual([0, 10, 20]);
    report(elChe, [0, 20, 10]);
    expect(elChe.batchCounts).toEqual([0, 10, 20]);
  });

  it('seeds counts from a speed hint', () => {
    const elChe = new ElChe(2, { anchor: 10 }).withSpeedRatio(1, 2.3);
    expect(elChe.batchCounts).toEqual([23, 10]);
    expect(elChe.hasSpeedHint()).toBe(true);
    expect(elChe.anchorRank).toBe(1);
  });
});

describe('ElChe anchor election over time', () => {
  it('swaps the anchor only at Stable, and only to a dominant challenger', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    report(elChe, [30, 28]);
    expect(elChe.anchorRank).toBe(0);
    // Warmup: rank 1 is now 20% slower, but the pin holds.
    for (let window = 0; window < 3; window++) report(elChe, [30, 36]);
    expect(elChe.phase).toBe('Warmup');
    expect(elChe.anchorRank).toBe(0);
    report(elChe, [30, 36]);
    expect(elChe.phase).toBe('Stable');
    report(elChe, [30, 36]);
    expect(elChe.anchorRank).toBe(1);
  });

  it('does not swap within the dominance margin, even at Stable', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    for (let window = 0; window < 12; window++) report(elChe, [30, window < 2 ? 28 : 32]);
    expect(elChe.phase).toBe('Stable');
    expect(elChe.anchorRank).toBe(0);
  });
});

describe('ElChe window-pressure growth', () => {
  it('measures the per-window fixed overhead', () => {
    expect(windowOverhead(10, 35, 50, 0)).toBeCloseTo(50 / 400);
    expect(windowOverhead(10, 35, 0, 0)).toBeUndefined();
  });

  it('proposes from the 2nd calibration only when clearly over target, capped at ×2', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    // 1st calibration never proposes.
    report(elChe, [35, 10], 300);
    expect(elChe.proposal).toBeUndefined();
    // 2nd: overhead 300/650 ≈ 0.46 > 2 × 0.05 → grow, capped at ×2.
    report(elChe, [35, 10], 300);
    expect(elChe.proposal).toEqual({ kind: 'grow', anchor: 10 * GROWTH_STEP_CAP });
    elChe.applyVerdict(STABLE);
    expect(elChe.anchor).toBe(20);
    // Borderline pressure (0.05 < overhead < 0.1) waits for Stable.
    report(elChe, [35, 10], 50);
    expect(elChe.lastOverhead).toBeGreaterThan(0.05);
    expect(elChe.lastOverhead).toBeLessThan(0.1);
    expect(elChe.proposal).toBeUndefined();
  });

  it('grows toward the overhead target and settles there', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    const anchors: number[] = [];
    for (let window = 0; window < 30; window++) {
      report(elChe, [35, 10], 50);
      elChe.applyVerdict(STABLE);
      anchors.push(elChe.anchor);
    }
    for (let index = 1; index < anchors.length; index++) {
      expect(anchors[index]!).toBeLessThanOrEqual(2 * anchors[index - 1]!);
    }
    const overhead = 50 / (elChe.anchor * 35 + 50);
    expect(overhead).toBeLessThanOrEqual(0.05);
    expect(overhead).toBeGreaterThan(0.05 * 0.5);
    // Equilibrium: 50 / (anchor · 35 + 50) = 0.05 at anchor ≈ 27.1.
    expect(elChe.anchor).toBe(28);
  });

  it('lands growth only under a Stable verdict; SuppressGrowth latches it off until 5 Stables', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    for (let window = 0; window < 6; window++) report(elChe, [35, 10], 0);
    report(elChe, [35, 10], 100);
    expect(elChe.proposal?.kind).toBe('grow');
    elChe.applyVerdict({ kind: 'SuppressGrowth' });
    expect(elChe.anchor).toBe(10);
    expect(elChe.growthEnabled).toBe(false);
    for (let stable = 0; stable < 4; stable++) {
      report(elChe, [35, 10], 100);
      expect(elChe.proposal).toBeUndefined();
      elChe.applyVerdict(STABLE);
    }
    report(elChe, [35, 10], 100);
    elChe.applyVerdict(STABLE);
    expect(elChe.growthEnabled).toBe(true);
    report(elChe, [35, 10], 100);
    expect(elChe.proposal?.kind).toBe('grow');
  });

  it('never grows under Sync (no window to amortise)', () => {
    const elChe = new ElChe(2, { anchor: 1, windowGrowth: false });
    for (let window = 0; window < 10; window++) {
      report(elChe, [35, 10], 500);
      elChe.applyVerdict(STABLE);
    }
    expect(elChe.anchor).toBe(1);
  });

  it('shrinks with hysteresis, never below minAnchor', () => {
    const elChe = new ElChe(2, { anchor: 40, minAnchor: 30 });
    for (let window = 0; window < 6; window++) report(elChe, [35, 10], 0);
    expect(elChe.phase).toBe('Stable');
    // overhead 10/(40·35+10) ≈ 0.007 < 0.025: shrink after SHRINK_PATIENCE windows.
    for (let window = 1; window < SHRINK_PATIENCE; window++) {
      report(elChe, [35, 10], 10);
      expect(elChe.proposal).toBeUndefined();
    }
    report(elChe, [35, 10], 10);
    expect(elChe.proposal).toEqual({ kind: 'shrink', anchor: 30 });
    elChe.applyVerdict(STABLE);
    expect(elChe.anchor).toBe(30);
    for (let window = 0; window < 10; window++) {
      report(elChe, [35, 10], 10);
      elChe.applyVerdict(STABLE);
    }
    expect(elChe.anchor).toBe(30);
  });
});

describe('ElChe verdicts', () => {
  it('nudges down by a clamped factor, below minAnchor but not below 1', () => {
    const elChe = new ElChe(2, { anchor: 20 });
    report(elChe, [30, 10]);
    elChe.applyVerdict({ kind: 'NudgeDown', factor: 0.5 });
    expect(elChe.anchor).toBe(10);
    expect(elChe.batchCounts).toEqual([10, 30]);
    elChe.nudgeAnchorDown(0.01); // clamped to 0.1
    expect(elChe.anchor).toBe(1);
    elChe.nudgeAnchorDown(0.5);
    expect(elChe.anchor).toBe(1);
    elChe.nudgeAnchorDown(3); // clamped to 1: never grows
    expect(elChe.anchor).toBe(1);
  });

  it('NudgeDown discards a staged grow so a later Stable cannot undo it', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    report(elChe, [35, 10], 300);
    report(elChe, [35, 10], 300);
    expect(elChe.proposal?.kind).toBe('grow');
    elChe.applyVerdict({ kind: 'NudgeDown', factor: 0.5 });
    elChe.applyVerdict(STABLE);
    expect(elChe.anchor).toBe(5);
  });

  it('relaxes up by one on Stable when opted in, at Stable phase, within maxBatchDiff', () => {
    const elChe = new ElChe(2, { anchor: 10, maxBatchDiff: 40 });
    report(elChe, [30, 10]);
    elChe.applyVerdict({ kind: 'Stable', relaxUp: true });
    expect(elChe.anchor).toBe(10); // Warmup: no relax-up
    for (let window = 0; window < 5; window++) report(elChe, [30, 10]);
    elChe.applyVerdict({ kind: 'Stable', relaxUp: true });
    expect(elChe.anchor).toBe(11);
    for (let window = 0; window < 20; window++) elChe.applyVerdict({ kind: 'Stable', relaxUp: true });
    // ratio 3: anchor + 1 may not push fastest − slowest past 40 → anchor ≤ 20.
    expect(elChe.anchor).toBe(20);
  });
});

describe('delivered-cost scheduling', () => {
  it('schedules on delivered cost with the fill batch excluded', () => {
    const ledger = new WindowLedger(2);
    // Rank 0: first batch carries 200 ms of fill; then 30 ms compute + 10 ms data.
    ledger.recordBatch(0, 30, 210);
    for (let batch = 0; batch < 9; batch++) ledger.recordBatch(0, 30, 10);
    for (let batch = 0; batch < 30; batch++) ledger.recordBatch(1, 10, 0);
    for (const rank of [0, 1]) ledger.close(rank);
    const [slow, fast] = ledger.takeRound() as [
      ReturnType<WindowLedger['takeRound']>[number],
      ReturnType<WindowLedger['takeRound']>[number],
    ];
    const elChe = new ElChe(2, { anchor: 10 });
    elChe.reportWindow({
      wallMs: [slow.wallMs, fast.wallMs],
      steps: [slow.steps, fast.steps],
      deliveredMs: [slow.deliveredMs, fast.deliveredMs],
      deliveredBatches: [slow.deliveredBatches, fast.deliveredBatches],
      fillMs: [200, 0],
      deliveredCoherent: true,
      syncMs: 0,
    });
    expect(elChe.smoothedMs(0)).toBeCloseTo(40);
    expect(elChe.batchCounts).toEqual([10, 40]);
  });

  it('falls back to compute-only for everyone unless every mover has a delivered sample', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    elChe.reportWindow({
      wallMs: [300, 100],
      steps: [10, 10],
      deliveredMs: [900, 0],
      deliveredBatches: [9, 0],
      fillMs: [0, 0],
      deliveredCoherent: false,
      syncMs: 0,
    });
    expect(elChe.smoothedMs(0)).toBeCloseTo(30);
    expect(elChe.smoothedMs(1)).toBeCloseTo(10);
  });
});

describe('ElChe state and validation', () => {
  it('round-trips its trajectory', () => {
    const elChe = new ElChe(2, { anchor: 10 });
    for (let window = 0; window < 6; window++) report(elChe, [30, 10]);
    const restored = new ElChe(2, { anchor: 10 });
    restored.restoreState(elChe.toState());
    expect(restored.phase).toBe('Stable');
    expect(restored.batchCounts).toEqual(elChe.batchCounts);
  });

  it('rejects invalid arguments with ERR_INVALID_ARGUMENT', () => {
    const codes = [
      () => new ElChe(0),
      () => new ElChe(2, { anchor: 0 }),
      () => new ElChe(2, { anchor: 50, maxAnchor: 10 }),
      () => new ElChe(2, { overheadTarget: 0.9 }),
      () => new ElChe(2).reportTiming([1], [1], 0),
      () => new ElChe(2).withSpeedRatio(5, 2),
    ].map((build) => {
      try {
        build();
        return 'no error';
      } catch (error) {
        return FlodlError.isInstance(error) ? error.code : String(error);
      }
    });
    expect(new Set(codes)).toEqual(new Set(['ERR_INVALID_ARGUMENT']));
  });
});
