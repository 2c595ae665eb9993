import type { ApplyPolicy } from '../config.js';
import { mergeSpans } from '../resume.js';
import { ChunkPool } from './chunk-pool.js';
import { chunkBatches, chunkCohort } from './chunk-sizing.js';
import { type EpochPlan, usableSamples } from './epoch-plan.js';
import { equalShares } from './partition.js';
import { reservationSpans } from './reservations.js';

/** What the dispatcher needs to know about the cohort at a decision (read from ElChe and membership). */
export interface DispatchContext {
  readonly policy: ApplyPolicy;
  readonly live: readonly boolean[];
  /** ElChe is calibrated or hinted: counts carry speed. */
  readonly calibrated: boolean;
  readonly counts: readonly number[];
  readonly msPerBatch: readonly number[];
  readonly partitionRatios: readonly number[] | undefined;
  /** Clock time (ms), stamped on new pools. */
  readonly now: number;
}

/** Options of {@link EpochDispatcher}. */
export interface EpochDispatcherOptions {
  readonly worldSize: number;
  readonly totalSamples: number;
  readonly batchSize: number;
  readonly numEpochs: number;
  /** Chunked dispatch (Cadence/Async); false hands out whole partitions (Sync). */
  readonly progressive: boolean;
  readonly minChunkBatches: number;
  /**
   * A rank whose one chunk in flight has this many batches or fewer left (by its batch reports)
   * may be handed its next chunk ahead: at most two in flight, the second waiting. 0 (the
   * default) keeps one chunk in flight per rank.
   */
  readonly lookaheadBatches?: number;
  /** A rank may stream one epoch ahead once the active pool is drained (CpuCadence, CpuAsync). */
  readonly streamAhead: boolean;
}

/** A dead rank's leftover samples re-assigned to a survivor (wire `ExtendPartition`). */
export interface Extension {
  readonly rank: number;
  readonly epoch: number;
  readonly offset: number;
  readonly size: number;
}

/**
 * Epoch plans and progressive dispatch (floDl `epoch_dispatch` + `chunk_pool`).
 *
 * Each epoch gets a {@link ChunkPool} over `floor(N/batch)·batch` samples with per-rank
 * reservation spans. Without progressive dispatch (Sync) every live rank receives its whole
 * span at the epoch's start. With it, each rank holds at most one chunk in flight and asks for
 * the next when it reports the previous one (or, with `lookaheadBatches`, gets it ahead when
 * its chunk is about to end: then one more waits); chunk sizes follow {@link chunkBatches}.
 * Epoch N is aggregated only once its pool is complete and every earlier epoch has been
 * aggregated.
 */
export class EpochDispatcher {
  readonly options: EpochDispatcherOptions;
  /** Samples per epoch: `floor(N / batch) × batch`. */
  readonly epochSamples: number;
  /** Batches per epoch: `floor(N / batch)`. */
  readonly epochBatches: number;
  #pools = new Map<number, ChunkPool>();
  #lastAggregated = -1;
  #doneInFlight: number[];
  /** The last cohort figures for chunk sizing and the lists they came from. */
  #cohort:
    | {
        live: readonly boolean[];
        counts: readonly number[];
        figures: { liveRanks: number[]; roundBatches: number };
      }
    | undefined;
  /** Ranks with no samples in flight (the only ones `nextChunk` can serve). */
  #idle = new Set<number>();
  /** A resumed run's epoch in progress and its positions trained before the save. */
  #resumed: { epoch: number; covered: [number, number][] } | undefined;

  constructor(options: EpochDispatcherOptions) {
    this.options = options;
    this.epochSamples = usableSamples(options.totalSamples, options.batchSize);
    this.epochBatches = this.epochSamples / options.batchSize;
    this.#doneInFlight = new Array<number>(options.worldSize).fill(0);
    for (let rank = 0; rank < options.worldSize; rank++) this.#idle.add(rank);
  }

  /**
   * Continues a saved run: every epoch before `epoch` counts as aggregated, and `epoch`'s
   * pool leaves out the `covered` positions (trained before the save). An epoch covered
   * whole moves the start to the next one. Call before the first `startEpoch`.
   */
  resumeAt(epoch: number, covered: readonly (readonly [number, number])[]): void {
    const spans = mergeSpans(covered.map(([from, to]) => [from, Math.min(to, this.epochSamples)] as const));
    const whole = spans.length === 1 && spans[0]?.[0] === 0 && spans[0][1] >= this.epochSamples;
    const start = whole ? epoch + 1 : epoch;
    this.#lastAggregated = start - 1;
    this.#resumed = whole || spans.length === 0 ? undefined : { epoch, covered: spans };
  }

