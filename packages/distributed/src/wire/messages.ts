/**
 * The messages of the wire protocol, as TypeScript types.
 *
 * Every message is an object with a `type` naming its variant; the frame header carries
 * the matching numeric kind (`MessageKind`). Kinds are grouped by direction and are
 * append-only: a kind's number and its fields' order never change; new messages take
 * the next free number of their group and new fields are appended as optional.
 *
 * Ranks are never named inside rank → coordinator messages: the coordinator knows the
 * rank of each connection from its handshake, so a rank cannot speak for another.
 */

/** Numeric message kinds, grouped: 0x01xx handshake, 0x02xx coordinator → rank, 0x03xx rank → coordinator, 0x04xx data channel. */
export const MessageKind = {
  Hello: 0x0101,
  Welcome: 0x0102,
  Reject: 0x0103,

  StartEpoch: 0x0201,
  SyncNow: 0x0202,
  RequestParams: 0x0203,
  Update: 0x0204,
  Throttle: 0x0205,
  SetGlobalStep: 0x0206,
  Checkpoint: 0x0207,
  ExecuteEvalCallback: 0x0208,
  SetEpochCallbackRole: 0x0209,
  EpochAggregated: 0x020a,
  EvalBroadcast: 0x020b,
  Shutdown: 0x020c,
  ShutdownWithSave: 0x020d,
  CoordHeartbeat: 0x020e,
  ExtendPartition: 0x020f,
  DeclareDead: 0x0210,
  RequestNewNcclId: 0x0211,
  NewNcclSession: 0x0212,

  Batch: 0x0301,
  SyncAck: 0x0302,
  Heartbeat: 0x0303,
  Intent: 0x0304,
  EvalResult: 0x0305,
  CheckpointResult: 0x0306,
  LrUpdate: 0x0307,
  Metrics: 0x0308,
  Exiting: 0x0309,
  SnapshotReady: 0x030a,
  EpochFnElapsed: 0x030b,
  NewNcclIdGenerated: 0x030c,

  ContributionBegin: 0x0401,
  TensorBegin: 0x0402,
  TensorChunk: 0x0403,
} as const;

/** The name of a message variant. */
export type MessageType = keyof typeof MessageKind;

/** The two channels a rank opens to the coordinator. */
export type ChannelName = 'control' | 'data';

/** Channels, in wire order (append-only). */
export const CHANNEL_NAMES = ['control', 'data'] as const satisfies readonly ChannelName[];

// ---------------------------------------------------------------------------------------
// Handshake
// ---------------------------------------------------------------------------------------

/**
 * Rank → coordinator, the first frame of every connection, signed with the run secret
 * itself (sequence 0). The coordinator answers `Welcome` or `Reject`; after `Welcome`
 * both sides sign with per-connection keys derived from the two nonces.
 */
export interface Hello {
  type: 'Hello';
  /** The sender's `PROTOCOL_VERSION`; must equal the coordinator's. */
  protocolVersion: number;
  /** The sender's global rank, in `[0, worldSize)`. */
  rank: number;
  /** The world size the sender was started with; must equal the coordinator's. */
  worldSize: number;
  /** Which channel this connection is. */
  channel: ChannelName;
  /** The sender's host name (diagnostics only). */
  host: string;
  /** The sender's process id (diagnostics and death records). */
  pid: number;
  /** Optional features the sender supports, e.g. `bf16-wire` (informational in v1). */
  capabilities: string[];
  /** 16 fresh random bytes; binds the session keys to this connection. */
  nonce: Uint8Array;
}

/** Coordinator → rank: the handshake is accepted. Signed with the run secret (sequence 0). */
export interface Welcome {
  type: 'Welcome';
  /** The coordinator's `PROTOCOL_VERSION`. */
  protocolVersion: number;
  /** The rank accepted (echoes `Hello.rank`). */
  rank: number;
  /** The run's world size. */
  worldSize: number;
  /** 16 fresh random bytes from the coordinator. */
  nonce: Uint8Array;
  /** Optional features the coordinator supports. */
  capabilities: string[];
}

