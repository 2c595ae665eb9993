// The transformer decoder: a layer of self-attention, attention over the encoder's output and a
// feed-forward network, and a stack of copies of it, with PyTorch 1.13's submodules, state_dict
// keys, init order and computation.
import type { Tensor } from '@flodl/tensor-native';
import type { Module } from '../module.js';
import type { MultiheadAttention } from './attention.js';
import { checkOptions } from './common.js';
import type { Dropout } from './dropout.js';
import type { LayerNorm } from './normalization.js';
import {
  checkAttentionMask,
  checkKeyPaddingMask,
  checkSameBatch,
  sequenceShape,
  TransformerLayerBase,
  type TransformerLayerOptions,
  TransformerStackBase,
} from './transformer-common.js';

/** Options of `TransformerDecoderLayer`. */
export type TransformerDecoderLayerOptions = TransformerLayerOptions;

/** Options of `TransformerDecoderLayer.forward` and `TransformerDecoder.forward`. */
export interface TransformerDecoderForwardOptions {
  /** Causal self-attention: built when `tgtMask` is not given, else `tgtMask` is used. Default false. */
  tgtIsCausal?: boolean;
  /** Causal attention over the memory: built when `memoryMask` is not given. Default false. */
  memoryIsCausal?: boolean;
}

/**
 * The forward arguments of a decoder layer:
 * `(tgt, memory, tgtMask?, memoryMask?, tgtKeyPaddingMask?, memoryKeyPaddingMask?, options?)`.
 */
export type TransformerDecoderInputs = [
  tgt: Tensor,
  memory: Tensor,
  tgtMask?: Tensor | null,
  memoryMask?: Tensor | null,
  tgtKeyPaddingMask?: Tensor | null,
  memoryKeyPaddingMask?: Tensor | null,
  options?: TransformerDecoderForwardOptions,
];

const LAYER = 'TransformerDecoderLayer';

/**
 * A transformer decoder layer: self-attention over the target, attention over the encoder's
 * output (`memory`), then a feed-forward network, each in a residual sum. Post-norm (the default):
 * `x = norm1(x + SA(x))`, `x = norm2(x + MHA(x, memory))`, `x = norm3(x + FF(x))`; with `normFirst`:
 * `x = x + SA(norm1(x))`, `x = x + MHA(norm2(x), memory)`, `x = x + FF(norm3(x))`, where
 * `SA(x) = dropout1(selfAttn(x, x, x))`, `MHA(x, m) = dropout2(multiheadAttn(x, m, m))` and
 * `FF(x) = dropout3(linear2(dropout(activation(linear1(x)))))`.
 *
 * Children and state_dict keys are PyTorch's (`self_attn`, `multihead_attn`, `linear1`, `dropout`,
 * `linear2`, `norm1`–`norm3`, `dropout1`–`dropout3`, and `activation` when it is a Module), built
 * in PyTorch's order: after the same `manualSeed` the weights equal PyTorch's.
 * @param dModel features of the inputs, `E`
 * @param nhead attention heads; must divide dModel
 * **Shape**: tgt `(T, N, E)` and memory `(S, N, E)` (`(N, T, E)`, `(N, S, E)` with batchFirst) or
 * unbatched `(T, E)`, `(S, E)`; tgtMask `(T, T)` or `(N·nhead, T, T)`; memoryMask `(T, S)` or
 * `(N·nhead, T, S)`; tgtKeyPaddingMask `(N, T)`; memoryKeyPaddingMask `(N, S)`; output like tgt.
 * @throws FlodlError ERR_INVALID_ARGUMENT for bad sizes (dModel not divisible by nhead) or options;
 * ERR_SHAPE for a wrong input or mask shape; ERR_DTYPE for a mask neither bool nor floating
 * @example
 * ```ts
 * const layer = new TransformerDecoderLayer(512, 8, { batchFirst: true });
 * const y = layer.forward(tgt, memory, Transformer.generateSquareSubsequentMask(tgt.shape[1]!));
 * ```
 * PyTorch: `nn.TransformerDecoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1,
 * activation=F.relu, layer_norm_eps=1e-5, batch_first=False, norm_first=False)`.
 */
export class TransformerDecoderLayer extends TransformerLayerBase<TransformerDecoderInputs> {
  constructor(dModel: number, nhead: number, options: TransformerDecoderLayerOptions = {}) {
    super(LAYER, dModel, nhead, options, ['self_attn', 'multihead_attn']);
  }

