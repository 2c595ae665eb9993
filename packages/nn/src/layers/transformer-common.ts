// Pieces the transformer layers share: their options, the feed-forward activation, the checks of
// sequences and masks, the base of the encoder and decoder layers, and the stack of deep-copied layers.
import { gelu, relu } from '@flodl/autograd';
import {
  describeValue,
  FlodlError,
  invalidArgument,
  isFloatingPoint,
  Tensor,
  type TensorOptions,
  tidy,
} from '@flodl/tensor-native';
import { cloneModule } from '../clone.js';
import { ModuleList } from '../containers.js';
import { Module } from '../module.js';
import { MultiheadAttention } from './attention.js';
import { checkOptions, type FactoryOptions, factoryOf, positiveInteger } from './common.js';
import { Dropout } from './dropout.js';
import { Linear } from './linear.js';
import { LayerNorm } from './normalization.js';

/**
 * The activation of the feed-forward network: `'relu'`, `'gelu'` (exact, not tanh), a function
 * of a tensor, or a Module (registered as the child `activation`, as PyTorch does).
 */
export type TransformerActivation = 'relu' | 'gelu' | ((input: Tensor) => Tensor) | Module<[Tensor], Tensor>;

/** Options of `TransformerEncoderLayer` and `TransformerDecoderLayer` (and PyTorch's factory options `dtype`, `device`). */
export interface TransformerLayerOptions extends FactoryOptions {
  /** Width of the feed-forward network. Default 2048. */
  dimFeedforward?: number;
  /** Dropout on the attention weights, after each sub-block and inside the feed-forward network. Default 0.1. */
  dropout?: number;
  /** Activation of the feed-forward network. Default `'relu'`. */
  activation?: TransformerActivation;
  /** `eps` of the layer norms. Default 1e-5. */
  layerNormEps?: number;
  /** Sequences are `(N, S, E)` instead of `(S, N, E)`. Default false. */
  batchFirst?: boolean;
  /** Normalise before attention and the feed-forward network (pre-norm) instead of after each residual sum. Default false. */
  normFirst?: boolean;
}

/** @internal The option names of `TransformerLayerOptions`. */
export const LAYER_OPTION_NAMES = [
  'dimFeedforward',
  'dropout',
  'activation',
  'layerNormEps',
  'batchFirst',
  'normFirst',
  'dtype',
  'device',
] as const;

/** @internal Validated settings of a transformer layer. */
export interface LayerSettings {
  /** Where and as what the layer's parameters are created. */
  factory: TensorOptions;
  dModel: number;
  nhead: number;
  dimFeedforward: number;
  dropout: number;
  activation: TransformerActivation;
  layerNormEps: number;
  batchFirst: boolean;
  normFirst: boolean;
}

function optionalBoolean(op: string, name: string, value: unknown): boolean {
  if (value !== undefined && typeof value !== 'boolean') throw invalidArgument(op, name, 'a boolean', value);
  return value === true;
}

/** @internal Checks the sizes and options of a transformer layer, naming the bad one. */
export function layerSettings(
  op: string,
  dModel: unknown,
  nhead: unknown,
  options: TransformerLayerOptions,
  allowed: readonly string[] = LAYER_OPTION_NAMES,
): LayerSettings {
  checkOptions(op, options, allowed);
  positiveInteger(op, 'dModel', dModel);
  positiveInteger(op, 'nhead', nhead);
  const model = dModel as number;
  const heads = nhead as number;
  if (model % heads !== 0) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'dModel must be divisible by nhead', {
      op,
      expected: `a multiple of nhead = ${heads}`,
      got: `dModel = ${model}`,
    });
  }
  const {
    dimFeedforward = 2048,
    dropout = 0.1,
    activation = 'relu',
    layerNormEps = 1e-5,
    batchFirst,
    normFirst,
  } = options;
  positiveInteger(op, 'dimFeedforward', dimFeedforward);
  if (typeof dropout !== 'number' || !(dropout >= 0 && dropout <= 1))
    throw invalidArgument(op, 'dropout', 'a probability in [0, 1]', dropout);
  if (
    activation !== 'relu' &&
    activation !== 'gelu' &&
    typeof activation !== 'function' &&
    !(activation instanceof Module)
  ) {
    throw invalidArgument(op, 'activation', "'relu', 'gelu', a function of a Tensor or a Module", activation);
  }
  if (typeof layerNormEps !== 'number' || !(layerNormEps >= 0) || !Number.isFinite(layerNormEps))
    throw invalidArgument(op, 'layerNormEps', 'a finite number >= 0', layerNormEps);
  return {
    factory: factoryOf(op, options),
    dModel: model,
    nhead: heads,
    dimFeedforward,
    dropout,
    activation,
    layerNormEps,
    batchFirst: optionalBoolean(op, 'batchFirst', batchFirst),
    normFirst: optionalBoolean(op, 'normFirst', normFirst),
  };
}

