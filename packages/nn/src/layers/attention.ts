// Multi-head attention with PyTorch's parameters (in_proj_weight, in_proj_bias, out_proj.*)
// and PyTorch's computation order, so weights and results carry over.
import { dropout, linear, scaledDotProductAttention } from '@flodl/autograd';
import { empty, FlodlError, type Tensor, tidy, zeros } from '@flodl/tensor-native';
import * as init from '../init.js';
import { Module } from '../module.js';
import { Parameter } from '../parameter.js';
import { checkOptions, FACTORY_KEYS, type FactoryOptions, factoryOf, positiveInteger } from './common.js';
import { Linear } from './linear.js';

/** Options of `MultiheadAttention`. */
export interface MultiheadAttentionOptions extends FactoryOptions {
  /** Dropout on the attention weights, in training. Default 0. */
  dropout?: number;
  /** Learn input and output projection biases. Default true. */
  bias?: boolean;
  /** Inputs are `(N, L, E)` instead of `(L, N, E)`. Default false. */
  batchFirst?: boolean;
}

/** Options of `MultiheadAttention.forward`. */
export interface AttentionForwardOptions {
  /** `(N, S)` (`(S)` unbatched): true (or -∞) marks keys to ignore (padding). */
  keyPaddingMask?: Tensor;
  /** Also return the attention weights. Default true. */
  needWeights?: boolean;
  /** `(L, S)` or `(N·H, L, S)`: true (or -∞) blocks a query from a key. */
  attnMask?: Tensor;
  /** Average the returned weights over the heads. Default true. */
  averageAttnWeights?: boolean;
  /** Block attention to later positions. Default false. */
  isCausal?: boolean;
}

/** What `MultiheadAttention.forward` returns. */
export interface AttentionResult {
  output: Tensor;
  /** `(N, L, S)` (or `(N, H, L, S)` without averaging); null unless needWeights. */
  weights: Tensor | null;
}

/**
 * Attention over `numHeads` heads: projections of query, key and value, scaled dot-product
 * attention per head, and an output projection.
 * **Shape**: query `(L, N, E)`, key/value `(S, N, E)` (batch first with `batchFirst`) → `(L, N, E)`;
 * unbatched query `(L, E)`, key/value `(S, E)` → `(L, E)` (key padding mask `(S)`, weights `(L, S)`).
 * @example const { output } = new MultiheadAttention(64, 8, { batchFirst: true }).forward(x, x, x);
 * PyTorch: `nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False)`.
 */
export class MultiheadAttention extends Module<
  [Tensor, Tensor, Tensor, AttentionForwardOptions?],
  AttentionResult
