// The coordinator: a pure state machine (no sockets, no CUDA) that the wire layer drives.
export { buildWindowReport, DivergenceSlots } from './averaging/cycle.js';
export { lrScaleFactor } from './averaging/lr-scale.js';
export {
  contributionMass,
  type FoldedContribution,
  foldContributions,
  MassLedger,
  prescale,
  rootAverage,
} from './averaging/mass-law.js';
export { OvershootBudget } from './averaging/overshoot.js';
export {
  type AveragingGate,
  shouldAverage,
  type ThrottleInputs,
  type ThrottleReason,
  type TriggerDecision,
  type TriggerInputs,
  throttleReason,
} from './averaging/triggers.js';
export {
  emptyWindow,
  fillExcessMs,
  hasDeliveredSample,
  meanLoss,
  type RankWindow,
  WindowLedger,
} from './averaging/window-ledger.js';
export { type CallbackCadence, CallbackScheduler, type CallbackSink } from './callbacks.js';
export { type Clock, ManualClock, systemClock } from './clock.js';
export {
  type ApplyPolicy,
  type AverageBackend,
  backendOf,
  type ConvergenceGuardKind,
  DEFAULT_ANCHOR,
  DEFAULT_DIVERGENCE_THRESHOLD,
  DEFAULT_MAX_ANCHOR,
  DEFAULT_OVERHEAD_TARGET,
  EASGD_DIVERGENCE_THRESHOLD,
  EL_CHE_MODES,
  ElCheConfig,
  type ElCheConfigOptions,
  type ElCheMode,
  isChunkedMode,
  policyOf,
  type SpeedHint,
} from './config.js';
export { ClusterCoordinator, type CoordinatorState } from './coordinator.js';
export {
  type CoordinatorConfig,
  type CoordinatorOptions,
  checkMaxFailure,
  resolveCoordinatorConfig,
} from './coordinator-config.js';
export { ChunkPool, type SampleRange } from './dispatch/chunk-pool.js';
export {
  type ChunkSizingInputs,
  chunkBatches,
  MIN_CHUNK_BATCHES,
  PROBE_DIVISOR,
  probeChunkBatches,
} from './dispatch/chunk-sizing.js';
export {
  type DispatchContext,
  EpochDispatcher,
  type EpochDispatcherOptions,
  type Extension,
} from './dispatch/dispatcher.js';
export { plansFromSizes, usableSamples } from './dispatch/epoch-plan.js';
export {
  equalShares,
  type PartitionInputs,
  partitionBatches,
  throughputShares,
  weightedShares,
} from './dispatch/partition.js';
export { reservationSpans } from './dispatch/reservations.js';
export * from './el-che/index.js';
export {
  type ConvergenceAction,
  type ConvergenceGuard,
  cosineSimilarities,
  type DivergenceReport,
  GUARD_HISTORY_CAPACITY,
  LevelGuard,
  maxRelativeDelta,
  NoGuard,
  RISING_VALUES,
} from './guard.js';
export {
  type DeathCause,
  failureLimit,
  type MaxFailureThreshold,
  Membership,
  type RankDeathRecord,
  rankFailureError,
} from './membership.js';
export type {
  AddressedCommand,
  ConnectionLost,
  CoordinatorCommand,
  CoordinatorInput,
  CoordinatorNotice,
  CoordinatorOutput,
  HostCommand,
  HostInput,
  NewNcclSession,
  RankExited,
  RankJoined,
  RankReport,
  ReduceCompleted,
  RequestNewNcclId,
  Tick,
  VerdictKind,
} from './messages.js';
export {
  baseFactorFor,
  EFFECTIVE_FACTOR_RANGE,
  LR_CLIFF_FACTOR,
  MetaController,
  SHARP_DROP_THRESHOLD,
  sustainFor,
} from './meta-controller.js';
export {
  type AggregateOptions,
  aggregateEpochMetrics,
  EpochMetricsCollector,
  type RankMetrics,
} from './metrics.js';
export { type CoordinatorResume, checkResume, isSpanList, mergeSpans, uncoveredRuns } from './resume.js';
export {
  CALLBACK_COST_ALPHA,
  CallbackCost,
  CallbackRoles,
  type EpochCallbackPolicy,
  resolveFastest,
} from './roles.js';
export {
  type AbandonedSlice,
  type CompletedSlice,
  SimulatedCluster,
  type SimulatedClusterOptions,
  type SimulatedRankSpec,
  type SimulationResult,
} from './simulation.js';
