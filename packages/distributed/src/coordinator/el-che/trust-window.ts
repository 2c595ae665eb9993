/** Readings a rank's trust window holds (floDl `TRUST_WINDOW_CAP`). */
export const TRUST_WINDOW_CAPACITY = 5;

/**
 * A rank's last {@link TRUST_WINDOW_CAPACITY} ms/batch readings; their mean is the smoothed
 * speed used both to elect the anchor and to size batch counts (floDl 0.6+ replaced the
 * adaptive EMA with this window: uniform weights, and one outlier moves the mean by 1/5).
 */
export class TrustWindow {
  readonly capacity: number;
  #samples: number[] = [];

  constructor(capacity = TRUST_WINDOW_CAPACITY) {
    this.capacity = capacity;
  }

  /** Appends a reading, dropping the oldest when full. */
  push(value: number): void {
    if (this.#samples.length >= this.capacity) this.#samples.shift();
    this.#samples.push(value);
  }

  /** Mean of the held readings; 0 when empty (the "no data yet" sentinel). */
  mean(): number {
    if (this.#samples.length === 0) return 0;
    let sum = 0;
    for (const sample of this.#samples) sum += sample;
    return sum / this.#samples.length;
  }

  get size(): number {
    return this.#samples.length;
  }

  isEmpty(): boolean {
    return this.#samples.length === 0;
  }

  clear(): void {
    this.#samples = [];
  }

  /** The held readings, oldest first. */
  values(): readonly number[] {
    return [...this.#samples];
  }
}
