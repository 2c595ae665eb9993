// Builds one rank's model, optimizer and scheduler the same way on every rank.

import type { Module, Optimizer } from '@flodl/nn';
import { type Device, FlodlError, manualSeed } from '@flodl/tensor-native';
import type { RuntimeCallbacks } from '../runtime/rank-runtime.js';
import type { AnyModule } from '../runtime/types.js';
import type { RunSpec } from './spec.js';

/**
 * @internal The rank's model (on `device`) and optimizer, built after seeding with the run's
 * seed.
 */
export function buildRank<M extends AnyModule>(
  spec: RunSpec<M>,
  device: Device,
): { model: M; optimizer: Optimizer } {
  manualSeed(spec.options.seed); // every rank initialises the same weights
  const model = spec.modelFactory(device);
  if (typeof model !== 'object' || model === null || typeof (model as Module).parameters !== 'function') {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the model factory must return a Module', {
      op: 'Trainer.modelFactory',
      expected: 'a Module (Sequential, Linear, a class extending Module, ...)',
      got: model === null ? 'null' : typeof model,
    });
  }
  if (model.parameters().length === 0) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the model has no parameters to train', {
      op: 'Trainer.modelFactory',
      expected: 'a model with at least one parameter (Module.parameters())',
      got: 'none',
    });
  }
  // A factory that ignores its device argument built on the CPU: move it (in place, so the
  // parameters the optimizer receives are the ones that train).
  model.to(device);
  const optimizer = spec.optimizerFactory(model.parameters());
  if (typeof optimizer !== 'object' || optimizer === null || typeof optimizer.step !== 'function') {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the optimizer factory must return an Optimizer', {
      op: 'Trainer.optimizerFactory',
      expected: 'an Optimizer over the given parameters (SGD, Adam, ...)',
      got: optimizer === null ? 'null' : typeof optimizer,
    });
  }
  return { model, optimizer };
}

/** @internal The callbacks of `spec` in the runtime's shape. */
export function callbacksOf<M extends AnyModule>(spec: RunSpec<M>): RuntimeCallbacks<M> {
  const { evalFn, evalDataset, checkpointFn, epochFn } = spec.options;
  return {
    ...(evalFn ? { evalFn } : {}),
    ...(evalDataset ? { evalDataset } : {}),
    ...(checkpointFn ? { checkpointFn } : {}),
    ...(epochFn ? { epochFn } : {}),
  };
}

/** @internal Reports a failed user callback that must not stop the run. */
export function warnCallback(name: string, error: unknown): void {
  const text = error instanceof Error ? error.message : String(error);
  process.stderr.write(`flodl: ${name} failed: ${text}\n`);
}
