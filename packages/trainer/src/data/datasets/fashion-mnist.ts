// Fashion-MNIST (Xiao, Rasul, Vollgraf 2017): 70 000 grey 28×28 images of clothing in 10
// classes, 60 000 to train and 10 000 to test, as IDX files.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { FlodlError, fromData, invalidArgument, keep, type Tensor, tidy } from '@flodl/tensor-native';
import { checkIndices } from '../check-index.js';
import type { BatchDataset, ResidentDataset } from '../dataset.js';
import { fileError } from '../errors.js';
import { type IdxArray, readIdx } from '../formats/idx.js';
import { checkOptionalFunction, checkOptions } from '../validate.js';

/**
 * A function over a batch's tensors (`[images, labels]`), applied after scaling and
 * normalisation. `indices[k]` is the dataset index of row k: derive any randomness from it
 * (and the epoch, if you pass one in) so that the dataset stays a pure function of the index.
 */
export type BatchTransform = (tensors: Tensor[], indices: readonly number[]) => Tensor[];

/** Options of {@link FashionMnist}. */
export interface FashionMnistOptions {
  /** The folder holding the IDX files, raw or `.gz`. Default `/usr/share/datasets/fashion-mnist/`. */
  root?: string;
  /** `'train'` (60 000 images) or `'test'` (10 000). Default `'train'`. */
  split?: 'train' | 'test';
  /**
   * Normalise the [0, 1] pixels to `(x - mean) / std`: `true` uses the training set's
   * statistics (mean 0.2860, std 0.3530), or give your own. Default false.
   */
  normalize?: boolean | { mean: number; std: number };
  /** Applied to every batch after scaling and normalisation. */
  transform?: BatchTransform;
}

const SPLIT_PREFIX = { train: 'train', test: 't10k' } as const;
const IMAGE_SIZE = 28;

/**
 * The Fashion-MNIST data set as a {@link BatchDataset}: each batch is
 * `[image, label]`, images float32 `(B, 1, 28, 28)` in [0, 1] (or normalised), labels int64
 * `(B)` in 0..9 ({@link FashionMnist.CLASSES}). The files are read whole once (the 60 000
 * training images are 47 MB as uint8); batches are served by index from memory, and the loader
 * can keep the uint8 data resident on the training device.
 *
 * On Debian the data set is the package `dataset-fashion-mnist`, which installs the files under
 * `/usr/share/datasets/fashion-mnist/` (the default `root`).
 *
 * **Shape**: `getBatch(idx)` → image `(B, 1, 28, 28)` float32, label `(B)` int64.
 *
 * @example
 * ```ts
 * const train = new FashionMnist({ split: 'train', normalize: true });
 * const loader = new DataLoader(train, { batchSize: 128 });
 * for (using batch of loader.epoch(0)) step(batch.get('image'), batch.get('label'));
 * ```
 * @throws FlodlError ERR_IO when the files are missing (naming the apt package), truncated or
 *   not the expected IDX arrays; ERR_INVALID_ARGUMENT on bad options
 * PyTorch: `torchvision.datasets.FashionMNIST(root, train=..., transform=ToTensor())`.
 */
export class FashionMnist implements ResidentDataset {
  /** Where Debian's `dataset-fashion-mnist` installs the files. */
  static readonly DEFAULT_ROOT = '/usr/share/datasets/fashion-mnist/';
  /** Mean of the training pixels scaled to [0, 1]. */
  static readonly MEAN = 0.286;
  /** Standard deviation of the training pixels scaled to [0, 1]. */
  static readonly STD = 0.353;
  /** The class names, by label. */
  static readonly CLASSES: readonly string[] = Object.freeze([
    'T-shirt/top',
    'Trouser',
    'Pullover',
    'Dress',
    'Coat',
    'Sandal',
    'Shirt',
    'Sneaker',
    'Bag',
    'Ankle boot',
  ]);

  readonly names: readonly string[] = Object.freeze(['image', 'label']);
  readonly length: number;
  readonly split: 'train' | 'test';
  readonly root: string;
  /** The normalisation applied, or null for plain [0, 1] pixels. */
  readonly normalization: { readonly mean: number; readonly std: number } | null;
  private readonly images: Tensor;
  private readonly labels: Tensor;
  private readonly transform: BatchTransform | undefined;

  constructor(options: FashionMnistOptions = {}) {
    const op = 'FashionMnist';
    checkOptions(op, options, ['root', 'split', 'normalize', 'transform']);
    const root = options.root ?? FashionMnist.DEFAULT_ROOT;
    if (typeof root !== 'string' || root.length === 0)
      throw invalidArgument(op, 'root', 'a folder path', root);
    const split = options.split ?? 'train';
    if (split !== 'train' && split !== 'test') throw invalidArgument(op, 'split', "'train' or 'test'", split);
    this.normalization = normalizationOf(op, options.normalize);
    this.transform = checkOptionalFunction<BatchTransform>(op, 'transform', options.transform);
    this.root = root;
    this.split = split;

    const prefix = SPLIT_PREFIX[split];
    const images = readIdx(findFile(root, `${prefix}-images-idx3-ubyte`, split, 'images'));
    const labels = readIdx(findFile(root, `${prefix}-labels-idx1-ubyte`, split, 'labels'));
    checkContents(root, images, labels);
    this.length = labels.shape[0]!;
    this.images = keep(fromData(images.data, [this.length, 1, IMAGE_SIZE, IMAGE_SIZE]));
    this.labels = keep(tidy(() => fromData(labels.data, [this.length]).long()));
  }

