import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { liveTensorCount, tidy } from '@flodl/tensor-native';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataLoader, FashionMnist } from '../src/data/index.js';
import { idxBytes, temporaryFolder } from './helpers.js';

const root = FashionMnist.DEFAULT_ROOT;
const installed =
  existsSync(join(root, 't10k-images-idx3-ubyte.gz')) || existsSync(join(root, 't10k-images-idx3-ubyte'));

const title = installed
  ? 'Fashion-MNIST from Debian (dataset-fashion-mnist)'
  : `Fashion-MNIST from Debian: skipped, no files in ${root} (apt-get install dataset-fashion-mnist)`;

describe.skipIf(!installed)(title, () => {
  let test: FashionMnist;
  beforeAll(() => {
    test = new FashionMnist({ split: 'test' });
  });
  afterAll(() => test.dispose());

  it('loads the test split: shapes, dtypes, first labels, class balance', () => {
    expect(test.length).toBe(10000);
    expect(test.names).toEqual(['image', 'label']);
    const [images, labels] = test.getBatch([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect([images!.shape, images!.dtype]).toEqual([[12, 1, 28, 28], 'float32']);
    expect([labels!.shape, labels!.dtype]).toEqual([[12], 'int64']);
    expect(labels!.toArray()).toEqual([9, 2, 1, 1, 6, 1, 4, 6, 5, 7, 4, 5]);
    // The first image's raw pixels sum to 33456 (NumPy on the same file).
    tidy(() => {
      expect(images!.select(0, 0).sum().item()).toBeCloseTo(33456 / 255, 3);
      expect(images!.min().item()).toBeGreaterThanOrEqual(0);
      expect(images!.max().item()).toBeLessThanOrEqual(1);
    });
    images!.dispose();
    labels!.dispose();
    const [, all] = test.residentTensors();
    const counts = tidy(() => [...Array(10).keys()].map((label) => all!.eq(label).sum().item()));
    expect(counts).toEqual(new Array(10).fill(1000));
  });

  it('loads the training split (60 000) with normalisation', () => {
    const started = performance.now();
    const train = new FashionMnist({ split: 'train', normalize: true });
    expect(performance.now() - started).toBeLessThan(5000);
    expect(train.length).toBe(60000);
    const [image, label] = train.get(0);
    expect([image!.shape, label!.shape, label!.item()]).toEqual([[1, 28, 28], [], 9]);
    // Mean 0.2860, std 0.3530 over the whole set: a normalised batch is near mean 0, std 1.
    const [images] = train.getBatch(Array.from({ length: 2000 }, (_, k) => k * 30));
    tidy(() => {
      expect(Math.abs(images!.mean().item())).toBeLessThan(0.05);
      expect(Math.abs(images!.std().item() - 1)).toBeLessThan(0.05);
    });
    for (const tensor of [image, label, images]) tensor!.dispose();
    train.dispose();
  });

  it('feeds a DataLoader (resident by default) with batch-transform hooks', () => {
    const before = liveTensorCount();
    const flipped = new FashionMnist({
      split: 'test',
      transform: ([images, labels], indices) => {
        expect(indices).toHaveLength(images!.shape[0]!);
        return [images!.flip(3), labels!];
      },
    });
    const loader = new DataLoader(flipped, { batchSize: 256 });
    expect(loader.isResident).toBe(true);
    expect(loader.length).toBe(39);
    let batches = 0;
    for (using batch of loader.epoch(0)) {
      expect(batch.get('image').shape).toEqual([256, 1, 28, 28]);
      batches++;
    }
    expect(batches).toBe(39);
    tidy(() => {
      const [plain] = test.getBatch([3]);
      const [mirrored] = flipped.getBatch([3]);
      expect(mirrored!.flip(3).allclose(plain!)).toBe(true);
    });
    loader.dispose();
    flipped.dispose();
    expect(liveTensorCount()).toBe(before);
  });

  it('reads raw (uncompressed) copies too', () => {
    const folder = mkdtempSync(join(tmpdir(), 'flodl-fashion-'));
    try {
      for (const name of ['t10k-images-idx3-ubyte', 't10k-labels-idx1-ubyte']) {
        const source = join(root, name);
        if (existsSync(source)) copyFileSync(source, join(folder, name));
        else writeFileSync(join(folder, name), gunzipSync(readFileSync(`${source}.gz`)));
      }
      const copy = new FashionMnist({ root: folder, split: 'test' });
      expect(copy.length).toBe(10000);
      const [images, labels] = copy.getBatch([0, 1, 2]);
      expect(labels!.toArray()).toEqual([9, 2, 1]);
      images!.dispose();
      labels!.dispose();
      copy.dispose();
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });
});

describe('FashionMnist errors', () => {
  const folder = temporaryFolder('fashion-bad');

  it('names the apt package when the files are missing', () => {
    expect(() => new FashionMnist({ root: join(folder, 'nowhere'), split: 'test' })).toThrow(
      expect.objectContaining({
        code: 'ERR_IO',
        message: expect.stringContaining('apt-get install dataset-fashion-mnist'),
      }),
    );
  });

  it('rejects files that are not 28×28 uint8 images with matching labels', () => {
    writeFileSync(join(folder, 't10k-images-idx3-ubyte'), idxBytes('uint8', [2, 2, 2], Array(8).fill(0)));
    writeFileSync(join(folder, 't10k-labels-idx1-ubyte.gz'), gzipSync(idxBytes('uint8', [2], [0, 1])));
    expect(() => new FashionMnist({ root: folder, split: 'test' })).toThrow(/not uint8 images of 28×28/);
    writeFileSync(
      join(folder, 't10k-images-idx3-ubyte'),
      idxBytes('uint8', [2, 28, 28], Array(1568).fill(0)),
    );
    writeFileSync(join(folder, 't10k-labels-idx1-ubyte.gz'), gzipSync(idxBytes('uint8', [2], [0, 12])));
    expect(() => new FashionMnist({ root: folder, split: 'test' })).toThrow(
      /label 12 at index 1 is not a class/,
    );
  });

  it('rejects bad options', () => {
    expect(() => new FashionMnist({ split: 'validation' as never })).toThrow(/split/);
    expect(() => new FashionMnist({ normalize: { mean: 0, std: 0 } })).toThrow(/normalize/);
    expect(() => new FashionMnist({ rooot: '/tmp' } as never)).toThrow(/unknown option 'rooot'/);
  });
});
