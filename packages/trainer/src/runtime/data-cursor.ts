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
  #plan: EpochPlan | undefined;
  #state: EpochState | undefined;

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
    this.#plan = plan;
    this.#state = state;
    this.#after = undefined;
  }

  /** `state`'s plan closed with its report: the cursor moves to the next epoch's start. */
  closed(state: EpochState): void {
    if (this.#state === state) this.#after = state.epoch + 1;
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

  /** The positions of the epoch in progress this rank trained, `[from, to)` of its open plan. */
  covered(): [number, number][] {
    const state = this.#open();
    const plan = this.#plan;
    if (state === undefined || plan === undefined || state.booked === 0) {
      const resume = this.#resume;
      return resume && resume.batch > 0 ? [[0, resume.batch * this.#batchSize]] : [];
    }
    const trained = Math.min(state.booked * this.#batchSize, plan.partitionSize);
    return [[plan.partitionOffset, plan.partitionOffset + trained]];
  }

  #open(): EpochState | undefined {
    return this.#after === undefined ? this.#state : undefined;
  }
}
