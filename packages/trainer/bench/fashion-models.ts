// The Fashion-MNIST classifiers the trainer's benchmarks train (the same two as
// apps/examples/fashion-mnist/models.ts, which a package cannot import).
import { Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential } from '@flodl/nn';

/** 784 → 256 → 256 → 10 with ReLU, on the flattened image. */
export function mlp(): Sequential {
  return new Sequential(
    new Flatten(),
    new Linear(784, 256),
    new ReLU(),
    new Linear(256, 256),
    new ReLU(),
    new Linear(256, 10),
  );
}

/** Two 3×3 convolutions (16 and 32 channels) each with ReLU and 2×2 max pooling, then 1568 → 128 → 10. */
export function cnn(): Sequential {
  return new Sequential(
    new Conv2d(1, 16, 3, { padding: 1 }),
    new ReLU(),
    new MaxPool2d(2),
    new Conv2d(16, 32, 3, { padding: 1 }),
    new ReLU(),
    new MaxPool2d(2),
    new Flatten(),
    new Linear(32 * 7 * 7, 128),
    new ReLU(),
    new Linear(128, 10),
  );
}
