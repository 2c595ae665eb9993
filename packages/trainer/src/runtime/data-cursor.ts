// Where a rank stands in its data, for checkpoint bundles: the open plan and its booked
// batches, the epoch after the last plan closed, and a resumed cursor waiting for its epoch.

import type { EpochPlan } from '@flodl/distributed';
import type { DataCursor } from '../checkpoint/meta.js';
import { peekScalars, restoreScalars } from './scalars.js';
import type { EpochState } from './types.js';

/** @internal Tracks a rank's {@link DataCursor} across plans. */
export class CursorTracker {
  readonly #batchSize: number;
  /** A restored cursor the next plan of its epoch starts from. */
  #resume: DataCursor | undefined;
  /** The epoch after the last plan closed (its report sent), until the next begins. */
  #after: number | undefined;
  #state: EpochState | undefined;
  /** The open plan's ranges of the permutation, in order (an ExtendPartition adds one). */
  #ranges: [number, number][] = [];
  /** Positions trained by the plans closed so far, by epoch (the latest two epochs kept). */
  #done = new Map<number, [number, number][]>();
  /** Positions of an epoch trained before a cluster save (a resumed run's). */
  #prior: { epoch: number; spans: [number, number][] } | undefined;

  constructor(batchSize: number) {
    this.#batchSize = batchSize;
  }

  /** The epoch a resumed run continues with (0 for a fresh one, until its first plan). */
  get startEpoch(): number {
    return this.#resume?.epoch ?? 0;
  }

  /** Makes the next plan of `cursor.epoch` skip the batches it counts and carry on its totals. */
  resumeAt(cursor: DataCursor): void {
    this.#resume = { ...cursor };
  }

  /** `plan` began as `state`: a pending resume of its epoch is applied to `state`. */
  begin(plan: EpochPlan, state: EpochState): void {
    const resume = this.#resume;
    if (resume !== undefined && resume.epoch === plan.epoch) {
      this.#resume = undefined;
      const batches = Math.floor(state.picks.length / this.#batchSize);
      state.batchDone = Math.min(resume.batch, batches);
      state.booked = state.batchDone;
      state.totalLoss = resume.totalLoss;
      state.computeMsTotal = resume.computeMs;
      state.dataStarveMsTotal = resume.dataMs;
      if (resume.scalars) restoreScalars(resume.scalars);
    }
    this.#state = state;
    this.#ranges = [[plan.partitionOffset, plan.partitionSize]];
    this.#after = undefined;
  }

  /** The open plan grew by `[offset, offset + size)` (an ExtendPartition). */
  extend(offset: number, size: number): void {
    this.#ranges.push([offset, size]);
  }

  /** A resumed cluster run: these positions of `epoch` were trained before the save. */
  trainedBefore(epoch: number, spans: [number, number][]): void {
    this.#prior = { epoch, spans: spans.map(([from, to]) => [from, to]) };
  }

  /** `state`'s plan closed with its report: the cursor moves to the next epoch's start. */
  closed(state: EpochState): void {
    if (this.#state !== state) return;
    const spans = this.#done.get(state.epoch) ?? [];
    spans.push(...this.#trained(state.booked));
    this.#done.set(state.epoch, spans);
    for (const epoch of this.#done.keys()) if (epoch < state.epoch - 1) this.#done.delete(epoch);
    this.#after = state.epoch + 1;
  }

  /** The open plan's epoch and booked batches, or the next epoch's start at a boundary. */
  cursor(): DataCursor {
    const state = this.#open();
    if (state === undefined) {
      if (this.#resume !== undefined) return { ...this.#resume };
      return { epoch: this.#after ?? 0, batch: 0, totalLoss: 0, computeMs: 0, dataMs: 0 };
    }
    const scalars = peekScalars();
    return {
      epoch: state.epoch,
      batch: state.booked,
      totalLoss: state.totalLoss,
      computeMs: state.computeMsTotal,
      dataMs: state.dataStarveMsTotal,
      ...(Object.keys(scalars).length > 0 ? { scalars } : {}),
    };
  }

  /**
   * The positions of the epoch in progress (`cursor().epoch`) this rank trained, `[from, to)`:
   * its closed plans of that epoch and the booked part of the open one (plus, after a cluster
   * resume, what was trained of it before the save).
   */
  covered(): [number, number][] {
    const epoch = this.cursor().epoch;
    const spans: [number, number][] = [];
    if (this.#prior?.epoch === epoch) spans.push(...this.#prior.spans);
    spans.push(...(this.#done.get(epoch) ?? []));
    const state = this.#open();
    if (state !== undefined && state.booked > 0) spans.push(...this.#trained(state.booked));
    const resume = this.#resume;
    if (state === undefined && resume?.epoch === epoch && resume.batch > 0)
      spans.push([0, resume.batch * this.#batchSize]);
    return spans;
  }

  /** The first `booked` batches of the open plan's ranges, as spans. */
  #trained(booked: number): [number, number][] {
    let left = booked * this.#batchSize;
    const spans: [number, number][] = [];
    for (const [offset, size] of this.#ranges) {
      if (left <= 0) break;
      const take = Math.min(left, size);
      if (take > 0) spans.push([offset, offset + take]);
      left -= take;
    }
    return spans;
  }

  #open(): EpochState | undefined {
    return this.#after === undefined ? this.#state : undefined;
  }
}
