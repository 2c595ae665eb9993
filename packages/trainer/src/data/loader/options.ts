// The DataLoader's options, their defaults and their validation.
import {
  cuda,
  type Device,
  FlodlError,
  getDefaultDevice,
  invalidArgument,
  normalizeDevice,
} from '@flodl/tensor-native';
import type { Collate } from '../collate.js';
import type { Sample } from '../dataset.js';
import type { Seed } from '../random.js';
import type { Sampler } from '../samplers/sampler.js';
import {
  checkBoolean,
  checkNames,
  checkNonNegativeInteger,
  checkOptionalFunction,
  checkOptions,
  checkPositiveInteger,
} from '../validate.js';
import { debugFromEnvironment } from './purity-check.js';

/** Options of {@link DataLoader}; defaults follow floDl. */
export interface DataLoaderOptions<T extends Sample = Sample> {
  /** Samples per batch. Required. */
  batchSize: number;
  /** Visit the samples in a fresh seeded order each epoch. Default true. Not with `sampler`. */
  shuffle?: boolean;
  /** Seed of the shuffle: epoch `e`'s order is `epochPermutation(length, seed, e)`. Default 42. */
  seed?: Seed;
  /**
   * Drop the last batch when it would be smaller than `batchSize`. Default true: every batch
   * has the same size (no batch-of-one NaN in batch norm, no recompilation of shapes).
   */
  dropLast?: boolean;
  /** Chooses the indices of each epoch (instead of `shuffle`/`seed`). */
  sampler?: Sampler;
  /** Where batches are delivered. Default: the default device (`getDefaultDevice()`, `'cpu'` unless changed). */
  device?: Device;
  /**
   * Batches prepared ahead of the consumer (bounded: at most `prefetch + 1` batches are held
   * by the loader). On CUDA they are staged through pinned memory and copied non-blocking.
   * Default 2.
   */
  prefetch?: number;
  /** Builds a batch from per-sample reads (`dataset.get`). Default: stack position-wise. */
  collate?: Collate<T>;
  /** Names of the batch's tensors. Default: the dataset's `names`, else `'0'`, `'1'`, … */
  names?: readonly string[];
  /**
   * Keep the whole data set on `device` and gather each batch there by index. `'auto'` (the
   * default) does so for datasets that expose their tensors (`TensorDataset`,
   * `FashionMnist`) when they fit in `residentMaxBytes`, and streams when the upload runs out
   * of device memory; `true` forces it (a per-sample dataset is read and collated once);
   * `false` streams every batch from the dataset.
   */
  resident?: boolean | 'auto';
  /** The byte budget of automatic resident mode. Default 2 GiB. */
  residentMaxBytes?: number;
  /**
   * Check the dataset contract: each epoch, one sampled index is read twice and must give the
   * same values. Default: on when the environment has `FLODL_DEBUG=1`.
   */
  debug?: boolean;
}

/** @internal The options with every default applied. */
export interface ResolvedOptions<T extends Sample> {
  batchSize: number;
  shuffle: boolean;
  seed: Seed;
  dropLast: boolean;
  sampler: Sampler | undefined;
  device: Device;
  prefetch: number;
  collate: Collate<T> | undefined;
  names: readonly string[] | undefined;
  resident: boolean | 'auto';
  residentMaxBytes: number;
  debug: boolean;
}

const KEYS = [
  'batchSize',
  'shuffle',
  'seed',
  'dropLast',
  'sampler',
  'device',
  'prefetch',
  'collate',
  'names',
  'resident',
  'residentMaxBytes',
  'debug',
];

/** Default byte budget of automatic resident mode. */
export const DEFAULT_RESIDENT_MAX_BYTES = 2 * 1024 ** 3;

/** @internal Validates the options and applies the defaults. */
export function resolveOptions<T extends Sample>(options: DataLoaderOptions<T>): ResolvedOptions<T> {
  const op = 'DataLoader';
  if (options === undefined)
    throw invalidArgument(op, 'options', 'an options object with batchSize', options);
  checkOptions(op, options, KEYS);
  const batchSize = checkPositiveInteger(op, 'batchSize', options.batchSize);
  const sampler = options.sampler;
  if (sampler !== undefined) {
    if (
      typeof sampler !== 'object' ||
      sampler === null ||
      typeof sampler.indices !== 'function' ||
      typeof sampler.length !== 'number'
    ) {
      throw invalidArgument(op, 'sampler', 'a Sampler (length and indices(epoch))', sampler);
    }
    if (options.shuffle !== undefined || options.seed !== undefined) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'sampler is exclusive with shuffle and seed', {
        op,
        expected: 'either sampler, or shuffle/seed (the sampler decides the order)',
        got: `sampler with ${options.shuffle !== undefined ? 'shuffle' : 'seed'}`,
      });
    }
  }
  const device = normalizeDevice(op, options.device ?? getDefaultDevice());
  if (device !== 'cpu' && !cuda.isAvailable()) {
    throw new FlodlError('ERR_DEVICE', `device ${device} was asked for, but CUDA is not available`, {
      op,
      expected: "device: 'cpu', or a libtorch build with CUDA and a visible GPU",
      got: device,
    });
  }
  const resident = options.resident ?? 'auto';
  if (resident !== 'auto' && typeof resident !== 'boolean') {
    throw invalidArgument(op, 'resident', "true, false or 'auto'", resident);
  }
  return {
    batchSize,
    shuffle: checkBoolean(op, 'shuffle', options.shuffle, true),
    seed: options.seed ?? 42,
    dropLast: checkBoolean(op, 'dropLast', options.dropLast, true),
    sampler,
    device,
    prefetch: checkNonNegativeInteger(op, 'prefetch', options.prefetch ?? 2),
    collate: checkOptionalFunction<Collate<T>>(op, 'collate', options.collate),
    names: options.names === undefined ? undefined : checkNames(op, options.names),
    resident,
    residentMaxBytes: checkPositiveInteger(
      op,
      'residentMaxBytes',
      options.residentMaxBytes ?? DEFAULT_RESIDENT_MAX_BYTES,
    ),
    debug: checkBoolean(op, 'debug', options.debug, debugFromEnvironment()),
  };
}
