// Loss functions (PyTorch: the losses of torch.nn.functional), by family: element-wise
// regression losses, class and probability losses, ranking losses and the CTC sequence loss.
export type { Reduction } from './arguments.js';
export {
  type BinaryCrossEntropyOptions,
  type BinaryCrossEntropyWithLogitsOptions,
  binaryCrossEntropy,
  binaryCrossEntropyWithLogits,
  type CrossEntropyOptions,
  crossEntropy,
  type KlDivOptions,
  klDiv,
  type NllLossOptions,
  nllLoss,
} from './loss-classification.js';
export {
  cosineEmbeddingLoss,
  type MarginLossOptions,
  marginRankingLoss,
  type TripletMarginLossOptions,
  tripletMarginLoss,
} from './loss-ranking.js';
export {
  type HuberLossOptions,
  huberLoss,
  type LossOptions,
  l1Loss,
  mseLoss,
  type PoissonNllLossOptions,
  poissonNllLoss,
  type SmoothL1LossOptions,
  smoothL1Loss,
} from './loss-regression.js';
export { type CtcLossOptions, ctcLoss } from './loss-sequence.js';