/** @internal Runs the feed-forward activation. */
export function activate(op: string, activation: TransformerActivation, input: Tensor): Tensor {
  if (activation === 'relu') return relu(input);
  if (activation === 'gelu') return gelu(input);
  const output = activation instanceof Module ? activation.forward(input) : activation(input);
  if (!(output instanceof Tensor)) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'the activation must return a Tensor', {
      op,
      expected: 'a Tensor',
      got: describeValue(output),
    });
  }
  return output;
}

/** @internal The sizes of a sequence: batch (null when unbatched) and length. */
export interface SequenceShape {
  batch: number | null;
  length: number;
}

/** @internal Checks a sequence `(S, N, E)`, `(N, S, E)` with batchFirst, or unbatched `(S, E)`. */
export function sequenceShape(
  op: string,
  name: string,
  input: unknown,
  dModel: number,
  batchFirst: boolean,
): SequenceShape {
  if (!(input instanceof Tensor)) throw invalidArgument(op, name, 'a Tensor', input);
  if ((input.ndim !== 2 && input.ndim !== 3) || input.shape[input.ndim - 1] !== dModel) {
    throw new FlodlError('ERR_SHAPE', `${name} has the wrong shape`, {
      op,
      expected: `${batchFirst ? '(N, S, E)' : '(S, N, E)'} or unbatched (S, E), with E = dModel = ${dModel}`,
      got: `[${input.shape.join(', ')}]`,
    });
  }
  if (input.ndim === 2) return { batch: null, length: input.shape[0]! };
  const [first, second] = input.shape as [number, number];
  return batchFirst ? { batch: first, length: second } : { batch: second, length: first };
}

/** @internal Checks that `memory` is batched like `target` and has the same batch size. */
export function checkSameBatch(
  op: string,
  names: [string, string],
  target: SequenceShape,
  source: SequenceShape,
): void {
  if (target.batch !== source.batch) {
    const describe = (shape: SequenceShape) => (shape.batch === null ? 'unbatched' : `batch ${shape.batch}`);
    throw new FlodlError('ERR_SHAPE', `${names[0]} and ${names[1]} must have the same batch size`, {
      op,
      expected: `${names[1]}: ${describe(target)}, as ${names[0]}`,
      got: describe(source),
    });
  }
}

function checkMaskDtype(op: string, name: string, mask: Tensor): void {
  if (mask.dtype !== 'bool' && !isFloatingPoint(mask.dtype)) {
    throw new FlodlError('ERR_DTYPE', `${name} must be a bool or floating mask`, {
      op,
      expected: 'bool (true blocks a key) or a floating type (added to the attention scores)',
      got: mask.dtype,
    });
  }
}

/**
 * @internal Checks an attention mask: `(L, S)`, or `(N·H, L, S)` per batch and head (`(H, L, S)`
 * unbatched). Null and undefined pass.
 */
