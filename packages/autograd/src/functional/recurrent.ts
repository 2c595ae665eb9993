// Fused multi-layer recurrent networks over whole sequences (GRU, LSTM), with PyTorch's flat
// weight list; the single-step cells live in recurrent-cells.ts.
import { aten, FlodlError, invalidArgument, Tensor } from '@flodl/tensor-native';
import {
  checkBoolean,
  checkFloating,
  checkInteger,
  checkNumber,
  checkOptions,
  checkRankAmong,
  checkSameDtype,
  checkShape,
  shapeError,
} from './arguments.js';
import { checkLstmStates, checkState } from './recurrent-cells.js';

export { gruCell, type LstmCellResult, lstmCell } from './recurrent-cells.js';

/** Options of `gru` and `lstm`. */
export interface RecurrentOptions {
  /** `params` hold b_ih and b_hh after w_ih and w_hh of each layer and direction. Default true. */
  hasBiases?: boolean;
  /** Stacked layers, each reading the outputs of the one below. Default 1. */
  numLayers?: number;
  /** The probability of zeroing an output of each layer but the last (in training). Default 0. */
  dropout?: number;
  /**
   * Training mode: applies `dropout`. Default true, as `torch.nn.functional`'s dropout. On CUDA,
   * cuDNN computes no gradients when false (as in PyTorch); use it for inference there.
   */
  training?: boolean;
  /** Run a second direction from the end of the sequence; outputs are concatenated. Default false. */
  bidirectional?: boolean;
  /** Input and output are `(N, L, ·)` rather than `(L, N, ·)` (the states are not). Default false. */
  batchFirst?: boolean;
}

/** What `gru` returns. */
export interface GruResult {
  /** The last layer's hidden state at every step (both directions concatenated). */
  output: Tensor;
  /** Every layer's and direction's hidden state after the last step. */
  hN: Tensor;
}

/** What `lstm` returns. */
export interface LstmResult extends GruResult {
  /** Every layer's and direction's cell state after the last step. */
  cN: Tensor;
}

const OPTION_NAMES: (keyof RecurrentOptions)[] = [
  'hasBiases',
  'numLayers',
  'dropout',
  'training',
  'bidirectional',
  'batchFirst',
];

interface Layout {
  hasBiases: boolean;
  numLayers: number;
  dropout: number;
  training: boolean;
  bidirectional: boolean;
  batchFirst: boolean;
  /** The shape every initial state must have. */
  stateShape: number[];
}

// Validates input, the flat weight list and the options; `gates` is 3 for GRU, 4 for LSTM.
function checkRecurrent(
  op: string,
  gates: number,
  input: unknown,
  params: unknown,
  options: RecurrentOptions | undefined,
): Layout {
  const given = checkOptions(op, options, OPTION_NAMES);
  const hasBiases = checkBoolean(op, 'hasBiases', given.hasBiases, true);
  const numLayers = given.numLayers === undefined ? 1 : checkInteger(op, 'numLayers', given.numLayers, 1);
  const dropout = checkNumber(op, 'dropout', given.dropout, { fallback: 0, min: 0, max: 1 });
  const training = checkBoolean(op, 'training', given.training, true);
  const bidirectional = checkBoolean(op, 'bidirectional', given.bidirectional, false);
  const batchFirst = checkBoolean(op, 'batchFirst', given.batchFirst, false);
  const checkedInput = checkFloating(op, 'input', input);
  checkRankAmong(
    op,
    'input',
    checkedInput,
    [3, 2],
    batchFirst ? '(N, L, H_in) or (L, H_in)' : '(L, N, H_in) or (L, H_in)',
  );
  if (!Array.isArray(params) || !params.every((param) => param instanceof Tensor)) {
    throw invalidArgument(op, 'params', 'an array of Tensors', params);
  }
  const directions = bidirectional ? 2 : 1;
  const perLayer = hasBiases ? 4 : 2;
  if (params.length !== numLayers * directions * perLayer) {
    throw new FlodlError(
      'ERR_INVALID_ARGUMENT',
      `params must hold ${numLayers * directions * perLayer} tensors`,
      {
        op,
        expected: `(w_ih, w_hh${hasBiases ? ', b_ih, b_hh' : ''}) for each of ${numLayers} layer(s) × ${directions} direction(s)`,
        got: `${params.length} tensors`,
      },
    );
  }
  const recurrentWeight = params[1] as Tensor;
  const hidden = recurrentWeight.shape[1] ?? 0;
  if (recurrentWeight.ndim !== 2 || recurrentWeight.shape[0] !== gates * hidden) {
    throw shapeError(
      op,
      'params[1] (w_hh_l0) must be (gates·H, H)',
      `(${gates}·H, H)`,
      recurrentWeight.shape,
    );
  }
  for (let layer = 0; layer < numLayers; layer++) {
    for (let direction = 0; direction < directions; direction++) {
      const first = (layer * directions + direction) * perLayer;
      const suffix = `_l${layer}${direction === 1 ? '_reverse' : ''}`;
      const inputSize = layer === 0 ? checkedInput.shape[checkedInput.ndim - 1]! : directions * hidden;
      const expected: [string, number[]][] = [
        [`w_ih${suffix}`, [gates * hidden, inputSize]],
        [`w_hh${suffix}`, [gates * hidden, hidden]],
        [`b_ih${suffix}`, [gates * hidden]],
        [`b_hh${suffix}`, [gates * hidden]],
      ];
      expected.slice(0, perLayer).forEach(([name, shape], k) => {
        const label = `params[${first + k}] (${name})`;
        checkShape(op, label, params[first + k] as Tensor, shape);
        checkSameDtype(op, label, params[first + k] as Tensor, checkedInput, 'input');
      });
    }
  }
  const layers = numLayers * directions;
  const batched = checkedInput.ndim === 3;
  const stateShape = batched ? [layers, checkedInput.shape[batchFirst ? 0 : 1]!, hidden] : [layers, hidden];
  return { hasBiases, numLayers, dropout, training, bidirectional, batchFirst, stateShape };
}

