// The two classifiers of the example, built from @flodl/nn layers.
import { Conv2d, Flatten, Linear, MaxPool2d, ReLU, Sequential } from '@flodl/nn';

/**
 * A multilayer perceptron on the flattened image: 784 → 256 → 256 → 10 with ReLU.
 * PyTorch: `nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), …)`.
 */
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

/**
 * A small convolutional network: two 3×3 convolutions (16 and 32 channels) each followed by
 * ReLU and 2×2 max pooling (28 → 14 → 7), then 1568 → 128 → 10.
 */
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
