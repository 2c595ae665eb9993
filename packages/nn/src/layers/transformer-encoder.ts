// The transformer encoder: a layer of self-attention and a feed-forward network, and a stack of
// copies of it, with PyTorch 1.13's submodules, state_dict keys, init order and computation.
import type { Tensor } from '@flodl/tensor-native';
import type { Module } from '../module.js';
import { checkOptions } from './common.js';
import {
  checkAttentionMask,
  checkKeyPaddingMask,
  sequenceShape,
  TransformerLayerBase,
  type TransformerLayerOptions,
  TransformerStackBase,
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
export class TransformerEncoderLayer extends TransformerLayerBase<TransformerEncoderInputs> {
  constructor(dModel: number, nhead: number, options: TransformerEncoderLayerOptions = {}) {
    super(LAYER, dModel, nhead, options, ['self_attn']);
  }

  forward(...inputs: TransformerEncoderInputs): Tensor {
    const [src, srcMask, srcKeyPaddingMask, options = {}] = inputs;
    const op = `${LAYER}.forward`;
    checkOptions(op, options, ['isCausal']);
    const sequence = sequenceShape(op, 'src', src, this.dModel, this.batchFirst);
    checkAttentionMask(op, 'srcMask', srcMask, {
      target: sequence,
      sourceLength: sequence.length,
      heads: this.nhead,
    });
    checkKeyPaddingMask(op, 'srcKeyPaddingMask', srcKeyPaddingMask, sequence);
    const masks = { attnMask: srcMask, keyPaddingMask: srcKeyPaddingMask, isCausal: options.isCausal };
    return this.residualBlocks(src, [
      [this.norm1, (x) => this.dropout1.forward(this.attend(this.selfAttn, x, x, masks))],
      [this.norm2, (x) => this.dropout2.forward(this.feedForward(op, x))],
    ]);
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
> extends TransformerStackBase<TransformerEncoderInputs, Layer> {
  readonly enableNestedTensor: boolean;

  constructor(encoderLayer: Layer, numLayers: number, options: TransformerEncoderOptions = {}) {
    super(STACK, 'encoderLayer', encoderLayer, numLayers, options, [
      'norm',
      'enableNestedTensor',
      'maskCheck',
    ]);
    this.enableNestedTensor = options.enableNestedTensor !== false;
  }

  forward(...inputs: TransformerEncoderInputs): Tensor {
    const [src, mask, srcKeyPaddingMask, options] = inputs;
    checkOptions(`${STACK}.forward`, options, ['isCausal']);
    return this.runLayers(src, (layer, x) => layer.forward(x, mask, srcKeyPaddingMask, options));
  }
}