  /** The lowest epoch not yet aggregated (the one barrier-paced ranks work on). */
  get activeEpoch(): number {
    return this.#lastAggregated + 1;
  }

  /** The last aggregated epoch, or −1. */
  get lastAggregated(): number {
    return this.#lastAggregated;
  }

  /** True once every epoch of the run has been aggregated. */
  get finished(): boolean {
    return this.#lastAggregated >= this.options.numEpochs - 1;
  }

  /** The pool of `epoch`, if started and not yet aggregated. */
  pool(epoch: number): ChunkPool | undefined {
    return this.#pools.get(epoch);
  }

  /** Whether `epoch`'s pool exists (started, not aggregated). */
  hasStarted(epoch: number): boolean {
    return this.#pools.has(epoch);
  }

  /**
   * Opens `epoch`: creates its pool and returns each live rank's first plan (its whole
   * partition without progressive dispatch, its first chunk with it).
   */
  startEpoch(epoch: number, context: DispatchContext): { rank: number; plan: EpochPlan }[] {
    const pool = this.#ensurePool(epoch, context);
    const plans: { rank: number; plan: EpochPlan }[] = [];
    for (let rank = 0; rank < this.options.worldSize; rank++) {
      if (!context.live[rank]) continue;
      if (!this.options.progressive) {
        const range = pool.takeOwn(rank);
        this.#refreshIdle(rank);
        if (range)
          plans.push({ rank, plan: { epoch, partitionOffset: range.offset, partitionSize: range.size } });
        continue;
      }
      const plan = this.nextChunk(rank, context);
      if (plan) plans.push({ rank, plan });
    }
    return plans;
  }

  /**
   * The next chunk for `rank`, or undefined: it has one in flight, dispatch is not
   * progressive, its epoch is drained (and it may not stream ahead), or the run is over.
   */
  nextChunk(rank: number, context: DispatchContext): EpochPlan | undefined {
    if (!this.options.progressive || !context.live[rank]) return undefined;
    const idle = this.inFlightSamples(rank) === 0;
    if (!idle && !this.endsSoon(rank)) return undefined;
    const epoch = this.#servingEpoch(context);
    if (epoch === undefined) return undefined;
    const pool = this.#ensurePool(epoch, context);
    const { batchSize } = this.options;
    let inFlight: number[] | undefined;
    const inFlightOf = (index: number): number => this.inFlightBatches(index);
    const batches = chunkBatches({
      rank,
      remainingBatches: Math.floor(pool.remaining() / batchSize),
      calibrated: context.calibrated,
      counts: context.counts,
      msPerBatch: context.msPerBatch,
      live: context.live,
      // Read only by the tail balance: built when it asks, not for every chunk.
      get inFlightBatches() {
        inFlight ??= context.live.map((_, index) => inFlightOf(index));
        return inFlight;
      },
      totalSamples: this.options.totalSamples,
      batchSize,
      minChunkBatches: this.options.minChunkBatches,
      cohort: this.#cohortOf(context),
    });
    const range = pool.takeChunk(batches * batchSize, rank, this.options.minChunkBatches * batchSize);
    if (!range) return undefined;
    this.#idle.delete(rank);
    // Batches reported count against the oldest work in flight: a chunk ahead leaves them.
    if (idle) this.#doneInFlight[rank] = 0;
    return { epoch, partitionOffset: range.offset, partitionSize: range.size };
  }

