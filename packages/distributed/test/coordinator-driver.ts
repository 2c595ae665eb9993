import {
  type AddressedCommand,
  ClusterCoordinator,
  type CoordinatorCommand,
  type CoordinatorInput,
  type CoordinatorNotice,
  type CoordinatorOptions,
  type CoordinatorOutput,
  ManualClock,
} from '../src/coordinator/index.js';
import type { EpochPlan } from '../src/wire/messages.js';

type CommandOf<T extends CoordinatorCommand['type']> = Extract<CoordinatorCommand, { type: T }>;

/**
 * Drives a coordinator by hand, one input at a time, remembering what it said: the plans each
 * rank holds, every command and notice. Tests script ranks with it step by step.
 */
export class Driver {
  readonly clock = new ManualClock();
  readonly coordinator: ClusterCoordinator;
  readonly commands: AddressedCommand[] = [];
  readonly notices: CoordinatorNotice[] = [];
  #plans = new Map<number, EpochPlan[]>();
  #steps = new Map<number, number>();

  constructor(options: CoordinatorOptions) {
    this.coordinator = new ClusterCoordinator(options, this.clock);
  }

  feed(input: CoordinatorInput): CoordinatorOutput {
    const output = this.coordinator.handle(input);
    this.commands.push(...output.commands);
    this.notices.push(...output.notices);
    for (const { rank, command } of output.commands) {
      if (command.type === 'StartEpoch') this.#queue(rank).push(command.plan);
      if (command.type === 'ExtendPartition') {
        this.#queue(rank).push({
          epoch: command.epoch,
          partitionOffset: command.offset,
          partitionSize: command.size,
        });
      }
    }
    return output;
  }

  /** Every rank joins. */
  join(): CoordinatorOutput {
    let output: CoordinatorOutput = { commands: [], notices: [], host: [] };
    for (let rank = 0; rank < this.coordinator.config.worldSize; rank++)
      output = this.feed({ type: 'RankJoined', rank });
    return output;
  }

  /** One `Batch` from `rank` (its step counter advances). */
  batch(rank: number, batchMs = 10, dataMs = 0, extra: { syncDivergence?: number; batchLoss?: number } = {}) {
    const stepCount = (this.#steps.get(rank) ?? 0) + 1;
    this.#steps.set(rank, stepCount);
    return this.feed({
      type: 'Batch',
      rank,
      batchMs,
      dataMs,
      stepCount,
      batchLoss: extra.batchLoss ?? 1,
      ...extra,
    });
  }

  batches(rank: number, count: number, batchMs = 10, dataMs = 0): void {
    for (let index = 0; index < count; index++) this.batch(rank, batchMs, dataMs);
  }

  /** The plans `rank` holds, oldest first. */
  plans(rank: number): readonly EpochPlan[] {
    return this.#queue(rank);
  }

  /** Runs every batch of `rank`'s oldest plan, then reports its `Metrics`; returns the plan. */
  finishChunk(rank: number, batchMs = 10, loss = 1): EpochPlan {
    const plan = this.#queue(rank).shift();
    if (!plan) throw new Error(`rank ${rank} holds no plan`);
    const batchSize = this.coordinator.config.batchSize;
    const batches = plan.partitionSize / batchSize;
    this.batches(rank, batches, batchMs);
    this.feed({
      type: 'Metrics',
      rank,
      epoch: plan.epoch,
      avgLoss: loss,
      batchesProcessed: batches,
      epochMs: batches * batchMs,
      samplesProcessed: plan.partitionSize,
      shareCompleteMs: batches * batchMs,
      computeOnlyMs: batches * batchMs,
      dataStarveMs: 0,
      scalars: {},
    });
    return plan;
  }

  /** Acks every outstanding round the way the ranks would (SyncAck, or snapshots + reduce). */
  completeRound(divergence = 0.01): void {
    const started = this.notices.filter((notice) => notice.type === 'AveragingStarted').at(-1);
    if (started?.type !== 'AveragingStarted') throw new Error('no round started');
    for (const rank of started.ranks) {
      if (this.coordinator.backend === 'Nccl') {
        this.feed({ type: 'SyncAck', rank, stepCount: this.#steps.get(rank) ?? 0, divergence });
      } else {
        this.feed({ type: 'SnapshotReady', rank, version: started.version });
      }
    }
    if (this.coordinator.backend === 'Cpu') {
      this.feed({ type: 'ReduceCompleted', version: started.version, accepted: started.ranks });
    }
  }

  /** Commands of one type, optionally for one rank. */
  sent<T extends CoordinatorCommand['type']>(type: T, rank?: number): CommandOf<T>[] {
    return this.commands.flatMap(({ rank: target, command }) =>
      command.type === type && (rank === undefined || rank === target) ? [command as CommandOf<T>] : [],
    );
  }

  /** Notices of one type. */
  noticed<T extends CoordinatorNotice['type']>(type: T): Extract<CoordinatorNotice, { type: T }>[] {
    return this.notices.filter(
      (notice): notice is Extract<CoordinatorNotice, { type: T }> => notice.type === type,
    );
  }

  /** Forgets the recorded commands and notices (the plans stay). */
  clearLog(): void {
    this.commands.length = 0;
    this.notices.length = 0;
  }

  #queue(rank: number): EpochPlan[] {
    let queue = this.#plans.get(rank);
    if (!queue) {
      queue = [];
      this.#plans.set(rank, queue);
    }
    return queue;
  }
}

/** Compact `rank:type` trace of an output, for ordering assertions. */
export function trace(output: CoordinatorOutput): string[] {
  return output.commands.map(({ rank, command }) => `${rank}:${command.type}`);
}