/** Coordinator → rank: the handshake is refused; the coordinator closes the connection. */
export interface Reject {
  type: 'Reject';
  /** The coordinator's `PROTOCOL_VERSION`. */
  protocolVersion: number;
  /** Why, in words, e.g. `rank 3 is already connected`. */
  reason: string;
}

/** The messages of the handshake. */
export type HandshakeMessage = Hello | Welcome | Reject;

// ---------------------------------------------------------------------------------------
// Coordinator → rank
// ---------------------------------------------------------------------------------------

/**
 * A slice of one epoch's sample permutation. Every process derives the permutation from
 * `(seed, epoch)` alike, so a plan is three numbers, never a list of indices.
 */
export interface EpochPlan {
  /** The epoch whose permutation is sliced. */
  epoch: number;
  /** First position of the slice in the permutation. */
  partitionOffset: number;
  /** Number of positions (samples) in the slice. */
  partitionSize: number;
}

/** Start training on `plan` (a whole partition, or one chunk in progressive dispatch). */
export interface StartEpoch {
  type: 'StartEpoch';
  plan: EpochPlan;
}

/** Device-collective modes: run the (weighted) parameter collective now, then `SyncAck`. */
export interface SyncNow {
  type: 'SyncNow';
}

/** Host-averaging modes: send your snapshot for averaging round `version` on the data channel. */
export interface RequestParams {
  type: 'RequestParams';
  /** The averaging round. */
  version: number;
}

/** Host-averaging modes: the consensus of round `version` is on the data channel; apply it. */
export interface Update {
  type: 'Update';
  /** The averaging round the consensus belongs to. */
  version: number;
  /** The next chunk, folded in to save a round trip (progressive dispatch). */
  nextPlan?: EpochPlan;
}

/** Block until the next `SyncNow`, `Update` or `Shutdown` (the `maxBatchDiff` guard). */
export interface Throttle {
  type: 'Throttle';
}

/** The LR clock after a reduce: schedulers read `globalStep + stepsSinceAverage`. */
export interface SetGlobalStep {
  type: 'SetGlobalStep';
  globalStep: number;
}

/** Run the checkpoint callback for averaging `version` if you are `targetRank`. */
export interface Checkpoint {
  type: 'Checkpoint';
  /** The averaging round the checkpoint captures. */
  version: number;
  /** The elected checkpoint rank. */
  targetRank: number;
}

/** Run the eval callback if you are `targetRank`; answer `EvalResult` with the same id. */
export interface ExecuteEvalCallback {
  type: 'ExecuteEvalCallback';
  /** Matches the `EvalResult` to this request. */
  scheduleId: number;
  epoch: number;
  /** The elected eval rank. */
  targetRank: number;
}

/** `rank` fires the epoch callback from now on (sticky until that rank dies). */
export interface SetEpochCallbackRole {
  type: 'SetEpochCallbackRole';
  rank: number;
}

/** One epoch's metrics, aggregated over every rank by the coordinator. */
export interface EpochMetrics {
  epoch: number;
  /** Batch-weighted mean loss over all ranks. */
  avgLoss: number;
  /** Wall time of the epoch (the slowest rank; progressive mode: pool elapsed). */
  epochMs: number;
  /** Batch-weighted means of the scalars ranks recorded. */
  scalars: Record<string, number>;
  /** Each rank's own scalar means, indexed by rank. */
  perRank: Record<string, number>[];
  /** Samples per ms, per rank. */
  perRankThroughput: number[];
  /** Fraction of the epoch's batches each rank ran. */
  perRankBatchShare: number[];
  /** When each rank finished its share, ms from the epoch start. */
  perRankShareCompleteMs: number[];
  /** Pure compute time per rank, ms. */
  perRankComputeOnlyMs: number[];
  /** Time each rank waited on data, ms. */
  perRankDataStarveMs: number[];
  /** The device index each rank trains on. */
  deviceIndices: number[];
  /** Mean loss per rank; `null` for a rank that ran no batch (absent is not zero). */
  perRankLoss: (number | null)[];
  /** Samples each rank processed. */
  perRankSamples: number[];
}

