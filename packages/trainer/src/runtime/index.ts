// The rank runtime: one rank's training engine, shared by the managed and cooperative tiers.
export { modelSignature } from './model-signature.js';
export {
  type ChunkReport,
  type EpochContext,
  RankRuntime,
  type RankRuntimeOptions,
  type RuntimeCallbacks,
} from './rank-runtime.js';
export { recordScalar } from './scalars.js';
export type { EpochState, ModelFactory, TrainedState, TrainingDataset, TrainStep } from './types.js';
