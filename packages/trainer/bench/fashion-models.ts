// The Fashion-MNIST classifiers the trainer's benchmarks train: the MLP and the small CNN (the
// same two as apps/examples/fashion-mnist/models.ts, which a package cannot import), and a wide
// ResNet-20 for GPUs, where the other two are too small to keep a device busy.
import {
  AdaptiveAvgPool2d,
  BatchNorm2d,
  Conv2d,
  Flatten,
  Linear,
  MaxPool2d,
  Module,
  ReLU,
  Sequential,
} from '@flodl/nn';
import type { Tensor } from '@flodl/tensor-native';

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

/**
 * Two 3×3 convolutions with batch norm, added to the input (through a strided 1×1 convolution
 * with batch norm where the width or the size changes), then ReLU: ResNet's basic block.
 */
class BasicBlock extends Module {
  conv1: Conv2d;
  bn1: BatchNorm2d;
  conv2: Conv2d;
  bn2: BatchNorm2d;
  shortcut: Sequential | undefined;

  constructor(inChannels: number, outChannels: number, stride: number) {
    super();
    this.conv1 = new Conv2d(inChannels, outChannels, 3, { stride, padding: 1, bias: false });
    this.bn1 = new BatchNorm2d(outChannels);
    this.conv2 = new Conv2d(outChannels, outChannels, 3, { padding: 1, bias: false });
    this.bn2 = new BatchNorm2d(outChannels);
    if (stride !== 1 || inChannels !== outChannels) {
      this.shortcut = new Sequential(
        new Conv2d(inChannels, outChannels, 1, { stride, bias: false }),
        new BatchNorm2d(outChannels),
      );
    }
  }

  forward(input: Tensor): Tensor {
    const branch = this.bn2.forward(this.conv2.forward(this.bn1.forward(this.conv1.forward(input)).relu()));
    return branch.add(this.shortcut ? this.shortcut.forward(input) : input).relu();
  }
}

/** The widths of `resnet`'s three stages (ResNet-20's 16, 32, 64, four times over). */
const RESNET_WIDTHS = [64, 128, 256] as const;

/**
 * ResNet-20's layout (floDl's DDP benchmark model) at four times its width, on 28×28 images: a
 * 3×3 stem, three stages of three basic blocks (64, 128, 256 channels; the second and third
 * halve the size), global average pooling, 256 → 10. 4.33M parameters, about 1 GFLOP a forward
 * per image: the model that keeps a GPU busy (`bench:ddp --model resnet`).
 */
export function resnet(): Sequential {
  const [first] = RESNET_WIDTHS;
  const layers: Module[] = [
    new Conv2d(1, first, 3, { padding: 1, bias: false }),
    new BatchNorm2d(first),
    new ReLU(),
  ];
  let channels: number = first;
  for (const [stage, width] of RESNET_WIDTHS.entries()) {
    for (let block = 0; block < 3; block++) {
      layers.push(new BasicBlock(channels, width, stage > 0 && block === 0 ? 2 : 1));
      channels = width;
    }
  }
  layers.push(new AdaptiveAvgPool2d(1), new Flatten(), new Linear(channels, 10));
  return new Sequential(...layers);
}
