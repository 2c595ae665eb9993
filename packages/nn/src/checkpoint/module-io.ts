import { type Device, type Tensor, tidy } from '@flodl/tensor-native';
import type { LoadReport, Module } from '../module.js';
import {
  type ByteDigest,
  readSafetensors,
  type SafetensorsMetadata,
  writeSafetensors,
} from './safetensors.js';

/**
 * Saves a module's state (`stateDict()`) as a safetensors file, atomically. Keys are the
 * qualified names, so PyTorch reads it with `safetensors.torch.load_file` and
 * `model.load_state_dict`. `digest` (a `node:crypto` `Hash`) is fed the file's bytes as they
 * are written. PyTorch: `safetensors.torch.save_file(model.state_dict(), path)`.
 * @throws FlodlError ERR_IO
 */
export function save(
  module: Module<any, any>,
  path: string,
  options: { metadata?: SafetensorsMetadata; digest?: ByteDigest } = {},
): void {
  tidy(() =>
    writeSafetensors(
      path,
      module.stateDict(),
      options.metadata ?? {},
      options.digest ? { digest: options.digest } : {},
    ),
  );
}

/**
 * Loads a safetensors file into a module. Nothing is copied unless every key (with `strict`,
 * the default), shape and dtype fits, so a bad file leaves the model untouched.
 * @throws FlodlError ERR_IO, ERR_CHECKPOINT, ERR_SHAPE, ERR_DTYPE
 */
export function load(
  module: Module<any, any>,
  path: string,
  options: { strict?: boolean; device?: Device } = {},
): LoadReport {
  const { tensors } = readSafetensors(path, options.device === undefined ? {} : { device: options.device });
  try {
    return module.loadStateDict(tensors, options.strict !== false);
  } finally {
    for (const tensor of Object.values(tensors) as Tensor[]) tensor.dispose();
  }
}
