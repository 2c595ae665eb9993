// Optimizer state beside the model: the state tensors go into a safetensors file under
// `state.<parameter index>.<name>`, everything else (step counts, group options) into its
// `__metadata__` as JSON, so one file restores an optimizer exactly.
import { FlodlError, invalidArgument, Tensor, tidy } from '@flodl/tensor-native';
import type { Optimizer } from '../optim/optimizer.js';
import type { OptimizerStateDict, ParameterState } from '../optim/state-dict.js';
import {
  type ByteDigest,
  readSafetensors,
  type SafetensorsMetadata,
  writeSafetensors,
} from './safetensors.js';

const FORMAT = 'flodl.optimizer/1';

interface Scalars {
  format: string;
  optimizer: string;
  paramGroups: unknown[];
  /** Per parameter index: its non-tensor state entries (counts, scalars, nulls). */
  scalars: Record<string, Record<string, number | null>>;
}

/**
 * Saves an optimizer's state (`stateDict()`) to a safetensors file, atomically. `metadata`
 * adds string entries to the header (the key `flodl` is the optimizer's own); `digest` (a
 * `node:crypto` `Hash`) is fed the file's bytes as they are written.
 * @example save(model, 'model.safetensors'); saveOptimizer(optimizer, 'optimizer.safetensors');
 * @throws FlodlError ERR_IO
 */
export function saveOptimizer(
  optimizer: Optimizer<any, any>,
  path: string,
  options: { metadata?: SafetensorsMetadata; digest?: ByteDigest } = {},
): void {
  if (typeof optimizer?.stateDict !== 'function')
    throw invalidArgument('saveOptimizer', 'optimizer', 'an Optimizer', optimizer);
  tidy(() => {
    const state = optimizer.stateDict() as OptimizerStateDict;
    const tensors: Record<string, Tensor> = {};
    const scalars: Scalars['scalars'] = {};
    for (const [index, entry] of Object.entries(state.state)) {
      for (const [name, value] of Object.entries(entry as ParameterState)) {
        if (value instanceof Tensor) tensors[`state.${index}.${name}`] = value;
        else if (value !== undefined) {
          scalars[index] = { ...scalars[index], [name]: value };
        }
      }
    }
    const metadata: Scalars = {
      format: FORMAT,
      optimizer: optimizer.constructor.name,
      paramGroups: state.paramGroups,
      scalars,
    };
    writeSafetensors(
      path,
      tensors,
      { ...options.metadata, flodl: JSON.stringify(metadata) },
      options.digest ? { digest: options.digest } : {},
    );
    for (const tensor of Object.values(tensors)) tensor.dispose();
  });
}

/**
 * Restores an optimizer from `saveOptimizer`'s file. The optimizer must be built over the same
 * parameters; nothing changes unless the whole state fits.
 * @throws FlodlError ERR_IO, ERR_CHECKPOINT (a different optimizer, groups or shapes)
 */
export function loadOptimizer(optimizer: Optimizer<any, any>, path: string): void {
  if (typeof optimizer?.loadStateDict !== 'function')
    throw invalidArgument('loadOptimizer', 'optimizer', 'an Optimizer', optimizer);
  const { tensors, metadata } = readSafetensors(path);
  try {
    let saved: Scalars;
    try {
      saved = JSON.parse(metadata.flodl ?? 'null') as Scalars;
    } catch {
      throw new FlodlError('ERR_CHECKPOINT', `${path} has unreadable optimizer metadata`, {
        op: 'loadOptimizer',
      });
    }
    if (saved === null || saved.format !== FORMAT) {
      throw new FlodlError('ERR_CHECKPOINT', `${path} is not an optimizer checkpoint`, {
        op: 'loadOptimizer',
        expected: FORMAT,
        got: String(saved?.format),
      });
    }
    if (saved.optimizer !== optimizer.constructor.name) {
      throw new FlodlError('ERR_CHECKPOINT', 'the checkpoint belongs to another optimizer', {
        op: 'loadOptimizer',
        expected: optimizer.constructor.name,
        got: saved.optimizer,
      });
    }
    const state: Record<number, ParameterState> = {};
    for (const [index, entries] of Object.entries(saved.scalars ?? {})) state[Number(index)] = { ...entries };
    for (const [key, tensor] of Object.entries(tensors)) {
      const match = /^state\.(\d+)\.(.+)$/.exec(key);
      if (match === null)
        throw new FlodlError('ERR_CHECKPOINT', `unexpected tensor '${key}' in ${path}`, {
          op: 'loadOptimizer',
        });
      const index = Number(match[1]);
      state[index] = { ...state[index], [match[2]!]: tensor };
    }
    optimizer.loadStateDict({ state, paramGroups: saved.paramGroups } as OptimizerStateDict);
  } finally {
    for (const tensor of Object.values(tensors)) tensor.dispose();
  }
}