export function checkAttentionMask(
  op: string,
  name: string,
  mask: unknown,
  sizes: { target: SequenceShape; sourceLength: number; heads: number },
): void {
  if (mask === undefined || mask === null) return;
  if (!(mask instanceof Tensor)) throw invalidArgument(op, name, 'a Tensor, null or undefined', mask);
  checkMaskDtype(op, name, mask);
  const { target, sourceLength, heads } = sizes;
  const stacked = (target.batch ?? 1) * heads;
  const shape = mask.shape.join(',');
  if (
    shape !== `${target.length},${sourceLength}` &&
    shape !== `${stacked},${target.length},${sourceLength}`
  ) {
    throw new FlodlError('ERR_SHAPE', `${name} has the wrong shape`, {
      op,
      expected: `(L, S) = [${target.length}, ${sourceLength}] or (${target.batch === null ? 'H' : 'N·H'}, L, S) = [${stacked}, ${target.length}, ${sourceLength}]`,
      got: `[${mask.shape.join(', ')}]`,
    });
  }
}

/** @internal Checks a key padding mask: `(N, S)`, or `(S)` unbatched. Null and undefined pass. */
export function checkKeyPaddingMask(op: string, name: string, mask: unknown, source: SequenceShape): void {
  if (mask === undefined || mask === null) return;
  if (!(mask instanceof Tensor)) throw invalidArgument(op, name, 'a Tensor, null or undefined', mask);
  checkMaskDtype(op, name, mask);
  const expected = source.batch === null ? [source.length] : [source.batch, source.length];
  if (mask.shape.join(',') !== expected.join(',')) {
    throw new FlodlError('ERR_SHAPE', `${name} has the wrong shape`, {
      op,
      expected: `${source.batch === null ? '(S)' : '(N, S)'} = [${expected.join(', ')}]`,
      got: `[${mask.shape.join(', ')}]`,
    });
  }
}

/** @internal Checks the arguments of a layer stack and deep-copies the layer `numLayers` times. */
export function layerClones<Layer extends Module<any, any>>(
  op: string,
  name: string,
  layer: Layer,
  numLayers: number,
): ModuleList<Layer> {
  if (!(layer instanceof Module)) throw invalidArgument(op, name, 'a Module', layer);
  positiveInteger(op, 'numLayers', numLayers);
  // Copies, as PyTorch's _get_clones: every layer starts from the given layer's values.
  return new ModuleList(Array.from({ length: numLayers }, () => cloneModule(layer)));
}

/** @internal Checks the optional final norm of a layer stack. */
export function optionalNorm(op: string, norm: unknown): Module<[Tensor], Tensor> | null {
  if (norm === undefined || norm === null) return null;
  if (!(norm instanceof Module))
    throw invalidArgument(op, 'norm', 'a Module (a LayerNorm), null or undefined', norm);
  return norm as Module<[Tensor], Tensor>;
}

/** @internal The masks of one attention block; null and undefined mean none. */
export interface BlockMasks {
  attnMask: Tensor | null | undefined;
  keyPaddingMask: Tensor | null | undefined;
  isCausal: boolean | undefined;
}

/**
 * @internal What `TransformerEncoderLayer` and `TransformerDecoderLayer` share: the settings, the
 * children in PyTorch's construction order, and the attention, feed-forward and residual blocks.
 */
export abstract class TransformerLayerBase<Inputs extends unknown[]> extends Module<Inputs, Tensor> {
  readonly dModel: number;
  readonly nhead: number;
  readonly dimFeedforward: number;
  readonly batchFirst: boolean;
  readonly normFirst: boolean;
  /** @internal the activation (a registered child too when it is a Module) */
  readonly _activation: TransformerActivation;

