// The user callbacks a rank runs: eval (eval mode, no grad) and checkpoint, each timed, a
// failure reported as text rather than thrown (the coordinator decides what it means).

import { noGrad } from '@flodl/autograd';
import type { CallbackOutcome } from './control-drain.js';
import type { RuntimeCallbacks } from './runtime-options.js';
import { messageOf } from './train-step.js';
import type { AnyModule } from './types.js';

/** Runs the eval callback on `model`; the metric, or the error. */
export async function runEval<M extends AnyModule>(
  model: M,
  callbacks: RuntimeCallbacks<M> | undefined,
): Promise<CallbackOutcome & { metric: number }> {
  const { evalFn, evalDataset } = callbacks ?? {};
  const started = performance.now();
  if (!evalFn) return { metric: Number.NaN, error: 'no evalFn', elapsedMs: 0 };
  try {
    model.eval();
    const metric = await noGrad(() => evalFn(model, evalDataset));
    if (typeof metric !== 'number') {
      return { metric: Number.NaN, error: `evalFn returned ${typeof metric}, not a number`, elapsedMs: 0 };
    }
    return { metric, elapsedMs: performance.now() - started };
  } catch (error) {
    return { metric: Number.NaN, error: messageOf(error), elapsedMs: performance.now() - started };
  } finally {
    model.train();
  }
}

/** Runs the checkpoint callback of round (or epoch) `version`; the error, if it failed. */
export async function runCheckpoint<M extends AnyModule>(
  model: M,
  callbacks: RuntimeCallbacks<M> | undefined,
  version: number,
): Promise<CallbackOutcome> {
  const checkpointFn = callbacks?.checkpointFn;
  const started = performance.now();
  if (!checkpointFn) return { error: 'no checkpointFn', elapsedMs: 0 };
  try {
    await checkpointFn(version, model);
    return { elapsedMs: performance.now() - started };
  } catch (error) {
    return { error: messageOf(error), elapsedMs: performance.now() - started };
  }
}

/**
 * The elected rank's checkpoint in a cluster: the `checkpointFn` callback (when there is
 * one), then a bundle (when the run has a `savePath`); their errors joined.
 */
export async function checkpointAndBundle(
  checkpoint: (() => Promise<CallbackOutcome>) | undefined,
  saveBundle: (() => void | Promise<void>) | undefined,
): Promise<CallbackOutcome> {
  const started = performance.now();
  const errors: string[] = [];
  if (checkpoint) {
    const { error } = await checkpoint();
    if (error !== undefined) errors.push(error);
  }
  if (saveBundle) {
    try {
      await saveBundle();
    } catch (error) {
      errors.push(messageOf(error));
    }
  }
  return {
    ...(errors.length > 0 ? { error: errors.join('; ') } : {}),
    elapsedMs: performance.now() - started,
  };
}