/** The aggregated metrics of an epoch, sent to every rank (the cooperative view). */
export interface EpochAggregated {
  type: 'EpochAggregated';
  metrics: EpochMetrics;
}

/** The elected rank's eval result, sent to every rank. */
export interface EvalBroadcast {
  type: 'EvalBroadcast';
  epoch: number;
  metric: number;
}

/** Exit cleanly (answer `Exiting` first). */
export interface Shutdown {
  type: 'Shutdown';
}

/** Why a run ends with a save. Append-only. */
export const SAVE_REASONS = [
  'GracefulShutdown',
  'MaxFailureExceeded',
  'SingleSurvivor',
  'AllRanksLost',
  'ReduceStall',
  'Checkpoint',
] as const;

/** One of `SAVE_REASONS`. */
export type SaveReason = (typeof SAVE_REASONS)[number];

/** Persist the checkpoint bundle, then exit: the run cannot continue. */
export interface ShutdownWithSave {
  type: 'ShutdownWithSave';
  reason: SaveReason;
}

/** The coordinator is alive (about once a second); a rank that hears nothing for long exits. */
export interface CoordHeartbeat {
  type: 'CoordHeartbeat';
}

/** Also train on `[offset, offset + size)` of `epoch`'s permutation (a dead rank's leftovers). */
export interface ExtendPartition {
  type: 'ExtendPartition';
  epoch: number;
  offset: number;
  size: number;
}

/** `rank` is dead: abort collectives that include it. */
export interface DeclareDead {
  type: 'DeclareDead';
  rank: number;
}

/** Largest rendezvous token of a process-group re-formation (floDl: a 128-byte NCCL unique id). */
export const MAX_SESSION_ID_BYTES = 128;

/**
 * Collective modes, after a death: you are the lowest survivor; mint the rendezvous of the
 * survivors' new process group and answer `NewNcclIdGenerated`.
 */
export interface RequestNewNcclId {
  type: 'RequestNewNcclId';
}

/**
 * Collective modes, after a death: leave the old process group and join the survivors' new
 * one as `newRank` of `newWorldSize` (survivors in ascending global rank order).
 */
export interface NewNcclSession {
  type: 'NewNcclSession';
  /** The rendezvous token the lowest survivor minted (opaque to the coordinator). */
  uidBytes: Uint8Array;
  newRank: number;
  newWorldSize: number;
}

/** Everything the coordinator sends a rank on the control channel. */
export type CoordinatorMessage =
  | StartEpoch
  | SyncNow
  | RequestParams
  | Update
  | Throttle
  | SetGlobalStep
  | Checkpoint
  | ExecuteEvalCallback
  | SetEpochCallbackRole
  | EpochAggregated
  | EvalBroadcast
  | Shutdown
  | ShutdownWithSave
  | CoordHeartbeat
  | ExtendPartition
  | DeclareDead
  | RequestNewNcclId
  | NewNcclSession;

// ---------------------------------------------------------------------------------------
// Rank → coordinator
// ---------------------------------------------------------------------------------------

/** Timing of one training step (ElChe's input). Acks are not batches. */
export interface Batch {
  type: 'Batch';
  /** Wall time of the step, ms. */
  batchMs: number;
  /** Part of it spent waiting for data, ms. */
  dataMs: number;
  /** Steps this rank has run, this one included. */
  stepCount: number;
  /** The step's loss (NaN allowed: the coordinator should see a diverged rank). */
  batchLoss: number;
  /** ‖params‖, sent every few steps. */
  paramNorm?: number;
  /** Divergence measured at the last sync, when one happened since the previous batch. */
  syncDivergence?: number;
}

/** The collective of `SyncNow` is done; not counted as a batch. */
export interface SyncAck {
  type: 'SyncAck';
  stepCount: number;
  /** ‖pre − post‖ / ‖post‖ of the parameters. */
  divergence?: number;
  postNorm?: number;
  preNorm?: number;
}

/** The rank is alive; sent on a timer independent of training. */
export interface Heartbeat {
  type: 'Heartbeat';
  stepCount: number;
}