  /**
   * The batch of rows `indices`: `[image, label]`.
   * @throws FlodlError ERR_INVALID_ARGUMENT when an index is outside [0, length)
   */
  getBatch(indices: readonly number[]): Tensor[] {
    checkIndices('FashionMnist.getBatch', 'indices', indices, this.length);
    const [images, labels] = this.stored();
    return tidy(() => {
      const index = fromData(Int32Array.from(indices), [indices.length], { dtype: 'int64' });
      return this.batchFromRows([images.indexSelect(0, index), labels.indexSelect(0, index)], indices);
    });
  }

  /** Sample `index` as `[image (1, 28, 28), label ()]`, like `getBatch([index])` without dim 0. */
  get(index: number): Tensor[] {
    checkIndices('FashionMnist.get', 'index', [index], this.length);
    return tidy(() => this.getBatch([index]).map((tensor) => tensor.squeeze(0)));
  }

  /** The stored uint8 images `(N, 1, 28, 28)` and int64 labels `(N)` (borrowed). */
  residentTensors(): readonly Tensor[] {
    return this.stored();
  }

  /** Scales gathered uint8 rows to [0, 1], normalises, then applies the transform. */
  batchFromRows(rows: Tensor[], indices: readonly number[]): Tensor[] {
    return tidy(() => {
      const [imageRows, labelRows] = rows as [Tensor, Tensor];
      // One new tensor, then in place: (x / 255 - mean) / std = x * (1 / (255 std)) - mean / std.
      const images = imageRows.to('float32');
      const { mean, std } = this.normalization ?? { mean: 0, std: 1 };
      images.mul_(1 / (255 * std));
      if (mean !== 0) images.sub_(mean / std);
      const batch = [images, labelRows];
      return this.transform === undefined ? batch : this.transform(batch, indices);
    });
  }

  /** Frees the loaded data. */
  dispose(): void {
    this.images.dispose();
    this.labels.dispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  toString(): string {
    const normalized =
      this.normalization === null
        ? ''
        : `, normalize=(${this.normalization.mean}, ${this.normalization.std})`;
    return `FashionMnist(split=${this.split}, length=${this.length}, root=${this.root}${normalized})`;
  }

  private stored(): [Tensor, Tensor] {
    if (!this.images.isLive || !this.labels.isLive) {
      throw new FlodlError('ERR_DISPOSED', 'the dataset was disposed', { op: 'FashionMnist' });
    }
    return [this.images, this.labels];
  }
}

function normalizationOf(op: string, value: FashionMnistOptions['normalize']): FashionMnist['normalization'] {
  if (value === undefined || value === false) return null;
  if (value === true) return { mean: FashionMnist.MEAN, std: FashionMnist.STD };
  if (
    typeof value === 'object' &&
    value !== null &&
    Number.isFinite(value.mean) &&
    Number.isFinite(value.std) &&
    value.std > 0
  ) {
    return { mean: value.mean, std: value.std };
  }
  throw invalidArgument(op, 'normalize', 'a boolean or { mean, std } with finite numbers and std > 0', value);
}

function findFile(root: string, stem: string, split: string, what: string): string {
  for (const name of [stem, `${stem}.gz`]) {
    const path = join(root, name);
    if (existsSync(path)) return path;
  }
  throw fileError(
    'FashionMnist',
    join(root, stem),
    `Fashion-MNIST ${split} ${what} not found. Install the data set with \`apt-get install dataset-fashion-mnist\` (Debian), or pass { root } naming a folder with the IDX files`,
    {
      expected: `${stem} or ${stem}.gz in ${root}`,
      got: existsSync(root) ? 'neither file' : 'no such folder',
    },
  );
}

function checkContents(root: string, images: IdxArray, labels: IdxArray): void {
  const [count, height, width] = images.shape;
  if (images.type !== 'uint8' || images.shape.length !== 3 || height !== IMAGE_SIZE || width !== IMAGE_SIZE) {
    throw fileError('FashionMnist', root, 'the image file is not uint8 images of 28×28', {
      expected: 'uint8 [N, 28, 28]',
      got: `${images.type} [${images.shape.join(', ')}]`,
    });
  }
  if (labels.type !== 'uint8' || labels.shape.length !== 1 || labels.shape[0] !== count) {
    throw fileError('FashionMnist', root, 'the label file does not match the images', {
      expected: `uint8 [${count}]`,
      got: `${labels.type} [${labels.shape.join(', ')}]`,
    });
  }
  const data = labels.data;
  for (let index = 0; index < data.length; index++) {
    if (data[index]! > 9) {
      throw fileError('FashionMnist', root, `label ${data[index]} at index ${index} is not a class`, {
        expected: 'labels in 0..9',
      });
    }
  }
}
