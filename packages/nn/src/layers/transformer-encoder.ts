// The transformer encoder: a layer of self-attention and a feed-forward network, and a stack of
// copies of it, with PyTorch 1.13's submodules, state_dict keys, init order and computation.
import { type Tensor, tidy } from '@flodl/tensor-native';
import type { ModuleList } from '../containers.js';
import { Module } from '../module.js';
import { MultiheadAttention } from './attention.js';
import { checkLayerOptions } from './common.js';
import { Dropout } from './dropout.js';
import { Linear } from './linear.js';
import { LayerNorm } from './normalization.js';
import {
  activate,
  checkAttentionMask,
  checkKeyPaddingMask,
  layerClones,
  layerSettings,
  optionalNorm,
  sequenceShape,
  type TransformerActivation,
  type TransformerLayerOptions,
} from './transformer-common.js';

/** Options of `TransformerEncoderLayer`. */
export type TransformerEncoderLayerOptions = TransformerLayerOptions;

/** Options of `TransformerEncoderLayer.forward` and `TransformerEncoder.forward`. */
export interface TransformerEncoderForwardOptions {
  /**
   * Each position attends only to itself and earlier ones. Without `srcMask` the causal mask is
   * built; with one, `srcMask` is used as given (PyTorch 2's hint). Default false.
   */
  isCausal?: boolean;
}

/** The forward arguments of an encoder layer: `(src, srcMask?, srcKeyPaddingMask?, options?)`. */
export type TransformerEncoderInputs = [
  src: Tensor,
  srcMask?: Tensor | null,
  srcKeyPaddingMask?: Tensor | null,
  options?: TransformerEncoderForwardOptions,
];

const LAYER = 'TransformerEncoderLayer';

/**
 * A transformer encoder layer: self-attention, then a feed-forward network, each in a residual
 * sum. Post-norm (the default): `x = norm1(x + SA(x))`, `x = norm2(x + FF(x))`; with `normFirst`:
 * `x = x + SA(norm1(x))`, `x = x + FF(norm2(x))`, where
 * `FF(x) = dropout2(linear2(dropout(activation(linear1(x)))))` and `SA(x) = dropout1(selfAttn(x, x, x))`.
 *
 * Children and state_dict keys are PyTorch's (`self_attn.in_proj_weight`, `self_attn.out_proj.weight`,
 * `linear1`, `dropout`, `linear2`, `norm1`, `norm2`, `dropout1`, `dropout2`, and `activation` when
 * it is a Module), built in PyTorch's order: after the same `manualSeed` the weights equal PyTorch's.
 * @param dModel features of the input, `E`
 * @param nhead attention heads; must divide dModel
 * **Shape**: src `(S, N, E)` (`(N, S, E)` with batchFirst) or unbatched `(S, E)`; srcMask `(S, S)` or
 * `(N·nhead, S, S)`, bool (true blocks) or float (added to the scores); srcKeyPaddingMask `(N, S)`
 * (`(S)` unbatched), true (or -∞) for padding; output like src.
 * @throws FlodlError ERR_INVALID_ARGUMENT for bad sizes (dModel not divisible by nhead) or options;
 * ERR_SHAPE for a wrong input or mask shape; ERR_DTYPE for a mask neither bool nor floating
 * @example
 * ```ts
 * const layer = new TransformerEncoderLayer(256, 4, { dimFeedforward: 1024, batchFirst: true });
 * const y = layer.forward(x); // x: [batch, seq, 256]
 * ```
 * PyTorch: `nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1,
 * activation=F.relu, layer_norm_eps=1e-5, batch_first=False, norm_first=False)`.
 */
export class TransformerEncoderLayer extends Module<TransformerEncoderInputs, Tensor> {
  readonly dModel: number;
  readonly nhead: number;
  readonly dimFeedforward: number;
  readonly batchFirst: boolean;
  readonly normFirst: boolean;
  /** @internal the activation (a registered child too when it is a Module) */
  readonly _activation: TransformerActivation;

  constructor(dModel: number, nhead: number, options: TransformerEncoderLayerOptions = {}) {
    super();
    const settings = layerSettings(LAYER, dModel, nhead, options);
    const { dimFeedforward, dropout, layerNormEps, batchFirst } = settings;
    this.dModel = dModel;
    this.nhead = nhead;
    this.dimFeedforward = dimFeedforward;
    this.batchFirst = batchFirst;
    this.normFirst = settings.normFirst;
    this._activation = settings.activation;
    // PyTorch's construction order, so the default init draws line up.
    this.register('self_attn', new MultiheadAttention(dModel, nhead, { dropout, batchFirst }));
    this.register('linear1', new Linear(dModel, dimFeedforward));
    this.register('dropout', new Dropout(dropout));
    this.register('linear2', new Linear(dimFeedforward, dModel));
    this.register('norm1', new LayerNorm(dModel, { eps: layerNormEps }));
    this.register('norm2', new LayerNorm(dModel, { eps: layerNormEps }));
    this.register('dropout1', new Dropout(dropout));
    this.register('dropout2', new Dropout(dropout));
    if (settings.activation instanceof Module) this.register('activation', settings.activation);
  }

