// A model's signature: digests of its structure and of its initial values, so a launcher can
// refuse ranks whose model factories built different models.
import { createHash } from 'node:crypto';
import type { ModelSignature } from '@flodl/distributed';
import type { Module } from '@flodl/nn';
import { toBytes } from '@flodl/tensor-native';

/** The signature of `model` as it is now (names, dtypes, shapes and values of its state). */
export function modelSignature(model: Module): ModelSignature {
  const structure = createHash('sha256');
  const values = createHash('sha256');
  let parameters = 0;
  let buffers = 0;
  for (const [kind, entries] of [
    ['p', [...model.namedParameters()]],
    ['b', [...model.namedBuffers()]],
  ] as const) {
    for (const [name, tensor] of entries) {
      if (kind === 'p') parameters += 1;
      else buffers += 1;
      structure.update(`${kind}:${name}:${tensor.dtype}:${tensor.shape.join('x')};`);
      values.update(toBytes(tensor));
    }
  }
  return {
    parameters,
    buffers,
    structure: structure.digest('hex').slice(0, 32),
    values: values.digest('hex').slice(0, 32),
  };
}
