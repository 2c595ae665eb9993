// The encoder-decoder transformer of "Attention Is All You Need", as PyTorch 1.13's nn.Transformer.
import {
  type Device,
  type DType,
  FlodlError,
  full,
  invalidArgument,
  type Tensor,
  tidy,
} from '@flodl/tensor-native';
import * as init from '../init.js';
import { Module } from '../module.js';
import { checkOptions, positiveInteger } from './common.js';
import { LayerNorm } from './normalization.js';
import {
  LAYER_OPTION_NAMES,
  type LayerSettings,
  layerSettings,
  sequenceShape,
  type TransformerLayerOptions,
} from './transformer-common.js';
import {
  TransformerDecoder,
  type TransformerDecoderInputs,
  TransformerDecoderLayer,
} from './transformer-decoder.js';
import {
  TransformerEncoder,
  type TransformerEncoderInputs,
  TransformerEncoderLayer,
} from './transformer-encoder.js';

/** Options of `Transformer`. */
export interface TransformerOptions extends TransformerLayerOptions {
  /** Features of the inputs, `E`. Default 512. */
  dModel?: number;
  /** Attention heads; must divide dModel. Default 8. */
  nhead?: number;
  /** Default 6. */
  numEncoderLayers?: number;
  /** Default 6. */
  numDecoderLayers?: number;
  /** Used instead of the built encoder (called as `encoder.forward(src, srcMask, srcKeyPaddingMask, options)`). */
  customEncoder?: Module<TransformerEncoderInputs, Tensor>;
  /** Used instead of the built decoder (called as a `TransformerDecoder`). */
  customDecoder?: Module<TransformerDecoderInputs, Tensor>;
}

/** Options of `Transformer.forward`. */
export interface TransformerForwardOptions {
  /** Causal encoder self-attention, built when `srcMask` is not given. Default false. */
  srcIsCausal?: boolean;
  /** Causal decoder self-attention, built when `tgtMask` is not given. Default false. */
  tgtIsCausal?: boolean;
  /** Causal attention over the memory, built when `memoryMask` is not given. Default false. */
  memoryIsCausal?: boolean;
}

/** The forward arguments of `Transformer`. */
type TransformerInputs = [
  src: Tensor,
  tgt: Tensor,
  srcMask?: Tensor | null,
  tgtMask?: Tensor | null,
  memoryMask?: Tensor | null,
  srcKeyPaddingMask?: Tensor | null,
  tgtKeyPaddingMask?: Tensor | null,
  memoryKeyPaddingMask?: Tensor | null,
  options?: TransformerForwardOptions,
];

const OP = 'Transformer';

/**
 * The stack `build` makes of copies of `layer` and a final LayerNorm; then frees `layer`, but not
 * the tensors of the caller's activation module.
 */
function stackWithNorm<Layer extends Module<any, any>, Stack>(
  layer: Layer,
  settings: LayerSettings,
  build: (layer: Layer, norm: LayerNorm) => Stack,
): Stack {
  const stack = build(
    layer,
    new LayerNorm(settings.dModel, { eps: settings.layerNormEps, ...settings.factory }),
  );
  const { activation } = settings;
  const callers = new Set(
    activation instanceof Module ? [...activation.parameters(), ...activation.buffers()] : [],
  );
  for (const tensor of [...layer.parameters(), ...layer.buffers()]) {
    if (!callers.has(tensor)) tensor.dispose();
  }
  return stack;
}

/**
 * An encoder-decoder transformer: `y = decoder(tgt, encoder(src))`, the encoder a
 * `TransformerEncoder` of `numEncoderLayers` layers with a final LayerNorm, the decoder a
 * `TransformerDecoder` of `numDecoderLayers` layers with a final LayerNorm. After building both,
 * every parameter of two or more dims is redrawn Xavier-uniform, in `parameters()` order, as
 * PyTorch does: after the same `manualSeed` the weights equal PyTorch's. State_dict keys are
 * PyTorch's (`encoder.layers.0.self_attn.in_proj_weight`, …, `decoder.norm.bias`).
 * **Shape**: src `(S, N, E)`, tgt `(T, N, E)` (`(N, S, E)`, `(N, T, E)` with batchFirst) or unbatched
 * `(S, E)`, `(T, E)`; srcMask `(S, S)`, tgtMask `(T, T)`, memoryMask `(T, S)` (or `(N·nhead, ·, ·)`);
 * srcKeyPaddingMask and memoryKeyPaddingMask `(N, S)`, tgtKeyPaddingMask `(N, T)`; output like tgt.
 * @throws FlodlError ERR_INVALID_ARGUMENT for bad sizes or options; ERR_SHAPE when src and tgt
 * differ in batch size or features, and the layers' errors for bad inputs or masks
 * @example
 * ```ts
 * const model = new Transformer({ dModel: 256, nhead: 4, numEncoderLayers: 3, numDecoderLayers: 3, batchFirst: true });
 * const y = model.forward(src, tgt, null, Transformer.generateSquareSubsequentMask(tgt.shape[1]!));
 * ```
 * PyTorch: `nn.Transformer(d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
 * dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None, custom_decoder=None,
 * layer_norm_eps=1e-5, batch_first=False, norm_first=False)`.
 */
