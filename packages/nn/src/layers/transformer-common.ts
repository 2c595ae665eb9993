// Pieces the transformer layers share: their options, the feed-forward activation, the checks of
// sequences and masks, and the stack of deep-copied layers.
import { gelu, relu } from '@flodl/autograd';
import { describeValue, FlodlError, invalidArgument, isFloatingPoint, Tensor } from '@flodl/tensor-native';
import { cloneModule } from '../clone.js';
import { ModuleList } from '../containers.js';
import { Module } from '../module.js';
import { checkLayerOptions, positiveInteger } from './common.js';

/**
 * The activation of the feed-forward network: `'relu'`, `'gelu'` (exact, not tanh), a function
 * of a tensor, or a Module (registered as the child `activation`, as PyTorch does).
 */
export type TransformerActivation = 'relu' | 'gelu' | ((input: Tensor) => Tensor) | Module<[Tensor], Tensor>;

/** Options of `TransformerEncoderLayer` and `TransformerDecoderLayer`. */
export interface TransformerLayerOptions {
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
] as const;

/** @internal Validated settings of a transformer layer. */
export interface LayerSettings {
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
  checkLayerOptions(op, options, allowed);
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
    throw invalidArgument(op, 'layerNormEps', 'a finite number ≥ 0', layerNormEps);
  return {
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
