// A run's full description: the three user functions and the resolved options.

import type { Optimizer } from '@flodl/nn';
import type { Tensor } from '@flodl/tensor-native';
import type { AnyModule, ModelFactory, TrainStep } from '../runtime/types.js';
import type { ResolvedTrainerOptions } from './options.js';

/** Builds the optimizer over the model's parameters. */
export type OptimizerFactory = (parameters: Tensor[]) => Optimizer;

/** @internal Everything a run needs, checked. */
export interface RunSpec<M extends AnyModule = AnyModule> {
  modelFactory: ModelFactory<M>;
  optimizerFactory: OptimizerFactory;
  trainStep: TrainStep<M>;
  options: ResolvedTrainerOptions<M>;
}