export class Transformer extends Module<TransformerInputs, Tensor> {
  encoder: Module<TransformerEncoderInputs, Tensor>;
  decoder: Module<TransformerDecoderInputs, Tensor>;
  readonly dModel: number;
  readonly nhead: number;
  readonly batchFirst: boolean;

  constructor(options: TransformerOptions = {}) {
    super();
    checkOptions(OP, options, [
      'dModel',
      'nhead',
      'numEncoderLayers',
      'numDecoderLayers',
      'customEncoder',
      'customDecoder',
      ...LAYER_OPTION_NAMES,
    ]);
    const {
      dModel = 512,
      nhead = 8,
      numEncoderLayers = 6,
      numDecoderLayers = 6,
      customEncoder,
      customDecoder,
      ...layerOptions
    } = options;
    const settings = layerSettings(OP, dModel, nhead, layerOptions);
    positiveInteger(OP, 'numEncoderLayers', numEncoderLayers);
    positiveInteger(OP, 'numDecoderLayers', numDecoderLayers);
    for (const [name, custom] of [
      ['customEncoder', customEncoder],
      ['customDecoder', customDecoder],
    ] as const) {
      if (custom !== undefined && !(custom instanceof Module))
        throw invalidArgument(OP, name, 'a Module or undefined', custom);
    }
    // Built and initialised in PyTorch's order: encoder layer, its norm, decoder layer, its norm.
    this.encoder =
      customEncoder ??
      stackWithNorm(
        new TransformerEncoderLayer(dModel, nhead, layerOptions),
        settings,
        (layer, norm) => new TransformerEncoder(layer, numEncoderLayers, { norm }),
      );
    this.decoder =
      customDecoder ??
      stackWithNorm(
        new TransformerDecoderLayer(dModel, nhead, layerOptions),
        settings,
        (layer, norm) => new TransformerDecoder(layer, numDecoderLayers, { norm }),
      );
    this.resetParameters();
    this.dModel = dModel;
    this.nhead = nhead;
    this.batchFirst = settings.batchFirst;
  }

  /** Redraws every parameter of two or more dims Xavier-uniform, as PyTorch's `_reset_parameters`. */
  resetParameters(): void {
    for (const parameter of this.parameters()) {
      if (parameter.ndim > 1) init.xavierUniform_(parameter);
    }
  }

  forward(...inputs: TransformerInputs): Tensor {
    const [
      src,
      tgt,
      srcMask,
      tgtMask,
      memoryMask,
      srcKeyPaddingMask,
      tgtKeyPaddingMask,
      memoryKeyPaddingMask,
      options = {},
    ] = inputs;
    const op = `${OP}.forward`;
    checkOptions(op, options, ['srcIsCausal', 'tgtIsCausal', 'memoryIsCausal']);
    const source = sequenceShape(op, 'src', src, this.dModel, this.batchFirst);
    const target = sequenceShape(op, 'tgt', tgt, this.dModel, this.batchFirst);
    if (source.batch !== null && source.batch !== target.batch) {
      throw new FlodlError('ERR_SHAPE', 'src and tgt must have the same batch size', {
        op,
        expected: `tgt with batch ${source.batch}, as src`,
        got: target.batch === null ? 'an unbatched tgt' : `batch ${target.batch}`,
      });
    }
    const { srcIsCausal, tgtIsCausal, memoryIsCausal } = options;
    return tidy(() => {
      const memory = this.encoder.forward(src, srcMask, srcKeyPaddingMask, {
        ...(srcIsCausal === undefined ? {} : { isCausal: srcIsCausal }),
      });
      return this.decoder.forward(tgt, memory, tgtMask, memoryMask, tgtKeyPaddingMask, memoryKeyPaddingMask, {
        ...(tgtIsCausal === undefined ? {} : { tgtIsCausal }),
        ...(memoryIsCausal === undefined ? {} : { memoryIsCausal }),
      });
    });
  }

  /**
   * The causal mask for `size` positions: 0 on and below the diagonal, -∞ above it, to add to the
   * attention scores. **Shape**: `(size, size)`, float32 unless `dtype` says otherwise.
   * @example Transformer.generateSquareSubsequentMask(3) // [[0, -∞, -∞], [0, 0, -∞], [0, 0, 0]]
   * PyTorch: `nn.Transformer.generate_square_subsequent_mask(sz, device='cpu')`.
   */
  static generateSquareSubsequentMask(
    size: number,
    options: { device?: Device; dtype?: DType } = {},
  ): Tensor {
    positiveInteger('Transformer.generateSquareSubsequentMask', 'size', size);
    checkOptions('Transformer.generateSquareSubsequentMask', options, ['device', 'dtype']);
    const { dtype = 'float32', device } = options;
    return tidy(() =>
      full([size, size], Number.NEGATIVE_INFINITY, {
        dtype,
        ...(device === undefined ? {} : { device }),
      }).triu(1),
    );
  }
}
