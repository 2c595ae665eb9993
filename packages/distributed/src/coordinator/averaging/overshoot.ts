/**
 * The Async overshoot budget: how many batches past its count a fast rank may run before it is
 * throttled. A configured value is fixed; otherwise floDl 0.5.3's auto-tune: start at
 * `min(5, max(2, ⌊epochBatches/100⌋))`, +1 per Stable verdict up to
 * `clamp(⌊epochBatches/50⌋, 3, 10)`, back to the start on NudgeDown, held on SuppressGrowth.
 */
export class OvershootBudget {
  readonly initial: number;
  readonly cap: number;
  readonly fixed: boolean;
  #value: number;

  constructor(epochBatches: number, configured?: number) {
    this.fixed = configured !== undefined;
    this.initial = configured ?? Math.min(5, Math.max(2, Math.floor(epochBatches / 100)));
    this.cap = configured ?? Math.min(10, Math.max(3, Math.floor(epochBatches / 50)));
    this.#value = this.initial;
  }

  get value(): number {
    return this.#value;
  }

  /** Applies a guard verdict to the budget. */
  onVerdict(kind: 'Stable' | 'SuppressGrowth' | 'NudgeDown'): void {
    if (this.fixed) return;
    if (kind === 'Stable') this.#value = Math.min(this.cap, this.#value + 1);
    else if (kind === 'NudgeDown') this.#value = this.initial;
  }
}