/** What a rank may ask for (the coordinator decides). Append-only. */
export const INTENTS = ['EvalNow', 'CheckpointNow'] as const;

/** One of `INTENTS`. */
export type IntentKind = (typeof INTENTS)[number];

/** The rank asks for an eval or a checkpoint; a request, not a decision. */
export interface Intent {
  type: 'Intent';
  intent: IntentKind;
}

/** Answer to `ExecuteEvalCallback`. */
export interface EvalResult {
  type: 'EvalResult';
  scheduleId: number;
  epoch: number;
  metric: number;
  elapsedMs: number;
  /** Set when the callback failed (the metric is then meaningless). */
  error?: string;
}

/** Answer to `Checkpoint`. */
export interface CheckpointResult {
  type: 'CheckpointResult';
  version: number;
  elapsedMs: number;
  /** Set when the save failed; the coordinator retries on another rank. */
  error?: string;
}

/** The rank's scheduler moved the learning rate (input of the meta-controller). */
export interface LrUpdate {
  type: 'LrUpdate';
  lr: number;
}

/** A recorded scalar's running total. */
export interface ScalarTotal {
  sum: number;
  count: number;
}

/** Metrics of one epoch, or of one chunk in progressive dispatch. */
export interface Metrics {
  type: 'Metrics';
  epoch: number;
  avgLoss: number;
  batchesProcessed: number;
  epochMs: number;
  samplesProcessed: number;
  /** When the rank finished its share, ms from the epoch start. */
  shareCompleteMs: number;
  computeOnlyMs: number;
  dataStarveMs: number;
  /** `recordScalar` totals by name. */
  scalars: Record<string, ScalarTotal>;
}

/** The rank is exiting cleanly (sent only on a clean exit). */
export interface Exiting {
  type: 'Exiting';
}

/** The rank's snapshot for round `version` is fully sent (honest per-rank upload time). */
export interface SnapshotReady {
  type: 'SnapshotReady';
  version: number;
}

/** The epoch callback of `epoch` ran for `elapsedMs` (excluded from the timing ledger). */
export interface EpochFnElapsed {
  type: 'EpochFnElapsed';
  epoch: number;
  elapsedMs: number;
}

/** Answer to `RequestNewNcclId`: the rendezvous token of the survivors' new process group. */
export interface NewNcclIdGenerated {
  type: 'NewNcclIdGenerated';
  uidBytes: Uint8Array;
}

/** Everything a rank sends the coordinator on the control channel. */
export type RankMessage =
  | Batch
  | SyncAck
  | Heartbeat
  | Intent
  | EvalResult
  | CheckpointResult
  | LrUpdate
  | Metrics
  | Exiting
  | SnapshotReady
  | EpochFnElapsed
  | NewNcclIdGenerated;

// ---------------------------------------------------------------------------------------
// Data channel
// ---------------------------------------------------------------------------------------

/** Element types on the data channel, in wire order (append-only). */
export const WIRE_DTYPES = [
  'float16',
  'bfloat16',
  'float32',
  'float64',
  'int32',
  'int64',
  'uint8',
  'bool',
] as const;

/** A contribution (or the consensus) of averaging round `version` begins: `tensorCount` tensors follow. */
export interface ContributionBegin {
  type: 'ContributionBegin';
  version: number;
  tensorCount: number;
}

/**
 * One tensor begins; its raw little-endian bytes follow in `TensorChunk` frames
 * (`shape`'s product × the element size, in order; none for an empty tensor).
 */
export interface TensorBegin {
  type: 'TensorBegin';
  name: string;
  dtype: (typeof WIRE_DTYPES)[number];
  shape: number[];
  /** The weight this tensor was pre-scaled by (mass law: folds sum, the root divides once). */
  mass: number;
}

/** The structured data-channel messages (`TensorChunk` is raw bytes, not a message). */
export type DataMessage = ContributionBegin | TensorBegin;

/** Every structured message of the protocol. */
export type WireMessage = HandshakeMessage | CoordinatorMessage | RankMessage | DataMessage;
