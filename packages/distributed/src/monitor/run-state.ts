/**
 * What a run looks like so far, folded from its metrics records: the dashboard's state (also
 * `GET /state.json`), the saved report's data, and the page's own model (the page applies the
 * same records as they stream in). Pure: no Node or DOM API, so the browser bundle shares it.
 *
 * Memory is bounded: steps, ElChe decisions and rounds keep at most `limit` entries each, thinned
 * to every other one when full (the whole run stays visible, coarser); the timeline of rare
 * events keeps the latest `limit`.
 */
import type {
  CheckpointRecord,
  ElcheRecord,
  EpochRecord,
  EvalRecord,
  ExitRecord,
  FinishedRecord,
  MonitorRecord,
  RankDeathLogRecord,
  ReformRecord,
  RoundRecord,
  RunStartRecord,
  StepRecord,
} from './schema.js';

/** What one rank is doing, as the launcher sees it. */
export type RankStatusKind = 'starting' | 'training' | 'dead' | 'exited' | 'finished';

/** One rank's row of the dashboard. */
export interface RankStatus {
  rank: number;
  status: RankStatusKind;
  /** The last step count it reported. */
  steps: number;
  /** Its last sampled step loss. */
  lastLoss: number | null;
  /** Samples/s in the last epoch. */
  samplesPerSec: number | null;
  /** Its fraction of the last epoch's batches. */
  share: number | null;
  /** Why it died, when it did. */
  cause?: string;
  exitCode?: number | null;
}

/** A timeline entry: a checkpoint, a death, a re-formation, an exit or the end (rounds have their own list). */
export type TimelineRecord =
  | CheckpointRecord
  | RankDeathLogRecord
  | ReformRecord
  | ExitRecord
  | FinishedRecord;

/** The folded state of a run (plain JSON). */
export interface RunStateSnapshot {
  /** The schema version of the records it was folded from. */
  version: number;
  run: RunStartRecord | null;
  startedAt: number | null;
  updatedAt: number | null;
  epochs: EpochRecord[];
  evals: EvalRecord[];
  steps: StepRecord[];
  elche: ElcheRecord[];
  rounds: RoundRecord[];
  timeline: TimelineRecord[];
  ranks: RankStatus[];
  finished: FinishedRecord | null;
  /** Records folded in, all kinds. */
  recordCount: number;
}

/** Default bound of each list. */
export const RUN_STATE_LIMIT = 4000;

/** Appends `item`, thinning `list` to every other entry (the newest kept) once it holds `limit`. */
function pushThinned<T>(list: T[], item: T, limit: number): void {
  list.push(item);
  if (list.length <= limit) return;
  const kept = list.filter((_, index) => (list.length - 1 - index) % 2 === 0);
  list.length = 0;
  list.push(...kept);
}

/** Folds metrics records into a {@link RunStateSnapshot}. */
export class RunState {
  readonly #limit: number;
  readonly #state: RunStateSnapshot;

  constructor(options: { limit?: number; from?: RunStateSnapshot } = {}) {
    this.#limit = Math.max(16, options.limit ?? RUN_STATE_LIMIT);
    this.#state = options.from ? structuredClone(options.from) : RunState.empty();
  }

  /** A state with nothing folded in. */
  static empty(): RunStateSnapshot {
    return {
      version: 1,
      run: null,
      startedAt: null,
      updatedAt: null,
      epochs: [],
      evals: [],
      steps: [],
      elche: [],
      rounds: [],
      timeline: [],
      ranks: [],
      finished: null,
      recordCount: 0,
    };
  }

  /** The current state (live: do not modify; `JSON.stringify` it or copy it). */
  get snapshot(): RunStateSnapshot {
    return this.#state;
  }

  /** Folds one record in; unknown kinds are counted and ignored. */
  apply(record: MonitorRecord): void {
    const state = this.#state;
    state.recordCount += 1;
    state.startedAt ??= record.t;
    state.updatedAt = Math.max(state.updatedAt ?? record.t, record.t);
    switch (record.kind) {
      case 'run':
        state.run = record;
        state.version = record.version;
        state.startedAt = record.t;
        for (let rank = 0; rank < record.worldSize; rank++) this.#rank(rank);
        break;
      case 'formed':
        for (let rank = 0; rank < record.worldSize; rank++) this.#rank(rank);
        break;
      case 'epoch':
        this.#epoch(record);
        break;
      case 'step': {
        pushThinned(state.steps, record, this.#limit);
        const rank = this.#rank(record.rank);
        if (rank.status === 'starting') rank.status = 'training';
        rank.steps = Math.max(rank.steps, record.step);
        rank.lastLoss = record.loss;
        break;
      }
      case 'eval':
        state.evals.push(record);
        if (state.evals.length > this.#limit) state.evals.shift();
        break;
      case 'elche':
        pushThinned(state.elche, record, this.#limit);
        break;
      case 'round':
        pushThinned(state.rounds, record, this.#limit);
        break;
      case 'death': {
        const rank = this.#rank(record.rank);
        rank.status = 'dead';
        rank.cause = record.cause;
        this.#timeline(record);
        break;
      }
      case 'exit': {
        const rank = this.#rank(record.rank);
        if (rank.status !== 'dead') rank.status = record.exitCode === 0 ? 'finished' : 'exited';
        rank.exitCode = record.exitCode;
        this.#timeline(record);
        break;
      }
      case 'reform':
      case 'checkpoint':
        this.#timeline(record);
        break;
      case 'finished':
        state.finished = record;
        for (const rank of state.ranks) if (rank.status === 'training') rank.status = 'finished';
        this.#timeline(record);
        break;
      default:
        break;
    }
  }

  #epoch(record: EpochRecord): void {
    this.#state.epochs.push(record);
    if (this.#state.epochs.length > this.#limit) this.#state.epochs.shift();
    const { metrics } = record;
    metrics.perRankThroughput.forEach((perMs, index) => {
      const rank = this.#rank(index);
      rank.samplesPerSec = perMs * 1000;
      rank.share = metrics.perRankBatchShare[index] ?? null;
      if (rank.status === 'starting' && (metrics.perRankSamples[index] ?? 0) > 0) rank.status = 'training';
    });
  }

  #timeline(record: TimelineRecord): void {
    this.#state.timeline.push(record);
    if (this.#state.timeline.length > this.#limit) this.#state.timeline.shift();
  }

  #rank(rank: number): RankStatus {
    const ranks = this.#state.ranks;
    while (ranks.length <= rank) {
      ranks.push({
        rank: ranks.length,
        status: 'starting',
        steps: 0,
        lastLoss: null,
        samplesPerSec: null,
        share: null,
      });
    }
    return ranks[rank]!;
  }
}
