import { uncoveredRuns } from '../resume.js';

/** A contiguous range of an epoch's permutation, in samples. */
export interface SampleRange {
  readonly offset: number;
  readonly size: number;
}

/**
 * The unassigned samples of one epoch under progressive dispatch, with per-rank reservations
 * (floDl `ChunkPool`).
 *
 * The epoch's permutation is split into contiguous per-rank spans (sized by ElChe's ratios).
 * A rank is served from the front of its own span, so its upcoming data is known for the whole
 * epoch. A rank that out-runs its span steals from the tail of the span with the largest
 * residue ("reservation truing": the boundary moves, the books stay exact). An owner consumes
 * front-to-back and a thief back-to-front, so they may meet but never cross.
 *
 * A dead rank's dispatched-but-uncompleted chunks return to a reclaimed queue
 * ({@link ChunkPool.forfeit}) that is served before anything else.
 */
export class ChunkPool {
  readonly epoch: number;
  readonly totalSamples: number;
  /** Clock time the pool was created: the epoch's start for `EpochMetrics.epochMs`. */
  readonly startedAt: number;
  #spans: { start: number; end: number }[];
  #cursor: number[];
  #dispatched: number[];
  #completed: number[];
  #chunksSent: number[];
  #outstanding: SampleRange[][];
  #reclaimed: SampleRange[] = [];
  /** Σ residues + Σ reclaimed sizes, kept as ranges move (what `remaining()` reports). */
  #unassigned: number;
  /** Σ per-rank in-flight samples, kept as chunks are recorded, completed and forfeited. */
  #inFlightTotal = 0;

  /** A pool over `Σ spanSizes` samples laid out as contiguous spans in rank order. */
  constructor(epoch: number, spanSizes: readonly number[], startedAt = 0) {
    this.epoch = epoch;
    this.startedAt = startedAt;
    this.#spans = [];
    this.#cursor = [];
    let at = 0;
    for (const size of spanSizes) {
      this.#spans.push({ start: at, end: at + size });
      this.#cursor.push(at);
      at += size;
    }
    this.totalSamples = at;
    this.#unassigned = at;
    const worldSize = spanSizes.length;
    this.#dispatched = new Array<number>(worldSize).fill(0);
    this.#completed = new Array<number>(worldSize).fill(0);
    this.#chunksSent = new Array<number>(worldSize).fill(0);
    this.#outstanding = Array.from({ length: worldSize }, () => []);
  }

