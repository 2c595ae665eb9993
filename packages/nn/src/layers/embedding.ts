import { embedding, embeddingBag, noGrad } from '@flodl/autograd';
import { empty, FlodlError, type Tensor, tidy } from '@flodl/tensor-native';
import * as init from '../init.js';
import { Module } from '../module.js';
import { Parameter } from '../parameter.js';
import {
  checkOptions,
  FACTORY_KEYS,
  type FactoryOptions,
  factoryOf,
  positiveInteger,
  pythonBool,
  pythonFloat,
} from './common.js';

/** Options of `Embedding`. */
export interface EmbeddingLayerOptions extends FactoryOptions {
  /** This row starts at zero and gets no gradient. */
  paddingIdx?: number;
  /** Rows looked up with a larger norm are renormalised in place to this norm. */
  maxNorm?: number;
  /** Default 2. */
  normType?: number;
  scaleGradByFreq?: boolean;
}

function checkPaddingIndex(layer: string, paddingIdx: number | undefined, rows: number): number | undefined {
  if (paddingIdx === undefined) return undefined;
  if (!Number.isSafeInteger(paddingIdx) || paddingIdx < -rows || paddingIdx >= rows) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'paddingIdx must index a row', {
      op: layer,
      expected: `an integer in [${-rows}, ${rows - 1}]`,
      got: String(paddingIdx),
    });
  }
  return paddingIdx < 0 ? paddingIdx + rows : paddingIdx;
}

/** PyTorch's init of a lookup table: N(0, 1), the padding row at zero. */
function resetTable(weight: Tensor, paddingIdx: number | undefined): void {
  init.normal_(weight);
  if (paddingIdx === undefined) return;
  // A block body: tidy must not hand the row view back out of the scope.
  noGrad(() =>
    tidy(() => {
      weight.select(0, paddingIdx).fill_(0);
    }),
  );
}

/** The settings PyTorch prints when they differ from the defaults: `max_norm=1.0, norm_type=1.0, ...`. */
function lookupRepr(options: { maxNorm?: number; normType?: number; scaleGradByFreq?: boolean }): string[] {
  const parts: string[] = [];
  if (options.maxNorm !== undefined) parts.push(`max_norm=${pythonFloat(options.maxNorm)}`);
  if (options.normType !== undefined && options.normType !== 2)
    parts.push(`norm_type=${pythonFloat(options.normType)}`);
  if (options.scaleGradByFreq === true) parts.push(`scale_grad_by_freq=${pythonBool(true)}`);
  return parts;
}

/**
 * A lookup table of `numEmbeddings` vectors of size `embeddingDim`, initialised N(0, 1) (the
 * padding row at zero). **Shape**: int64 indices `(*)` → `(*, embeddingDim)`.
 * PyTorch: `nn.Embedding(num_embeddings, embedding_dim, padding_idx=None, ...)`.
 */
export class Embedding extends Module {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  readonly paddingIdx: number | undefined;
  readonly options: EmbeddingLayerOptions;
  weight: Tensor;
  constructor(numEmbeddings: number, embeddingDim: number, options: EmbeddingLayerOptions = {}) {
    super();
    checkOptions('Embedding', options, [
      'paddingIdx',
      'maxNorm',
      'normType',
      'scaleGradByFreq',
      ...FACTORY_KEYS,
    ]);
    this.numEmbeddings = positiveInteger('Embedding', 'numEmbeddings', numEmbeddings);
    this.embeddingDim = positiveInteger('Embedding', 'embeddingDim', embeddingDim);
    this.paddingIdx = checkPaddingIndex('Embedding', options.paddingIdx, numEmbeddings);
    this.options = options;
    this.weight = new Parameter(empty([numEmbeddings, embeddingDim], factoryOf('Embedding', options)));
    this.resetParameters();
  }
  resetParameters(): void {
    resetTable(this.weight, this.paddingIdx);
  }
  forward(input: Tensor): Tensor {
    const { maxNorm, normType, scaleGradByFreq } = this.options;
    return embedding(input, this.weight, {
      ...(this.paddingIdx === undefined ? {} : { paddingIdx: this.paddingIdx }),
      ...(maxNorm === undefined ? {} : { maxNorm }),
      ...(normType === undefined ? {} : { normType }),
      ...(scaleGradByFreq === undefined ? {} : { scaleGradByFreq }),
    });
  }
  override extraRepr(): string {
    const parts = [`${this.numEmbeddings}, ${this.embeddingDim}`];
    if (this.paddingIdx !== undefined) parts.push(`padding_idx=${this.paddingIdx}`);
    parts.push(...lookupRepr(this.options));
    return parts.join(', ');
  }
}

/** Options of `EmbeddingBag`. */
export interface EmbeddingBagLayerOptions extends FactoryOptions {
  /** Default 'mean'. */
  mode?: 'sum' | 'mean' | 'max';
  maxNorm?: number;
  normType?: number;
  scaleGradByFreq?: boolean;
  includeLastOffset?: boolean;
  paddingIdx?: number;
}

/**
 * Sums, averages or maxes bags of embeddings without materialising each lookup.
 * PyTorch: `nn.EmbeddingBag(num_embeddings, embedding_dim, mode='mean', ...)`.
 */
export class EmbeddingBag extends Module<[Tensor, Tensor?, Tensor?], Tensor> {
  readonly numEmbeddings: number;
  readonly embeddingDim: number;
  readonly mode: 'sum' | 'mean' | 'max';
  readonly paddingIdx: number | undefined;
  readonly options: EmbeddingBagLayerOptions;
  weight: Tensor;
  constructor(numEmbeddings: number, embeddingDim: number, options: EmbeddingBagLayerOptions = {}) {
    super();
    checkOptions('EmbeddingBag', options, [
      'mode',
      'maxNorm',
      'normType',
      'scaleGradByFreq',
      'includeLastOffset',
      'paddingIdx',
      ...FACTORY_KEYS,
    ]);
    this.numEmbeddings = positiveInteger('EmbeddingBag', 'numEmbeddings', numEmbeddings);
    this.embeddingDim = positiveInteger('EmbeddingBag', 'embeddingDim', embeddingDim);
    this.mode = options.mode ?? 'mean';
    this.paddingIdx = checkPaddingIndex('EmbeddingBag', options.paddingIdx, numEmbeddings);
    this.options = options;
    this.weight = new Parameter(empty([numEmbeddings, embeddingDim], factoryOf('EmbeddingBag', options)));
    this.resetParameters();
  }
  resetParameters(): void {
    resetTable(this.weight, this.paddingIdx);
  }
  forward(input: Tensor, offsets?: Tensor, perSampleWeights?: Tensor): Tensor {
    const { maxNorm, normType, scaleGradByFreq, includeLastOffset } = this.options;
    return embeddingBag(input, this.weight, offsets, {
      mode: this.mode,
      ...(maxNorm === undefined ? {} : { maxNorm }),
      ...(normType === undefined ? {} : { normType }),
      ...(scaleGradByFreq === undefined ? {} : { scaleGradByFreq }),
      ...(includeLastOffset === undefined ? {} : { includeLastOffset }),
      ...(this.paddingIdx === undefined ? {} : { paddingIdx: this.paddingIdx }),
      ...(perSampleWeights === undefined ? {} : { perSampleWeights }),
    });
  }
  override extraRepr(): string {
    const parts = [
      `${this.numEmbeddings}, ${this.embeddingDim}`,
      ...lookupRepr(this.options),
      `mode=${this.mode}`,
    ];
    if (this.paddingIdx !== undefined) parts.push(`padding_idx=${this.paddingIdx}`);
    return parts.join(', ');
  }
}