  /**
   * True when `rank` holds exactly one chunk, with `lookaheadBatches` or fewer of its batches
   * left to run: its next chunk may go out ahead.
   */
  endsSoon(rank: number): boolean {
    const lookahead = this.options.lookaheadBatches ?? 0;
    if (lookahead <= 0 || !this.options.progressive) return false;
    let chunks = 0;
    for (const pool of this.#pools.values()) chunks += pool.outstandingChunks(rank);
    return chunks === 1 && this.inFlightBatches(rank) <= lookahead;
  }

  /** Ranks a chunk can go to now, ascending: those with none in flight, and those whose chunk {@link endsSoon}. */
  readyRanks(): number[] {
    const ready = this.idleRanks();
    if ((this.options.lookaheadBatches ?? 0) <= 0) return ready;
    for (let rank = 0; rank < this.options.worldSize; rank++) {
      if (!this.#idle.has(rank) && this.endsSoon(rank)) ready.push(rank);
    }
    return ready.sort((left, right) => left - right);
  }

  /** True when {@link EpochDispatcher.nextChunk} would find samples for `rank` (ignoring its in-flight chunk). */
  hasWorkFor(context: DispatchContext): boolean {
    if (!this.options.progressive) return false;
    return this.#servingEpoch(context) !== undefined;
  }

  /** Counts one batch of `rank`'s in-flight work (tail balance reads the progress). */
  noteBatch(rank: number): void {
    this.#doneInFlight[rank] = (this.#doneInFlight[rank] ?? 0) + 1;
  }

  /** Records `rank`'s completion of `samples` in `epoch`; false for an unknown (already aggregated) epoch. */
  complete(rank: number, epoch: number, samples: number): boolean {
    const pool = this.#pools.get(epoch);
    if (!pool) return false;
    pool.markCompleted(rank, samples);
    this.#refreshIdle(rank);
    this.#doneInFlight[rank] = Math.max(
      0,
      (this.#doneInFlight[rank] ?? 0) - samples / this.options.batchSize,
    );
    return true;
  }

  /** Samples dispatched to `rank` and not completed, across open epochs. */
  inFlightSamples(rank: number): number {
    let sum = 0;
    for (const pool of this.#pools.values()) sum += pool.inFlight(rank);
    return sum;
  }

  /** Batches `rank` still has to run in its in-flight work (progress from its batch reports). */
  inFlightBatches(rank: number): number {
    const dispatched = this.inFlightSamples(rank) / this.options.batchSize;
    return Math.max(0, dispatched - (this.#doneInFlight[rank] ?? 0));
  }

  /**
   * Batches of `epoch` not yet run: its pool's unassigned batches and what the ranks holding
   * its chunks have still to run of them (from their batch reports). 0 for an epoch not open.
   */
  batchesLeft(epoch: number): number {
    const pool = this.#pools.get(epoch);
    if (!pool) return 0;
    const { batchSize } = this.options;
    let left = pool.remaining() / batchSize;
    for (let rank = 0; rank < this.options.worldSize; rank++) {
      if (pool.inFlight(rank) === 0) continue;
      // A rank runs its chunks in dispatch order, older epochs first: its reported batches
      // go to the earlier epochs' work before this one's.
      let done = this.#doneInFlight[rank] ?? 0;
      for (const other of this.#pools.values())
        if (other.epoch < epoch) done -= other.inFlight(rank) / batchSize;
      left += Math.max(0, pool.inFlight(rank) / batchSize - Math.max(0, done));
    }
    return left;
  }

  /** Batches of in-flight work `rank` has reported running (what a non-progressive death credits). */
  doneInFlightBatches(rank: number): number {
    return Math.min(this.#doneInFlight[rank] ?? 0, this.inFlightSamples(rank) / this.options.batchSize);
  }

  /** The active epoch when it is complete (all chunks reported) and ready to aggregate. */
  nextAggregatable(): number | undefined {
    const epoch = this.activeEpoch;
    const pool = this.#pools.get(epoch);
    return pool?.isComplete() ? epoch : undefined;
  }

  /** Marks `epoch` aggregated and drops its pool. */
  markAggregated(epoch: number): void {
    this.#lastAggregated = Math.max(this.#lastAggregated, epoch);
    this.#pools.delete(epoch);
    for (let rank = 0; rank < this.options.worldSize; rank++) this.#refreshIdle(rank);
  }

  /** Ranks with no samples in flight, ascending: the ones a chunk can go to. */
  idleRanks(): number[] {
    return [...this.#idle].sort((left, right) => left - right);
  }

  #refreshIdle(rank: number): void {
    if (this.inFlightSamples(rank) === 0) this.#idle.add(rank);
    else this.#idle.delete(rank);
  }

  /**
   * Returns a dead rank's uncompleted work to the pools. `creditedBatches` of its oldest
   * in-flight work count as completed (what a non-progressive rank is known to have run);
   * `onCredited` hears each epoch's credited samples.
   */
  forfeit(
    rank: number,
    creditedBatches = 0,
    onCredited: (epoch: number, samples: number) => void = () => undefined,
  ): number {
    let reclaimed = 0;
    let credit = creditedBatches * this.options.batchSize;
    for (const pool of [...this.#pools.values()].sort((left, right) => left.epoch - right.epoch)) {
      const credited = Math.min(credit, pool.inFlight(rank));
      credit -= credited;
      reclaimed += pool.forfeit(rank, credited);
      if (credited > 0) onCredited(pool.epoch, credited);
    }
    this.#doneInFlight[rank] = 0;
    this.#refreshIdle(rank);
    return reclaimed;
  }

  /**
   * Non-progressive shrink: hands every reclaimed range of the open epochs to the live ranks
   * in equal shares, as {@link Extension}s (one per contiguous piece).
   */
  distributeReclaimed(context: DispatchContext): Extension[] {
    const extensions: Extension[] = [];
    const { batchSize } = this.options;
    for (const pool of this.#pools.values()) {
      let reclaimedBatches = 0;
      for (let rank = 0; rank < pool.worldSize; rank++) {
        if (!context.live[rank]) reclaimedBatches += pool.residue(rank) / batchSize;
      }
      reclaimedBatches += (pool.remaining() - sumResidues(pool)) / batchSize;
      if (reclaimedBatches <= 0) continue;
      const shares = equalShares(reclaimedBatches, context.live);
      shares.forEach((share, rank) => {
        let left = share * batchSize;
        while (left > 0) {
          const range = pool.takeChunk(left, rank);
          this.#refreshIdle(rank);
          if (!range) break;
          extensions.push({ rank, epoch: pool.epoch, offset: range.offset, size: range.size });
          left -= range.size;
        }
      });
    }
    return extensions;
  }

  /**
   * The cohort figures for chunk sizing: computed once per distinct `live` and `counts` (they
   * change at deaths and at rounds), not for every chunk.
   */
  #cohortOf(context: DispatchContext): { liveRanks: number[]; roundBatches: number } {
    const last = this.#cohort;
    if (last && sameValues(last.live, context.live) && sameValues(last.counts, context.counts))
      return last.figures;
    const figures = chunkCohort(context.live, context.counts, this.options.minChunkBatches);
    this.#cohort = { live: context.live, counts: context.counts, figures };
    return figures;
  }

  #servingEpoch(context: DispatchContext): number | undefined {
    const active = this.activeEpoch;
    if (active >= this.options.numEpochs) return undefined;
    const pool = this.#pools.get(active);
    if (pool && pool.remaining() > 0) return active;
    // Only the CPU backend's chunked modes stream ahead: elsewhere the next epoch opens at aggregation.
    if (!pool || !this.options.streamAhead || active + 1 >= this.options.numEpochs) return undefined;
    const next = this.#pools.get(active + 1);
    if (next && next.remaining() === 0) return undefined;
    return context.live.some(Boolean) ? active + 1 : undefined;
  }

  #ensurePool(epoch: number, context: DispatchContext): ChunkPool {
    let pool = this.#pools.get(epoch);
    if (!pool) {
      const spans = reservationSpans(this.options.batchSize, {
        policy: context.policy,
        totalBatches: this.epochBatches,
        live: context.live,
        calibrated: context.calibrated,
        counts: context.counts,
        msPerBatch: context.msPerBatch,
        partitionRatios: context.partitionRatios,
      });
      const resumed = this.#resumed?.epoch === epoch ? this.#resumed : undefined;
      pool = resumed
        ? ChunkPool.resumed(epoch, spans, resumed.covered, context.now)
        : new ChunkPool(epoch, spans, context.now);
      if (resumed) this.#resumed = undefined;
      this.#pools.set(epoch, pool);
    }
    return pool;
  }
}

function sumResidues(pool: ChunkPool): number {
  let sum = 0;
  for (let rank = 0; rank < pool.worldSize; rank++) sum += pool.residue(rank);
  return sum;
}

function sameValues<T>(left: readonly T[], right: readonly T[]): boolean {
  if (left === right) return true;
  if (left.length !== right.length) return false;
  for (let index = 0; index < left.length; index++) if (left[index] !== right[index]) return false;
  return true;
}
