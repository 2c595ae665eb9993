// Recurrent layers over the fused libtorch kernels, with PyTorch's parameter names
// (weight_ih_l0, bias_hh_l1_reverse, ...) so state dicts move between the two.
import { type GruResult, gru, gruCell, type LstmResult, lstm, lstmCell } from '@flodl/autograd';
import { aten, backends, empty, FlodlError, type Tensor, tidy } from '@flodl/tensor-native';
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

/** Options of GRU and LSTM (PyTorch's keywords and defaults). */
export interface RecurrentLayerOptions extends FactoryOptions {
  /** Stacked layers. Default 1. */
  numLayers?: number;
  /** Learn b_ih and b_hh. Default true. */
  bias?: boolean;
  /** Inputs and outputs are `(N, L, ·)` instead of `(L, N, ·)`. Default false. */
  batchFirst?: boolean;
  /** Dropout between layers, in training. Default 0. */
  dropout?: number;
  /** A second direction from the end of the sequence. Default false. */
  bidirectional?: boolean;
}

const OPTION_KEYS = ['numLayers', 'bias', 'batchFirst', 'dropout', 'bidirectional', ...FACTORY_KEYS];

abstract class RecurrentBase extends Module<any, any> {
  readonly inputSize: number;
  readonly hiddenSize: number;
  readonly numLayers: number;
  readonly bias: boolean;
  readonly batchFirst: boolean;
  readonly dropout: number;
  readonly bidirectional: boolean;
  /** The flat weight list in PyTorch's order. */
  protected readonly flatWeights: Tensor[] = [];
  /** cuDNN's name for the cell: 2 LSTM, 3 GRU. */
  readonly #cudnnMode: number;

  protected constructor(
    layer: string,
    gates: number,
    inputSize: number,
    hiddenSize: number,
    options: RecurrentLayerOptions,
  ) {
    super();
    checkOptions(layer, options, OPTION_KEYS);
    this.#cudnnMode = layer === 'LSTM' ? 2 : 3;
    this.inputSize = positiveInteger(layer, 'inputSize', inputSize);
    this.hiddenSize = positiveInteger(layer, 'hiddenSize', hiddenSize);
    this.numLayers = positiveInteger(layer, 'numLayers', options.numLayers ?? 1);
    this.bias = options.bias !== false;
    this.batchFirst = options.batchFirst === true;
    this.dropout = options.dropout ?? 0;
    this.bidirectional = options.bidirectional === true;
    if (!(this.dropout >= 0 && this.dropout <= 1)) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', 'dropout must be a probability', {
        op: layer,
        expected: 'a number in [0, 1]',
        got: String(this.dropout),
      });
    }
    const factory = factoryOf(layer, options);
    const directions = this.bidirectional ? 2 : 1;
    for (let layerIndex = 0; layerIndex < this.numLayers; layerIndex++) {
      for (let direction = 0; direction < directions; direction++) {
        const suffix = `_l${layerIndex}${direction === 1 ? '_reverse' : ''}`;
        const layerInput = layerIndex === 0 ? inputSize : hiddenSize * directions;
        const entries: [string, number[]][] = [
          [`weight_ih${suffix}`, [gates * hiddenSize, layerInput]],
          [`weight_hh${suffix}`, [gates * hiddenSize, hiddenSize]],
        ];
        if (this.bias)
          entries.push(
            [`bias_ih${suffix}`, [gates * hiddenSize]],
            [`bias_hh${suffix}`, [gates * hiddenSize]],
          );
        for (const [name, shape] of entries) {
          const parameter = new Parameter(empty(shape, factory));
          this.register(name, parameter);
          this.flatWeights.push(parameter);
        }
      }
    }
    this.resetParameters();
    this.flattenParameters();
  }

  /**
   * Puts every weight into one contiguous buffer in cuDNN's layout, each weight a view into it,
   * so cuDNN reads them in place instead of compacting them on every call. Done by the
   * constructor and after `to()`; call it again after replacing a weight's data yourself
   * (`setData`). Does nothing off CUDA, with cuDNN disabled, or for mixed devices or dtypes.
   * PyTorch: `rnn.flatten_parameters()`.
   */
  flattenParameters(): this {
    const weights = this.flatWeights;
    const first = weights[0];
    if (first === undefined || first.device === 'cpu' || !backends.cudnn.enabled) return this;
    const kernelDtypes = ['float16', 'float32', 'float64'];
    if (
      !kernelDtypes.includes(first.dtype) ||
      weights.some((weight) => weight.device !== first.device || weight.dtype !== first.dtype)
    )
      return this;
    aten.call(
      'cudnnFlattenWeights',
      weights,
      this.bias ? 4 : 2,
      this.inputSize,
      this.#cudnnMode,
      this.hiddenSize,
      0,
      this.numLayers,
      this.batchFirst,
      this.bidirectional,
    );
    return this;
  }

  protected override afterMove(): void {
    this.flattenParameters();
  }

  /** PyTorch's default: every weight and bias ~ U(−1/√hidden, 1/√hidden), in registration order. */
  resetParameters(): void {
    const bound = 1 / Math.sqrt(this.hiddenSize);
    for (const weight of this.flatWeights) init.uniform_(weight, -bound, bound);
  }

  protected recurrentOptions() {
    return {
      hasBiases: this.bias,
      numLayers: this.numLayers,
      dropout: this.dropout,
      training: this.isTraining,
      bidirectional: this.bidirectional,
      batchFirst: this.batchFirst,
    };
  }

  override extraRepr(): string {
    const parts = [`${this.inputSize}, ${this.hiddenSize}`];
    if (this.numLayers !== 1) parts.push(`num_layers=${this.numLayers}`);
    if (!this.bias) parts.push('bias=False');
    if (this.batchFirst) parts.push('batch_first=True');
    if (this.dropout !== 0) parts.push(`dropout=${pythonFloat(this.dropout)}`);
    if (this.bidirectional) parts.push(`bidirectional=${pythonBool(true)}`);
    return parts.join(', ');
  }
}