  /**
   * @param attentionNames the attention children in order (`self_attn`, then the decoder's
   * `multihead_attn`); they and the feed-forward network each get a norm and a dropout
   */
  protected constructor(
    op: string,
    dModel: number,
    nhead: number,
    options: TransformerLayerOptions,
    attentionNames: readonly string[],
  ) {
    super();
    const settings = layerSettings(op, dModel, nhead, options);
    const { dimFeedforward, dropout, layerNormEps, batchFirst, factory } = settings;
    this.dModel = dModel;
    this.nhead = nhead;
    this.dimFeedforward = dimFeedforward;
    this.batchFirst = batchFirst;
    this.normFirst = settings.normFirst;
    this._activation = settings.activation;
    // PyTorch's construction order, so the default init draws line up.
    for (const name of attentionNames)
      this.register(name, new MultiheadAttention(dModel, nhead, { dropout, batchFirst, ...factory }));
    this.register('linear1', new Linear(dModel, dimFeedforward, factory));
    this.register('dropout', new Dropout(dropout));
    this.register('linear2', new Linear(dimFeedforward, dModel, factory));
    const blocks = attentionNames.length + 1;
    for (let block = 1; block <= blocks; block++)
      this.register(`norm${block}`, new LayerNorm(dModel, { eps: layerNormEps, ...factory }));
    for (let block = 1; block <= blocks; block++) this.register(`dropout${block}`, new Dropout(dropout));
    if (settings.activation instanceof Module) this.register('activation', settings.activation);
  }

  /** `self_attn`: the self-attention (over the target, in a decoder). */
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

  /** `attention(query, memory, memory)` under `masks`, without the attention weights. */
  protected attend(attention: MultiheadAttention, query: Tensor, memory: Tensor, masks: BlockMasks): Tensor {
    return attention.forward(query, memory, memory, {
      attnMask: masks.attnMask ?? undefined,
      keyPaddingMask: masks.keyPaddingMask ?? undefined,
      needWeights: false,
      isCausal: masks.isCausal === true,
    }).output;
  }

  /** The feed-forward network before its output dropout: `linear2(dropout(activation(linear1(x))))`. */
  protected feedForward(op: string, x: Tensor): Tensor {
    const hidden = activate(op, this._activation, this.linear1.forward(x));
    return this.linear2.forward(this.dropout.forward(hidden));
  }

  /**
   * The residual blocks in order, each with its norm: `x = x + block(norm(x))` with normFirst,
   * else `x = norm(x + block(x))`.
   */
  protected residualBlocks(input: Tensor, blocks: readonly [LayerNorm, (x: Tensor) => Tensor][]): Tensor {
    return tidy(() => {
      let x = input;
      for (const [norm, block] of blocks) {
        x = this.normFirst ? x.add(block(norm.forward(x))) : norm.forward(x.add(block(x)));
      }
      return x;
    });
  }
}

/** @internal Options of a layer stack. */
export interface StackOptions {
  norm?: Module<[Tensor], Tensor> | null;
}

/**
 * @internal What `TransformerEncoder` and `TransformerDecoder` share: `numLayers` deep copies of
 * one layer run in turn, then the optional norm.
 */
export abstract class TransformerStackBase<
  Inputs extends unknown[],
  Layer extends Module<Inputs, Tensor>,
> extends Module<Inputs, Tensor> {
  readonly numLayers: number;
  layers: ModuleList<Layer>;
  norm: Module<[Tensor], Tensor> | null;

  protected constructor(
    op: string,
    layerName: string,
    layer: Layer,
    numLayers: number,
    options: StackOptions,
    optionNames: readonly string[],
  ) {
    super();
    checkOptions(op, options, optionNames);
    // Every check before the copies are made, so a failing call allocates nothing.
    const norm = optionalNorm(op, options.norm);
    this.layers = layerClones(op, layerName, layer, numLayers);
    this.numLayers = numLayers;
    this.norm = norm;
  }

  /** Runs every layer in turn on the previous one's output (`forwardLayer` adds the other inputs), then the norm. */
  protected runLayers(input: Tensor, forwardLayer: (layer: Layer, x: Tensor) => Tensor): Tensor {
    return tidy(() => {
      let output = input;
      for (const layer of this.layers) output = forwardLayer(layer, output);
      return this.norm === null ? output : this.norm.forward(output);
    });
  }
}
