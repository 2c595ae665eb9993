// The rank runtime: one rank's training engine, shared by the managed and cooperative tiers.
export { EventLoopYield, YIELD_INTERVAL_MS } from './event-loop-yield.js';
export { modelSignature } from './model-signature.js';
export {
  type ChunkReport,
  type EpochContext,
  RankRuntime,
  type RankRuntimeOptions,
  type RuntimeCallbacks,
  type RuntimeStep,
} from './rank-runtime.js';
export { recordScalar } from './scalars.js';
export type {
  AnyModule,
  EpochState,
  ModelFactory,
  TrainedState,
  TrainingDataset,
  TrainStep,
} from './types.js';