/** Runs `fn` on a batched view of an unbatched `(L, H)` input and squeezes the batch dim back out. */
function withBatch<T extends object>(
  input: Tensor,
  batchFirst: boolean,
  states: (Tensor | undefined)[],
  fn: (input: Tensor, states: (Tensor | undefined)[]) => T,
): T {
  if (input.ndim !== 2) return fn(input, states);
  return tidy(() => {
    const batched = input.unsqueeze(batchFirst ? 0 : 1);
    const result = fn(
      batched,
      states.map((state) => state?.unsqueeze(1)),
    );
    const squeezed: Record<string, Tensor> = {};
    for (const [key, value] of Object.entries(result) as [string, Tensor][]) {
      squeezed[key] = value.squeeze(key === 'output' ? (batchFirst ? 0 : 1) : 1);
    }
    return squeezed as unknown as T;
  });
}

/**
 * Multi-layer gated recurrent unit over whole sequences (libtorch's fused kernel; cuDNN on CUDA).
 * **Shape**: input `(L, N, H_in)` (`(N, L, H_in)` with batchFirst) or unbatched `(L, H_in)`;
 * h0 `(D·numLayers, N, H)`; output `(L, N, D·H)`, hN like h0.
 * @example const { output, hN } = new GRU(16, 32, { batchFirst: true }).forward(x);
 * PyTorch: `nn.GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0, bidirectional=False)`.
 */
export class GRU extends RecurrentBase {
  constructor(inputSize: number, hiddenSize: number, options: RecurrentLayerOptions = {}) {
    super('GRU', 3, inputSize, hiddenSize, options);
  }
  forward(input: Tensor, h0?: Tensor): GruResult {
    return withBatch(input, this.batchFirst, [h0], (batched, [state]) =>
      gru(batched, state, this.flatWeights, this.recurrentOptions()),
    );
  }
}

