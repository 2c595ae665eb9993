// Learning-rate schedulers (PyTorch: torch.optim.lr_scheduler): pure functions of the step,
// and the same schedules bound to an optimizer.
export {
  CosineAnnealingLR,
  type CosineAnnealingLROptions,
  cosineAnnealingLr,
} from './cosine-annealing-lr.js';
export {
  CosineAnnealingWarmRestarts,
  type CosineAnnealingWarmRestartsOptions,
  type CosineAnnealingWarmRestartsState,
  cosineAnnealingWarmRestartsLr,
} from './cosine-annealing-warm-restarts.js';
export { CyclicLR, type CyclicLROptions, cyclicLr, cyclicMomentum } from './cyclic-lr.js';
export { ExponentialLR, type ExponentialLROptions, exponentialLr } from './exponential-lr.js';
export { LambdaLR, type LambdaLROptions, type LrLambda } from './lambda-lr.js';
export { LinearLR, type LinearLROptions, linearLr } from './linear-lr.js';
export {
  LinearWarmup,
  type LinearWarmupOptions,
  type LinearWarmupSchedulerOptions,
  type LinearWarmupState,
  linearWarmupLr,
} from './linear-warmup.js';
export { LRScheduler, type LRSchedulerState, type LrSchedule } from './lr-scheduler.js';
export { MultiStepLR, type MultiStepLROptions, multiStepLr } from './multi-step-lr.js';
export { OneCycleLR, type OneCycleLROptions, oneCycleLr, oneCycleMomentum } from './one-cycle-lr.js';
export {
  ReduceLROnPlateau,
  type ReduceLROnPlateauOptions,
  type ReduceLROnPlateauState,
} from './reduce-lr-on-plateau.js';
export { SequentialLR, type SequentialLROptions, type SequentialLRState } from './sequential-lr.js';
export { StepLR, type StepLROptions, stepLr } from './step-lr.js';
