// The models of `pnpm bench:train` on the flodl side. bench/train.py builds the same ones from
// the same specs (batch, input shape, classes), so the two sides train identical networks.

import * as nn from '@flodl/nn';
import { Conv2d, Flatten, Linear, LSTM, MaxPool2d, Module, ReLU, Sequential } from '@flodl/nn';

/**
 * Steps of one timed run: `steps` timed after `warmup` untimed ones.
 * @typedef {{ steps: number, warmup: number }} StepCounts
 */

/**
 * One benchmark model: what it is, its synthetic batch and its default step counts per device.
 * @typedef {object} ModelSpec
 * @property {string} name
 * @property {string} description
 * @property {number} batch samples per step
 * @property {number[]} inputShape one sample's shape (float32, N(0, 1)); labels are int64 in [0, classes)
 * @property {number} classes
 * @property {{ cpu: StepCounts, cuda: StepCounts }} defaults
 * @property {() => Module} build a fresh model on the CPU (moved to the device by the caller)
 * @property {() => string | null} [missing] why the model cannot be built with this @flodl/nn, or null
 */

/** Two stacked LSTM layers over `(N, L, 64)`, a linear classifier on the last step's output. */
class LstmClassifier extends Module {
  constructor() {
    super();
    this.lstm = new LSTM(64, 256, { numLayers: 2, batchFirst: true });
    this.head = new Linear(256, 10);
  }
  /** @param {import('@flodl/tensor-native').Tensor} input `(N, L, 64)` */
  forward(input) {
    const { output } = this.lstm.forward(input);
    return this.head.forward(output.select(1, output.shape[1] - 1));
  }
}

/** A transformer encoder over `(N, L, 256)`, mean-pooled over the sequence, a linear classifier. */
class TransformerClassifier extends Module {
  constructor() {
    super();
    const layer = new nn.TransformerEncoderLayer(256, 4, {
      dimFeedforward: 1024,
      dropout: 0.1,
      batchFirst: true,
    });
    this.encoder = new nn.TransformerEncoder(layer, 4);
    // The encoder trains copies (as PyTorch's _get_clones); the template stays ours to free.
    layer.dispose();
    this.head = new Linear(256, 10);
  }
  /** @param {import('@flodl/tensor-native').Tensor} input `(N, L, 256)` */
  forward(input) {
    return this.head.forward(this.encoder.forward(input).mean(1));
  }
}

/** @type {ModelSpec[]} */
export const MODELS = [
  {
    name: 'mlp64',
    description: 'MLP 64-64-64-64-10, ReLU (small and dispatch-bound)',
    batch: 32,
    inputShape: [64],
    classes: 10,
    defaults: { cpu: { steps: 2000, warmup: 100 }, cuda: { steps: 2000, warmup: 100 } },
    build: () =>
      new Sequential(
        new Linear(64, 64),
        new ReLU(),
        new Linear(64, 64),
        new ReLU(),
        new Linear(64, 64),
        new ReLU(),
        new Linear(64, 10),
      ),
  },
  {
    name: 'mlp',
    description: 'MLP 784-1024-1024-10, ReLU',
    batch: 256,
    inputShape: [784],
    classes: 10,
    defaults: { cpu: { steps: 8, warmup: 2 }, cuda: { steps: 1000, warmup: 50 } },
    build: () =>
      new Sequential(
        new Linear(784, 1024),
        new ReLU(),
        new Linear(1024, 1024),
        new ReLU(),
        new Linear(1024, 10),
      ),
  },
  {
    name: 'cnn',
    description: 'CNN conv32-pool-conv64-pool-fc128-fc10 on 1x28x28',
    batch: 256,
    inputShape: [1, 28, 28],
    classes: 10,
    defaults: { cpu: { steps: 10, warmup: 2 }, cuda: { steps: 500, warmup: 50 } },
    build: () =>
      new Sequential(
        new Conv2d(1, 32, 3, { padding: 1 }),
        new ReLU(),
        new MaxPool2d(2),
        new Conv2d(32, 64, 3, { padding: 1 }),
        new ReLU(),
        new MaxPool2d(2),
        new Flatten(),
        new Linear(64 * 7 * 7, 128),
        new ReLU(),
        new Linear(128, 10),
      ),
  },
  {
    name: 'cnn-small',
    description: 'CNN conv8-pool-conv16-pool-fc10 on 1x28x28 (dispatch-bound)',
    batch: 32,
    inputShape: [1, 28, 28],
    classes: 10,
    defaults: { cpu: { steps: 300, warmup: 20 }, cuda: { steps: 2000, warmup: 100 } },
    build: () =>
      new Sequential(
        new Conv2d(1, 8, 3, { padding: 1 }),
        new ReLU(),
        new MaxPool2d(2),
        new Conv2d(8, 16, 3, { padding: 1 }),
        new ReLU(),
        new MaxPool2d(2),
        new Flatten(),
        new Linear(16 * 7 * 7, 10),
      ),
  },
  {
    name: 'lstm',
    description: 'LSTM 64→256 x2 layers, seq 64, last step → fc10',
    batch: 128,
    inputShape: [64, 64],
    classes: 10,
    defaults: { cpu: { steps: 1, warmup: 1 }, cuda: { steps: 300, warmup: 30 } },
    build: () => new LstmClassifier(),
  },
  {
    name: 'transformer',
    description: 'Transformer encoder d256 h4 x4 layers ff1024, seq 64, mean → fc10',
    batch: 64,
    inputShape: [64, 256],
    classes: 10,
    defaults: { cpu: { steps: 1, warmup: 1 }, cuda: { steps: 300, warmup: 30 } },
    build: () => new TransformerClassifier(),
    missing: () =>
      typeof nn.TransformerEncoder === 'function' && typeof nn.TransformerEncoderLayer === 'function'
        ? null
        : 'this build of @flodl/nn has no TransformerEncoder/TransformerEncoderLayer (rebuild it: pnpm --filter @flodl/nn build)',
  },
];
