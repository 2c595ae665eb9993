// The process-group backend follows the model's device: gloo for CPU parameters, nccl on the
// parameters' CUDA device (that case runs where there is a GPU).
import { Linear, ReLU, Sequential } from '@flodl/nn';
import { cuda } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { collectiveBackendFor } from '../src/session/index.js';

describe('collectiveBackendFor', () => {
  it('picks gloo for a model on the CPU, and for one without parameters', () => {
    expect(collectiveBackendFor(new Linear(3, 2))).toEqual({ backend: 'gloo', device: 'cpu' });
    expect(collectiveBackendFor(new ReLU())).toEqual({ backend: 'gloo', device: 'cpu' });
  });

  it.skipIf(!cuda.isAvailable())('picks nccl on the device of a model on CUDA', () => {
    const model = new Sequential(new Linear(3, 2), new ReLU()).to('cuda:0');
    expect(collectiveBackendFor(model)).toEqual({ backend: 'nccl', device: 'cuda:0' });
  });
});
