// @flodl/trainer/data: datasets, real data formats and the DataLoader.

export { Batch } from './batch.js';
export { type Collate, defaultCollate } from './collate.js';
export { ConcatDataset } from './concat-dataset.js';
export {
  type BatchDataset,
  type Dataset,
  isBatchDataset,
  isDataset,
  isResidentDataset,
  type ResidentDataset,
  type Sample,
} from './dataset.js';
export { type BatchTransform, FashionMnist, type FashionMnistOptions } from './datasets/fashion-mnist.js';
export {
  type IdxArray,
  type IdxElementType,
  type LoadIdxOptions,
  loadIdx,
  parseIdx,
  readIdx,
} from './formats/idx.js';
export {
  type LoadNpyOptions,
  loadNpy,
  type NpyArray,
  type NpyElementType,
  npyToTensor,
  parseNpy,
  readNpy,
} from './formats/npy.js';
export { DEFAULT_MAX_BYTES, isGzip, type ReadFileOptions, readDataFile } from './formats/read-file.js';
export { DataLoader, EpochBatches } from './loader/data-loader.js';
export { AsyncEpochIterator, EpochIterator } from './loader/epoch-run.js';
export { type DataLoaderOptions, DEFAULT_RESIDENT_MAX_BYTES } from './loader/options.js';
export { epochKey, epochPermutation, Random, type Seed, splitMix64 } from './random.js';
export { type RandomSplitOptions, randomSplit } from './random-split.js';
export { RandomSampler, type RandomSamplerOptions } from './samplers/random-sampler.js';
export { type EpochPlan, partitionIndices, type Sampler } from './samplers/sampler.js';
export { SequentialSampler } from './samplers/sequential-sampler.js';
export { SubsetSampler, type SubsetSamplerOptions } from './samplers/subset-sampler.js';
export { Subset } from './subset.js';
export { TensorDataset, type TensorDatasetOptions } from './tensor-dataset.js';
