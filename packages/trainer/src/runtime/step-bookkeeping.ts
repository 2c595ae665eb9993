// The bookkeeping around a rank's steps: the optimizer tail (clip, scheduled LR, step), the
// lockstep hold of the Sync modes, and a plan's report.

import type { DistributedSession } from '@flodl/distributed';
import type { Metrics } from '@flodl/distributed/wire';
import { clipGradNorm, type LRScheduler, type Optimizer } from '@flodl/nn';
import type { Tensor } from '@flodl/tensor-native';
import { drainScalars } from './scalars.js';
import type { EpochState } from './types.js';

/** Longest lockstep wait after a plan's last step, ms (see `holdLockstep`). */
const LAST_STEP_HOLD_MS = 3000;

/** What the optimizer tail reads. */
export interface StepTail {
  maxGradNorm?: number | undefined;
  scheduler?: LRScheduler | undefined;
  lrScale?: number | undefined;
}

/**
 * Clip → LR from the schedule at `lrStep` (× lrScale) → optimizer step → zeroGrad.
 * Gradients must be populated.
 */
export function stepOptimizer(
  optimizer: Optimizer,
  parameters: readonly Tensor[],
  tail: StepTail,
  lrStep: number,
): void {
  const { maxGradNorm } = tail;
  if (maxGradNorm !== undefined) {
    const withGrad = parameters.filter((parameter) => parameter.grad !== undefined);
    if (withGrad.length > 0) clipGradNorm(withGrad, maxGradNorm);
  }
  applySchedule(optimizer, tail, lrStep);
  optimizer.step();
  optimizer.zeroGrad();
}

/** The learning rate of the step at `lrStep` from the schedule (× lrScale), when there is one. */
export function applySchedule(optimizer: Optimizer, tail: StepTail, lrStep: number): void {
  const { scheduler } = tail;
  if (scheduler === undefined) return;
  const lrs = scheduler.lrAt(lrStep);
  const scale = tail.lrScale ?? 1;
  lrs.forEach((lr, group) => {
    optimizer.setGroupLr(group, lr * scale);
  });
}

/**
 * Sync modes train in lockstep: every step is followed by its averaging round (the
 * coordinator fires one as soon as every rank has a step), so each round averages exactly
 * one step per rank and a run is a deterministic function of its seed, data and world size.
 * After a plan's last batch the wait is bounded: a rank with one batch less in the epoch
 * would hold the round back (a collective needs a step from every rank).
 */
export async function holdLockstep(
  session: DistributedSession,
  state: EpochState,
  batchSize: number,
  target: number,
  follow: { stopped(): boolean; service(): Promise<void> },
): Promise<void> {
  const last = state.batchDone >= Math.floor(state.picks.length / batchSize);
  const deadline = last ? performance.now() + LAST_STEP_HOLD_MS : Number.POSITIVE_INFINITY;
  while (session.version < target && !follow.stopped() && performance.now() < deadline) {
    await session.awaitControl(deadline - performance.now());
    await follow.service();
  }
}

/** The report of a closed plan (the chunk's `Metrics`), draining the scalars recorded meanwhile. */
export function planReport(state: EpochState, batchSize: number): Omit<Metrics, 'type'> {
  const batches = state.batchDone;
  const elapsed = performance.now() - state.epochStart;
  return {
    epoch: state.epoch,
    avgLoss: batches === 0 ? 0 : state.totalLoss / batches,
    batchesProcessed: batches,
    epochMs: batches === 0 ? 0 : elapsed,
    samplesProcessed: batches * batchSize,
    shareCompleteMs: batches === 0 ? 0 : state.computeMsTotal + state.dataStarveMsTotal,
    computeOnlyMs: state.computeMsTotal,
    dataStarveMs: state.dataStarveMsTotal,
    scalars: drainScalars(),
  };
}