  /**
   * The pool of a resumed epoch: the positions in `covered` (merged `[from, to)` spans) were
   * trained before the save and are never handed out. Each span keeps its first uncovered run
   * as its reservation; the other uncovered runs wait in the reclaimed queue.
   */
  static resumed(
    epoch: number,
    spanSizes: readonly number[],
    covered: readonly (readonly [number, number])[],
    startedAt = 0,
  ): ChunkPool {
    const pool = new ChunkPool(epoch, spanSizes, startedAt);
    let unassigned = 0;
    pool.#spans.forEach((span, rank) => {
      const runs = uncoveredRuns(span.start, span.end, covered);
      const [first, ...rest] = runs;
      pool.#cursor[rank] = first ? first[0] : span.end;
      if (first) span.end = first[1];
      for (const [from, to] of runs) unassigned += to - from;
      for (const [from, to] of rest) pool.#reclaimed.push({ offset: from, size: to - from });
    });
    pool.#unassigned = unassigned;
    return pool;
  }

  get worldSize(): number {
    return this.#spans.length;
  }

  /** Unassigned samples left in `rank`'s own span. */
  residue(rank: number): number {
    const span = this.#spans[rank];
    return span ? Math.max(0, span.end - (this.#cursor[rank] ?? span.end)) : 0;
  }

  /** `rank`'s remaining reserved stream: the unassigned front of its span. */
  reservation(rank: number): SampleRange {
    return { offset: this.#cursor[rank] ?? 0, size: this.residue(rank) };
  }

  /**
   * Takes up to `size` samples for `rank`, as one contiguous range, from (1) the reclaimed
   * queue, (2) the front of its own span, (3) the tail of the largest other residue.
   * A span residue that would be left under `foldBelow` samples is taken along, so no span
   * ends in a crumb smaller than the minimum chunk. `undefined` when nothing is left.
   */
  takeChunk(size: number, rank: number, foldBelow = 0): SampleRange | undefined {
    if (size <= 0) return undefined;
    const reclaimed = this.#reclaimed.shift();
    if (reclaimed) {
      const actual = Math.min(size, reclaimed.size);
      if (actual < reclaimed.size) {
        this.#reclaimed.unshift({ offset: reclaimed.offset + actual, size: reclaimed.size - actual });
      }
      return this.#record(rank, { offset: reclaimed.offset, size: actual });
    }
    const residue = this.residue(rank);
    if (residue > 0) {
      const actual = residue - size < foldBelow ? residue : Math.min(size, residue);
      const offset = this.#cursor[rank]!;
      this.#cursor[rank] = offset + actual;
      return this.#record(rank, { offset, size: actual });
    }
    let donor = -1;
    for (let other = 0; other < this.worldSize; other++) {
      if (other !== rank && this.residue(other) > (donor < 0 ? 0 : this.residue(donor))) donor = other;
    }
    if (donor < 0) return undefined;
    const donorResidue = this.residue(donor);
    const actual = donorResidue - size < foldBelow ? donorResidue : Math.min(size, donorResidue);
    const span = this.#spans[donor]!;
    span.end -= actual;
    return this.#record(rank, { offset: span.end, size: actual });
  }

  /** Takes `rank`'s whole residue (its own span only, never the reclaimed queue); `undefined` when empty. */
  takeOwn(rank: number): SampleRange | undefined {
    const residue = this.residue(rank);
    if (residue <= 0) return undefined;
    const offset = this.#cursor[rank]!;
    this.#cursor[rank] = offset + residue;
    return this.#record(rank, { offset, size: residue });
  }

  /**
   * Returns `rank`'s uncompleted chunks to the reclaimed queue (its death). The first
   * `creditedSamples` of its outstanding work are first marked completed: the part a
   * non-progressive rank is known to have processed. Returns the reclaimed sample count.
   */
  forfeit(rank: number, creditedSamples = 0): number {
    if (creditedSamples > 0) this.markCompleted(rank, creditedSamples);
    let reclaimed = 0;
    const outstanding = this.#outstanding[rank] ?? [];
    for (const range of outstanding) {
      reclaimed += range.size;
      this.#reclaimed.push(range);
    }
    this.#unassigned += reclaimed;
    this.#outstanding[rank] = [];
    const before = this.inFlight(rank);
    this.#dispatched[rank] = Math.max(0, (this.#dispatched[rank] ?? 0) - reclaimed);
    this.#inFlightTotal += this.inFlight(rank) - before;
    return reclaimed;
  }

  /**
   * Records completed samples for `rank`, consuming its outstanding chunks front first (chunks
   * complete in dispatch order). A completion beyond what was dispatched (a rank declared dead
   * that reported anyway) is clamped.
   */
  markCompleted(rank: number, samples: number): void {
    const dispatched = this.#dispatched[rank] ?? 0;
    const before = this.inFlight(rank);
    this.#completed[rank] = Math.min(dispatched, (this.#completed[rank] ?? 0) + samples);
    this.#inFlightTotal += this.inFlight(rank) - before;
    let left = samples;
    const outstanding = this.#outstanding[rank] ?? [];
    while (left > 0 && outstanding.length > 0) {
      const front = outstanding[0]!;
      if (front.size <= left) {
        left -= front.size;
        outstanding.shift();
      } else {
        outstanding[0] = { offset: front.offset + left, size: front.size - left };
        left = 0;
      }
    }
  }

  /** Samples not yet assigned: every residue plus reclaimed ranges. */
  remaining(): number {
    return this.#unassigned;
  }

  /** Samples dispatched to `rank` and not completed. */
  inFlight(rank: number): number {
    return Math.max(0, (this.#dispatched[rank] ?? 0) - (this.#completed[rank] ?? 0));
  }

  /** True once every sample is assigned and every assignment completed. */
  isComplete(): boolean {
    return this.#unassigned === 0 && this.#inFlightTotal === 0;
  }

  /** Samples `rank` completed in this epoch. */
  completed(rank: number): number {
    return this.#completed[rank] ?? 0;
  }

  /** Samples dispatched to `rank` (net of forfeits). */
  dispatched(rank: number): number {
    return this.#dispatched[rank] ?? 0;
  }

  /** Chunks sent to `rank`. */
  chunksSent(rank: number): number {
    return this.#chunksSent[rank] ?? 0;
  }

  /** How many of `rank`'s chunks are dispatched and not completed. */
  outstandingChunks(rank: number): number {
    return this.#outstanding[rank]?.length ?? 0;
  }

  /** `rank`'s dispatched-but-uncompleted ranges, oldest first. */
  outstanding(rank: number): readonly SampleRange[] {
    return [...(this.#outstanding[rank] ?? [])];
  }

  #record(rank: number, range: SampleRange): SampleRange {
    // Every range handed out leaves a residue or the reclaimed queue.
    this.#unassigned -= range.size;
    const before = this.inFlight(rank);
    this.#dispatched[rank] = (this.#dispatched[rank] ?? 0) + range.size;
    this.#inFlightTotal += this.inFlight(rank) - before;
    this.#chunksSent[rank] = (this.#chunksSent[rank] ?? 0) + 1;
    this.#outstanding[rank]?.push(range);
    return range;
  }
}