> {
  readonly embedDim: number;
  readonly numHeads: number;
  readonly headDim: number;
  readonly dropout: number;
  readonly batchFirst: boolean;

  constructor(embedDim: number, numHeads: number, options: MultiheadAttentionOptions = {}) {
    super();
    checkOptions('MultiheadAttention', options, ['dropout', 'bias', 'batchFirst', ...FACTORY_KEYS]);
    const factory = factoryOf('MultiheadAttention', options);
    this.embedDim = positiveInteger('MultiheadAttention', 'embedDim', embedDim);
    this.numHeads = positiveInteger('MultiheadAttention', 'numHeads', numHeads);
    if (embedDim % numHeads !== 0) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'embedDim must be divisible by numHeads', {
        op: 'MultiheadAttention',
        expected: `a multiple of ${numHeads}`,
        got: String(embedDim),
      });
    }
    this.headDim = embedDim / numHeads;
    this.dropout = options.dropout ?? 0;
    this.batchFirst = options.batchFirst === true;
    const bias = options.bias !== false;
    this.register('in_proj_weight', new Parameter(empty([3 * embedDim, embedDim], factory)));
    if (bias) this.register('in_proj_bias', new Parameter(empty([3 * embedDim], factory)));
    // PyTorch builds out_proj (drawing its default init) before initialising in_proj: same order here.
    this.register('out_proj', new Linear(embedDim, embedDim, { bias, ...factory }));
    init.xavierUniform_(this.inProjWeight);
    if (this.inProjBias !== null) init.constant_(this.inProjBias, 0);
    if (this.outProj.bias !== null) init.constant_(this.outProj.bias, 0);
  }

  /** `in_proj_weight`: the stacked query, key and value projections `(3E, E)`. */
  get inProjWeight(): Tensor {
    return this.registered<Tensor>('in_proj_weight');
  }
  /** `in_proj_bias` `(3E)`, or null without bias. */
  get inProjBias(): Tensor | null {
    return this.registered<Tensor | undefined>('in_proj_bias') ?? null;
  }
  /** `out_proj`: the output projection. */
  get outProj(): Linear {
    return this.registered<Linear>('out_proj');
  }

  forward(query: Tensor, key: Tensor, value: Tensor, options: AttentionForwardOptions = {}): AttentionResult {
    checkOptions('MultiheadAttention.forward', options, [
      'keyPaddingMask',
      'needWeights',
      'attnMask',
      'averageAttnWeights',
      'isCausal',
    ]);
    const {
      keyPaddingMask,
      needWeights = true,
      attnMask,
      averageAttnWeights = true,
      isCausal = false,
    } = options;
    const batched = query.ndim === 3;
    for (const [name, tensor] of [
      ['query', query],
      ['key', key],
      ['value', value],
    ] as const) {
      if (tensor.ndim !== (batched ? 3 : 2) || tensor.shape[tensor.ndim - 1] !== this.embedDim) {
        throw new FlodlError('ERR_SHAPE', `${name} has the wrong shape`, {
          op: 'MultiheadAttention.forward',
          expected: `${batched ? (this.batchFirst ? '(N, L, E)' : '(L, N, E)') : '(L, E), as the query'} with E = ${this.embedDim}`,
          got: `[${tensor.shape.join(', ')}]`,
        });
      }
    }
    return tidy(() => {
      // Work in (L, N, E) like PyTorch's functional form; an unbatched input is a batch of one.
      const [q0, k0, v0] = !batched
        ? [query, key, value].map((tensor) => tensor.unsqueeze(1))
        : this.batchFirst
          ? [query, key, value].map((tensor) => tensor.transpose(0, 1))
          : [query, key, value];
      const targetLength = q0!.shape[0]!;
      const batch = q0!.shape[1]!;
      const sourceLength = k0!.shape[0]!;
      const heads = (tensor: Tensor, length: number) =>
        tensor.reshape(length, batch * this.numHeads, this.headDim).transpose(0, 1);
      let projected: [Tensor, Tensor, Tensor];
      if (query === key && key === value) {
        // Self-attention: one packed projection, split into q, k, v by one copy (as PyTorch's
        // _in_projection_packed): fewer kernels forward and backward than three projections.
        const packed = linear(q0!, this.inProjWeight, this.inProjBias ?? undefined)
          .reshape(targetLength, batch, 3, this.embedDim)
          .permute(2, 0, 1, 3)
          .contiguous();
        projected = [packed.select(0, 0), packed.select(0, 1), packed.select(0, 2)];
      } else {
        const [wq, wk, wv] = this.inProjWeight.chunk(3, 0);
        const biases = this.inProjBias?.chunk(3, 0) ?? [undefined, undefined, undefined];
        projected = [linear(q0!, wq!, biases[0]), linear(k0!, wk!, biases[1]), linear(v0!, wv!, biases[2])];
      }
      const q = heads(projected[0], targetLength);
      const k = heads(projected[1], sourceLength);
      const v = heads(projected[2], sourceLength);
      // One additive float mask of shape (N·H, L, S) from the attention and padding masks.
      let mask: Tensor | undefined;
      const additive = (tensor: Tensor) =>
        tensor.dtype === 'bool'
          ? zeros(tensor.shape, { dtype: q.dtype }).maskedFill(tensor, Number.NEGATIVE_INFINITY)
          : tensor.to(q.dtype);
      if (isCausal && attnMask === undefined) {
        mask = additive(zeros([targetLength, sourceLength], { dtype: 'bool' }).logicalNot().triu(1));
      } else if (attnMask !== undefined) {
        mask = additive(attnMask);
      }
      if (keyPaddingMask !== undefined) {
        const padding = additive(batched ? keyPaddingMask : keyPaddingMask.unsqueeze(0))
          .reshape(batch, 1, 1, sourceLength)
          .expand(batch, this.numHeads, 1, sourceLength)
          .reshape(batch * this.numHeads, 1, sourceLength);
        mask = mask === undefined ? padding : mask.add(padding);
      }
      const training = this.isTraining && this.dropout > 0;
      let attended: Tensor;
      let weights: Tensor | null = null;
      if (needWeights) {
        // q / √d first, as PyTorch 1.13's _scaled_dot_product_attention.
        let scores = q.div(Math.sqrt(this.headDim)).matmul(k.transpose(-2, -1));
        if (mask !== undefined) scores = scores.add(mask);
        let probabilities = scores.softmax(-1);
        if (training) probabilities = dropout(probabilities, { p: this.dropout });
        attended = probabilities.bmm(v);
        const perHead = probabilities.reshape(batch, this.numHeads, targetLength, sourceLength);
        weights = averageAttnWeights ? perHead.sum(1).div(this.numHeads) : perHead;
      } else {
        // (N, H, L, d) views, as PyTorch's functional form passes them: the fused attention
        // kernels (flash, memory-efficient) take 4-d inputs only.
        const split = (tensor: Tensor, length: number) =>
          tensor.reshape(batch, this.numHeads, length, this.headDim);
        attended = scaledDotProductAttention(
          split(q, targetLength),
          split(k, sourceLength),
          split(v, sourceLength),
          {
            ...(mask === undefined
              ? {}
              : {
                  attnMask:
                    mask.ndim === 3 ? mask.reshape(batch, this.numHeads, mask.shape[1]!, sourceLength) : mask,
                }),
            dropoutP: training ? this.dropout : 0,
          },
        ).reshape(batch * this.numHeads, targetLength, this.headDim);
      }
      const merged = attended
        .transpose(0, 1)
        .contiguous()
        .reshape(targetLength * batch, this.embedDim);
      let output = this.outProj.forward(merged).reshape(targetLength, batch, this.embedDim);
      if (!batched) return { output: output.squeeze(1), weights: weights?.squeeze(0) ?? null };
      if (this.batchFirst) output = output.transpose(0, 1);
      return { output, weights };
    });
  }

  override extraRepr(): string {
    return '';
  }
}