/**
 * Multi-layer long short-term memory over whole sequences (libtorch's fused kernel; cuDNN on CUDA).
 * **Shape**: as GRU, with a cell state c0/cN beside h0/hN.
 * PyTorch: `nn.LSTM(input_size, hidden_size, ...)`.
 */
export class LSTM extends RecurrentBase {
  constructor(inputSize: number, hiddenSize: number, options: RecurrentLayerOptions = {}) {
    super('LSTM', 4, inputSize, hiddenSize, options);
  }
  forward(input: Tensor, state?: [Tensor, Tensor]): LstmResult {
    return withBatch(input, this.batchFirst, state ?? [undefined, undefined], (batched, [h0, c0]) =>
      lstm(
        batched,
        h0 !== undefined && c0 !== undefined ? [h0, c0] : undefined,
        this.flatWeights,
        this.recurrentOptions(),
      ),
    );
  }
}

abstract class CellBase extends Module<any, any> {
  readonly inputSize: number;
  readonly hiddenSize: number;
  weight_ih: Tensor;
  weight_hh: Tensor;
  bias_ih: Tensor | null;
  bias_hh: Tensor | null;
  protected constructor(
    layer: string,
    gates: number,
    inputSize: number,
    hiddenSize: number,
    options: { bias?: boolean } & FactoryOptions,
  ) {
    super();
    checkOptions(layer, options, ['bias', ...FACTORY_KEYS]);
    const factory = factoryOf(layer, options);
    this.inputSize = positiveInteger(layer, 'inputSize', inputSize);
    this.hiddenSize = positiveInteger(layer, 'hiddenSize', hiddenSize);
    this.weight_ih = new Parameter(empty([gates * hiddenSize, inputSize], factory));
    this.weight_hh = new Parameter(empty([gates * hiddenSize, hiddenSize], factory));
    this.bias_ih = options.bias === false ? null : new Parameter(empty([gates * hiddenSize], factory));
    this.bias_hh = options.bias === false ? null : new Parameter(empty([gates * hiddenSize], factory));
    this.resetParameters();
  }
  resetParameters(): void {
    const bound = 1 / Math.sqrt(this.hiddenSize);
    for (const weight of this.parameters()) init.uniform_(weight, -bound, bound);
  }
  override extraRepr(): string {
    return `${this.inputSize}, ${this.hiddenSize}${this.bias_ih === null ? ', bias=False' : ''}`;
  }
}

/** One GRU step. **Shape**: input `(N, H_in)`, hx `(N, H)` → `(N, H)`. PyTorch: `nn.GRUCell(input_size, hidden_size, bias=True)`. */
export class GRUCell extends CellBase {
  constructor(inputSize: number, hiddenSize: number, options: { bias?: boolean } & FactoryOptions = {}) {
    super('GRUCell', 3, inputSize, hiddenSize, options);
  }
  forward(input: Tensor, hx?: Tensor): Tensor {
    return gruCell(
      input,
      hx,
      this.weight_ih,
      this.weight_hh,
      this.bias_ih ?? undefined,
      this.bias_hh ?? undefined,
    );
  }
}

/** One LSTM step: `{ h, c }`. PyTorch: `nn.LSTMCell(input_size, hidden_size, bias=True)`. */
export class LSTMCell extends CellBase {
  constructor(inputSize: number, hiddenSize: number, options: { bias?: boolean } & FactoryOptions = {}) {
    super('LSTMCell', 4, inputSize, hiddenSize, options);
  }
  forward(input: Tensor, state?: [Tensor, Tensor]) {
    return lstmCell(
      input,
      state,
      this.weight_ih,
      this.weight_hh,
      this.bias_ih ?? undefined,
      this.bias_hh ?? undefined,
    );
  }
}