function flags(layout: Layout): [boolean, number, number, boolean, boolean, boolean] {
  return [
    layout.hasBiases,
    layout.numLayers,
    layout.dropout,
    layout.training,
    layout.bidirectional,
    layout.batchFirst,
  ];
}

/**
 * Multi-layer gated recurrent unit over a sequence, per step and layer:
 * `r = σ(W_ir x + b_ir + W_hr h + b_hr)`, `z = σ(W_iz x + b_iz + W_hz h + b_hz)`,
 * `n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))`, `h' = (1 - z) ⊙ n + z ⊙ h`.
 *
 * @param input - the sequence (features last)
 * @param hx - the initial hidden state; zeros when undefined
 * @param params - PyTorch's flat weight list: for each layer, then each direction,
 *   `w_ih (3H, H_in or D·H)`, `w_hh (3H, H)` and, with `hasBiases`, `b_ih (3H)`, `b_hh (3H)`;
 *   gate rows in the order r, z, n (what `torch.nn.GRU`'s `_flat_weights` holds)
 * @param options - `hasBiases` (true), `numLayers` (1), `dropout` (0), `training` (true),
 *   `bidirectional` (false), `batchFirst` (false)
 *
 * **Shape**: input `(L, N, H_in)`, `(N, L, H_in)` with batchFirst, or `(L, H_in)` unbatched;
 *   hx and hN `(numLayers·D, N, H)` or `(numLayers·D, H)`; output `(L, N, D·H)`, `(N, L, D·H)` or
 *   `(L, D·H)`, where D is 2 when bidirectional, else 1.
 * @throws FlodlError ERR_SHAPE for an input of another rank than 2 or 3, or a weight or state of the
 *   wrong shape; ERR_DTYPE for an integer input, or weights or state of another dtype;
 *   ERR_INVALID_ARGUMENT for a params list of the wrong length or bad options
 * @example
 * ```ts
 * const { output, hN } = gru(sequence, undefined, [wIh, wHh, bIh, bHh], { batchFirst: true });
 * ```
 * @see PyTorch `torch._VF.gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)`,
 *   what `torch.nn.GRU.forward` calls
 */
export function gru(
  input: Tensor,
  hx: Tensor | undefined,
  params: readonly Tensor[],
  options?: RecurrentOptions,
): GruResult {
  const layout = checkRecurrent('gru', 3, input, params, options);
  const state = hx === undefined ? undefined : checkState('gru', 'hx', hx, layout.stateShape, input);
  const [output, hN] = aten.call('gru', input, state, params, ...flags(layout));
  return { output, hN };
}

/**
 * Multi-layer long short-term memory over a sequence, per step and layer:
 * `i, f, g, o = σ, σ, tanh, σ (W_i· x + b_i· + W_h· h + b_h·)`, `c' = f ⊙ c + i ⊙ g`,
 * `h' = o ⊙ tanh(c')`.
 *
 * @param input - the sequence (features last)
 * @param state - the initial hidden and cell states `[h0, c0]`; zeros when undefined
 * @param params - PyTorch's flat weight list: for each layer, then each direction,
 *   `w_ih (4H, H_in or D·H)`, `w_hh (4H, H)` and, with `hasBiases`, `b_ih (4H)`, `b_hh (4H)`;
 *   gate rows in the order i, f, g, o (what `torch.nn.LSTM`'s `_flat_weights` holds)
 * @param options - `hasBiases` (true), `numLayers` (1), `dropout` (0), `training` (true),
 *   `bidirectional` (false), `batchFirst` (false)
 *
 * **Shape**: input `(L, N, H_in)`, `(N, L, H_in)` with batchFirst, or `(L, H_in)` unbatched;
 *   h0, c0, hN and cN `(numLayers·D, N, H)` or `(numLayers·D, H)`; output `(L, N, D·H)`,
 *   `(N, L, D·H)` or `(L, D·H)`, where D is 2 when bidirectional, else 1.
 * @throws FlodlError ERR_SHAPE for an input of another rank than 2 or 3, or a weight or state of the
 *   wrong shape; ERR_DTYPE for an integer input, or weights or states of another dtype;
 *   ERR_INVALID_ARGUMENT for a params list of the wrong length, a state that is not `[h0, c0]`,
 *   or bad options
 * @example
 * ```ts
 * const { output, hN, cN } = lstm(sequence, [h0, c0], params, { numLayers: 2, bidirectional: true });
 * ```
 * @see PyTorch `torch._VF.lstm(input, (h0, c0), params, has_biases, num_layers, dropout, train, bidirectional, batch_first)`,
 *   what `torch.nn.LSTM.forward` calls
 */
export function lstm(
  input: Tensor,
  state: readonly [Tensor, Tensor] | undefined,
  params: readonly Tensor[],
  options?: RecurrentOptions,
): LstmResult {
  const layout = checkRecurrent('lstm', 4, input, params, options);
  const states = checkLstmStates('lstm', ['h0', 'c0'], state, layout.stateShape, input);
  const [output, hN, cN] = aten.call('lstm', input, states, params, ...flags(layout));
  return { output, hN, cN };
}