  /** `multihead_attn`: the attention over the memory. */
  get multiheadAttn(): MultiheadAttention {
    return this.registered<MultiheadAttention>('multihead_attn');
  }
  get norm3(): LayerNorm {
    return this.registered<LayerNorm>('norm3');
  }
  get dropout3(): Dropout {
    return this.registered<Dropout>('dropout3');
  }

  forward(...inputs: TransformerDecoderInputs): Tensor {
    const [tgt, memory, tgtMask, memoryMask, tgtKeyPaddingMask, memoryKeyPaddingMask, options = {}] = inputs;
    const op = `${LAYER}.forward`;
    checkOptions(op, options, ['tgtIsCausal', 'memoryIsCausal']);
    const target = sequenceShape(op, 'tgt', tgt, this.dModel, this.batchFirst);
    const source = sequenceShape(op, 'memory', memory, this.dModel, this.batchFirst);
    checkSameBatch(op, ['tgt', 'memory'], target, source);
    checkAttentionMask(op, 'tgtMask', tgtMask, { target, sourceLength: target.length, heads: this.nhead });
    checkAttentionMask(op, 'memoryMask', memoryMask, {
      target,
      sourceLength: source.length,
      heads: this.nhead,
    });
    checkKeyPaddingMask(op, 'tgtKeyPaddingMask', tgtKeyPaddingMask, target);
    checkKeyPaddingMask(op, 'memoryKeyPaddingMask', memoryKeyPaddingMask, source);
    const targetMasks = {
      attnMask: tgtMask,
      keyPaddingMask: tgtKeyPaddingMask,
      isCausal: options.tgtIsCausal,
    };
    const memoryMasks = {
      attnMask: memoryMask,
      keyPaddingMask: memoryKeyPaddingMask,
      isCausal: options.memoryIsCausal,
    };
    return this.residualBlocks(tgt, [
      [this.norm1, (x) => this.dropout1.forward(this.attend(this.selfAttn, x, x, targetMasks))],
      [this.norm2, (x) => this.dropout2.forward(this.attend(this.multiheadAttn, x, memory, memoryMasks))],
      [this.norm3, (x) => this.dropout3.forward(this.feedForward(op, x))],
    ]);
  }
}

/** Options of `TransformerDecoder`. */
export interface TransformerDecoderOptions {
  /** Applied to the last layer's output (`nn.Transformer` uses a LayerNorm). Default none. */
  norm?: Module<[Tensor], Tensor> | null;
}

const STACK = 'TransformerDecoder';

/**
 * A stack of `numLayers` decoder layers, each a deep copy of `decoderLayer` (so all start equal,
 * as in PyTorch), then the optional `norm`: `y = norm(layerₙ(…layer₁(tgt, memory), memory))`.
 * State_dict keys are PyTorch's: `layers.0.self_attn.in_proj_weight`, …, `norm.weight`.
 * `decoderLayer` itself is not part of the stack (dispose it if it is not used elsewhere).
 * **Shape**: as `TransformerDecoderLayer`.
 * @throws FlodlError ERR_INVALID_ARGUMENT for a non-Module layer or norm, numLayers < 1 or
 * unknown options; the layers' errors for bad inputs
 * @example
 * ```ts
 * const decoder = new TransformerDecoder(new TransformerDecoderLayer(512, 8), 6);
 * const y = decoder.forward(tgt, memory);
 * ```
 * PyTorch: `nn.TransformerDecoder(decoder_layer, num_layers, norm=None)`.
 */
export class TransformerDecoder<
  Layer extends Module<TransformerDecoderInputs, Tensor> = TransformerDecoderLayer,
> extends TransformerStackBase<TransformerDecoderInputs, Layer> {
  constructor(decoderLayer: Layer, numLayers: number, options: TransformerDecoderOptions = {}) {
    super(STACK, 'decoderLayer', decoderLayer, numLayers, options, ['norm']);
  }

  forward(...inputs: TransformerDecoderInputs): Tensor {
    const [tgt, memory, tgtMask, memoryMask, tgtKeyPaddingMask, memoryKeyPaddingMask, options] = inputs;
    checkOptions(`${STACK}.forward`, options, ['tgtIsCausal', 'memoryIsCausal']);
    return this.runLayers(tgt, (layer, x) =>
      layer.forward(x, memory, tgtMask, memoryMask, tgtKeyPaddingMask, memoryKeyPaddingMask, options),
    );
  }
}
