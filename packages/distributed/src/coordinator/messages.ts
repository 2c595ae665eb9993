import type {
  CoordinatorMessage,
  EpochMetrics,
  NewNcclSession,
  RankMessage,
  RequestNewNcclId,
  SaveReason,
} from '../wire/messages.js';
import type { RankDeathRecord } from './membership.js';

export type { NewNcclSession, RequestNewNcclId };

/**
 * A rank's control message as the coordinator sees it: the wire's {@link RankMessage} plus the
 * rank of the connection it came in on (the wire never lets a rank name itself).
 *
 * @example
 * ```ts
 * server.on('message', ([rank, message]) => send(coordinator.handle({ ...message, rank })));
 * ```
 */
export type RankReport = { readonly rank: number } & RankMessage;

/** A rank finished its handshake (formation: every rank must join once). */
export interface RankJoined {
  readonly type: 'RankJoined';
  readonly rank: number;
}

/** The supervisor (launcher or host agent) saw a rank's process end. */
export interface RankExited {
  readonly type: 'RankExited';
  readonly rank: number;
  readonly exitCode?: number;
  readonly signal?: string;
  readonly pid?: number;
  readonly message?: string;
  readonly stack?: string;
}

/** A rank's control connection closed or failed. */
export interface ConnectionLost {
  readonly type: 'ConnectionLost';
  readonly rank: number;
  readonly message?: string;
}

/** The CPU reduce root finished round `version`, summing exactly the `accepted` contributions. */
export interface ReduceCompleted {
  readonly type: 'ReduceCompleted';
  readonly version: number;
  readonly accepted: readonly number[];
}

/** Time passed: heartbeat staleness, the coordinator beacon, stall ceilings. */
export interface Tick {
  readonly type: 'Tick';
}

/** Inputs from the coordinator's own host (handshake, supervision, reduce root, timer). */
export type HostInput = RankJoined | RankExited | ConnectionLost | ReduceCompleted | Tick;

/** Everything the coordinator is fed. */
export type CoordinatorInput = RankReport | HostInput;

/**
 * What the coordinator tells one rank: the wire's {@link CoordinatorMessage} (floDl's NCCL
 * re-formation pair, `RequestNewNcclId` / `NewNcclSession`, included).
 */
export type CoordinatorCommand = CoordinatorMessage;

/** A command for one rank. Per-rank order is significant (the control channel is FIFO). */
export interface AddressedCommand {
  readonly rank: number;
  readonly command: CoordinatorCommand;
}

/** The guard verdict applied at a reduce. */
export type VerdictKind = 'Stable' | 'SuppressGrowth' | 'NudgeDown';

/** Host-side events: for the launcher's callbacks (metrics, eval results), logs and tests. */
export type CoordinatorNotice =
  | { readonly type: 'Formed'; readonly worldSize: number }
  | { readonly type: 'EpochMetrics'; readonly metrics: EpochMetrics }
  | {
      readonly type: 'EvalResult';
      readonly rank: number;
      readonly epoch: number;
      readonly metric: number;
      readonly error?: string;
    }
  | {
      readonly type: 'CheckpointResult';
      readonly rank: number;
      readonly version: number;
      readonly error?: string;
      /** Every live rank failed this version: the run continues without it. */
      readonly gaveUp?: boolean;
    }
  | { readonly type: 'AveragingStarted'; readonly version: number; readonly ranks: readonly number[] }
  | {
      readonly type: 'Averaged';
      readonly version: number;
      readonly globalStep: number;
      /** Realized steps per rank in the averaged window. */
      readonly steps: readonly number[];
      /** Σ mass of the accepted contributions: the root's one divisor. */
      readonly divisor: number;
      readonly verdict: VerdictKind;
      readonly anchor: number;
      readonly batchCounts: readonly number[];
      readonly phase: string;
      readonly feed: 'delivered' | 'compute';
      readonly syncMs: number;
    }
  | { readonly type: 'AnchorChanged'; readonly from: number; readonly to: number }
  /**
   * `rank` owes work and made no progress for `overdueMs` (past its `allowanceMs`): it left
   * the cohort, its work went to the others; it is declared dead (`stalled`) at the heartbeat timeout.
   */
  | {
      readonly type: 'RankSuspected';
      readonly rank: number;
      readonly overdueMs: number;
      readonly allowanceMs: number;
    }
  | { readonly type: 'RankDead'; readonly record: RankDeathRecord }
  | { readonly type: 'InputRejected'; readonly input: string; readonly reason: string }
  | {
      readonly type: 'Finished';
      readonly reason: 'Completed' | SaveReason;
      readonly failedRanks: readonly number[];
    };

/** Everything one input produced. */
/**
 * What the launcher-side host must do for a host-mode round (the CPU reduce root): the
 * coordinator says which contributions to collect and which to leave out, so the host keeps
 * no shadow of the round's state.
 */
export type HostCommand =
  /** Collect the snapshots of `ranks` for round `version`, fold them, ship the consensus, report `ReduceCompleted`. */
  | { readonly type: 'Collect'; readonly version: number; readonly ranks: readonly number[] }
  /** `rank` died during round `version`: its contribution enters neither the sum nor the divisor. */
  | { readonly type: 'Drop'; readonly version: number; readonly rank: number }
  /** The run ended with round `version` in flight: send nothing more for it. */
  | { readonly type: 'Abandon'; readonly version: number };

export interface CoordinatorOutput {
  readonly commands: AddressedCommand[];
  readonly notices: CoordinatorNotice[];
  /** Host modes: the reduce work of the launcher-side host. */
  readonly host: HostCommand[];
}