  /** `self_attn`: the self-attention. */
  get selfAttn(): MultiheadAttention {
    return this.registered<MultiheadAttention>('self_attn');
  }
  get linear1(): Linear {
    return this.registered<Linear>('linear1');
  }
  /** The dropout inside the feed-forward network. */
  get dropout(): Dropout {
    return this.registered<Dropout>('dropout');
  }
  get linear2(): Linear {
    return this.registered<Linear>('linear2');
  }
  get norm1(): LayerNorm {
    return this.registered<LayerNorm>('norm1');
  }
  get norm2(): LayerNorm {
    return this.registered<LayerNorm>('norm2');
  }
  get dropout1(): Dropout {
    return this.registered<Dropout>('dropout1');
  }
  get dropout2(): Dropout {
    return this.registered<Dropout>('dropout2');
  }
  /** The activation of the feed-forward network. */
  get activation(): TransformerActivation {
    return this._activation;
  }

  forward(
    src: Tensor,
    srcMask?: Tensor | null,
    srcKeyPaddingMask?: Tensor | null,
    options: TransformerEncoderForwardOptions = {},
  ): Tensor {
    const op = `${LAYER}.forward`;
    checkLayerOptions(op, options, ['isCausal']);
    const sequence = sequenceShape(op, 'src', src, this.dModel, this.batchFirst);
    checkAttentionMask(op, 'srcMask', srcMask, {
      target: sequence,
      sourceLength: sequence.length,
      heads: this.nhead,
    });
    checkKeyPaddingMask(op, 'srcKeyPaddingMask', srcKeyPaddingMask, sequence);
    const attend = (x: Tensor) =>
      this.dropout1.forward(
        this.selfAttn.forward(x, x, x, {
          attnMask: srcMask ?? undefined,
          keyPaddingMask: srcKeyPaddingMask ?? undefined,
          needWeights: false,
          isCausal: options.isCausal === true,
        }).output,
      );
    const feedForward = (x: Tensor) => {
      const hidden = activate(op, this._activation, this.linear1.forward(x));
      return this.dropout2.forward(this.linear2.forward(this.dropout.forward(hidden)));
    };
    return tidy(() => {
      let x = src;
      if (this.normFirst) {
        x = x.add(attend(this.norm1.forward(x)));
        return x.add(feedForward(this.norm2.forward(x)));
      }
      x = this.norm1.forward(x.add(attend(x)));
      return this.norm2.forward(x.add(feedForward(x)));
    });
  }
}

/** Options of `TransformerEncoder`. */
export interface TransformerEncoderOptions {
  /** Applied to the last layer's output (`nn.Transformer` uses a LayerNorm). Default none. */
  norm?: Module<[Tensor], Tensor> | null;
  /** Accepted as in PyTorch and ignored: there is no nested-tensor fast path. */
  enableNestedTensor?: boolean;
  /** Accepted as in PyTorch and ignored (it goes with the nested-tensor fast path). */
  maskCheck?: boolean;
}

const STACK = 'TransformerEncoder';

/**
 * A stack of `numLayers` encoder layers, each a deep copy of `encoderLayer` (so all start equal,
 * as in PyTorch), then the optional `norm`: `y = norm(layerₙ(…layer₁(src)))`. Children and
 * state_dict keys are PyTorch's: `layers.0.self_attn.in_proj_weight`, …, `norm.weight`.
 * `encoderLayer` itself is not part of the stack (dispose it if it is not used elsewhere).
 * **Shape**: as `TransformerEncoderLayer`: src `(S, N, E)` (`(N, S, E)` with batchFirst) or `(S, E)`.
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-Module layer or norm, numLayers < 1 or
 * unknown options; the layers' errors for bad inputs
 * @example
 * ```ts
 * const encoder = new TransformerEncoder(
 *   new TransformerEncoderLayer(256, 4, { dimFeedforward: 1024, dropout: 0.1, batchFirst: true }),
 *   4,
 * );
 * const y = encoder.forward(x); // x: [batch, seq, 256]
 * ```
 * PyTorch: `nn.TransformerEncoder(encoder_layer, num_layers, norm=None, enable_nested_tensor=True)`.
 */
export class TransformerEncoder<
  Layer extends Module<TransformerEncoderInputs, Tensor> = TransformerEncoderLayer,
> extends Module<TransformerEncoderInputs, Tensor> {
  readonly numLayers: number;
  layers: ModuleList<Layer>;
  norm: Module<[Tensor], Tensor> | null;
  readonly enableNestedTensor: boolean;

  constructor(encoderLayer: Layer, numLayers: number, options: TransformerEncoderOptions = {}) {
    super();
    checkLayerOptions(STACK, options, ['norm', 'enableNestedTensor', 'maskCheck']);
    // Every check before the copies are made, so a failing call allocates nothing.
    const norm = optionalNorm(STACK, options.norm);
    this.layers = layerClones(STACK, 'encoderLayer', encoderLayer, numLayers);
    this.numLayers = numLayers;
    this.norm = norm;
    this.enableNestedTensor = options.enableNestedTensor !== false;
  }

  forward(
    src: Tensor,
    mask?: Tensor | null,
    srcKeyPaddingMask?: Tensor | null,
    options: TransformerEncoderForwardOptions = {},
  ): Tensor {
    checkLayerOptions(`${STACK}.forward`, options, ['isCausal']);
    return tidy(() => {
      let output = src;
      for (const layer of this.layers) output = layer.forward(output, mask, srcKeyPaddingMask, options);
      return this.norm === null ? output : this.norm.forward(output);
    });
  }
}
