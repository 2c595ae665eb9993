// Optimizers (PyTorch: torch.optim).
export { Adagrad, type AdagradGroupOptions, type AdagradOptions, type AdagradState } from './adagrad.js';
export { Adam, type AdamGroupOptions, type AdamOptions, type AdamState } from './adam.js';
export { AdamW, type AdamWOptions } from './adamw.js';
export { NAdam, type NAdamGroupOptions, type NAdamOptions, type NAdamState } from './nadam.js';
export { type GroupItem, Optimizer, type OptimizerDefinition, type StepItem } from './optimizer.js';
export type {
  BaseGroupOptions,
  OptimizerParams,
  ParamGroup,
  ParamGroupInput,
} from './param-groups.js';
export { RAdam, type RAdamGroupOptions, type RAdamOptions, type RAdamState } from './radam.js';
export { RMSprop, type RMSpropGroupOptions, type RMSpropOptions, type RMSpropState } from './rmsprop.js';
export { SGD, type SGDGroupOptions, type SGDOptions, type SGDState } from './sgd.js';
export type { OptimizerStateDict, ParameterState, StateLayout } from './state-dict.js';
