// Single steps of the recurrent networks (GRU and LSTM cells), for loops written by hand.
import { aten, invalidArgument, type Tensor } from '@flodl/tensor-native';
import {
  checkFloating,
  checkRankAmong,
  checkSameDtype,
  checkShape,
  checkTensor,
  checkTensorOrUndefined,
  shapeError,
} from './arguments.js';

/** What `lstmCell` returns. */
export interface LstmCellResult {
  /** The next hidden state. */
  h: Tensor;
  /** The next cell state. */
  c: Tensor;
}

// Validates a cell's input and weights; returns the shape its states must have.
function checkCell(
  op: string,
  gates: number,
  input: unknown,
  weightIh: unknown,
  weightHh: unknown,
  biases: [unknown, unknown],
): number[] {
  const checkedInput = checkFloating(op, 'input', input);
  checkRankAmong(op, 'input', checkedInput, [2, 1], '(N, H_in) or (H_in)');
  const recurrentWeight = checkTensor(op, 'wHh', weightHh);
  const hidden = recurrentWeight.shape[1] ?? 0;
  if (recurrentWeight.ndim !== 2 || recurrentWeight.shape[0] !== gates * hidden) {
    throw shapeError(op, 'wHh must be (gates·H, H)', `(${gates}·H, H)`, recurrentWeight.shape);
  }
  checkSameDtype(op, 'wHh', recurrentWeight, checkedInput, 'input');
  const inputWeight = checkTensor(op, 'wIh', weightIh);
  checkShape(op, 'wIh', inputWeight, [gates * hidden, checkedInput.shape[checkedInput.ndim - 1]!]);
  checkSameDtype(op, 'wIh', inputWeight, checkedInput, 'input');
  (['bIh', 'bHh'] as const).forEach((name, k) => {
    const bias = checkTensorOrUndefined(op, name, biases[k]);
    if (bias === undefined) return;
    checkShape(op, name, bias, [gates * hidden]);
    checkSameDtype(op, name, bias, checkedInput, 'input');
  });
  return checkedInput.ndim === 2 ? [checkedInput.shape[0]!, hidden] : [hidden];
}

/** @internal A recurrent state: a tensor of `shape` with the input's dtype (shared with recurrent.ts). */
export function checkState(op: string, name: string, value: unknown, shape: number[], input: Tensor): Tensor {
  const state = checkTensor(op, name, value);
  checkShape(op, name, state, shape);
  checkSameDtype(op, name, state, input, 'input');
  return state;
}

/**
 * @internal An LSTM's hidden and cell states, `names` in the messages; undefined when not given
 * (shared with recurrent.ts).
 */
export function checkLstmStates(
  op: string,
  names: readonly [string, string],
  state: unknown,
  shape: number[],
  input: Tensor,
): Tensor[] | undefined {
  if (state === undefined) return undefined;
  if (!Array.isArray(state) || state.length !== 2) {
    throw invalidArgument(op, 'state', `[${names[0]}, ${names[1]}] or undefined`, state);
  }
  return [checkState(op, names[0], state[0], shape, input), checkState(op, names[1], state[1], shape, input)];
}

/**
 * One step of a gated recurrent unit: `r = σ(W_ir x + b_ir + W_hr h + b_hr)`,
 * `z = σ(W_iz x + b_iz + W_hz h + b_hz)`, `n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))`,
 * `h' = (1 - z) ⊙ n + z ⊙ h`.
 *
 * @param input - this step's input
 * @param hx - the hidden state; zeros when undefined
 * @param wIh - input-hidden weights, gate rows r, z, n
 * @param wHh - hidden-hidden weights, gate rows r, z, n
 * @param bIh - input-hidden bias; none when undefined
 * @param bHh - hidden-hidden bias; none when undefined
 * @returns the next hidden state `h'`
 *
 * **Shape**: input `(N, H_in)` or `(H_in)`; hx and output `(N, H)` or `(H)`; wIh `(3H, H_in)`;
 *   wHh `(3H, H)`; bIh, bHh `(3H)`.
 * @throws FlodlError ERR_SHAPE for an input of another rank than 1 or 2, or a weight or state of the
 *   wrong shape; ERR_DTYPE for an integer input, or weights or state of another dtype
 * @example
 * ```ts
 * let h = zeros([batch, hidden]);
 * for (const x of steps) h = gruCell(x, h, wIh, wHh, bIh, bHh);
 * ```
 * @see PyTorch `torch.gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh)`, what `torch.nn.GRUCell.forward` calls
 */
export function gruCell(
  input: Tensor,
  hx: Tensor | undefined,
  wIh: Tensor,
  wHh: Tensor,
  bIh?: Tensor,
  bHh?: Tensor,
): Tensor {
  const stateShape = checkCell('gruCell', 3, input, wIh, wHh, [bIh, bHh]);
  const state = hx === undefined ? undefined : checkState('gruCell', 'hx', hx, stateShape, input);
  return aten.call('gruCell', input, state, wIh, wHh, bIh, bHh);
}

/**
 * One step of a long short-term memory:
 * `i, f, g, o = σ, σ, tanh, σ (W_i· x + b_i· + W_h· h + b_h·)`, `c' = f ⊙ c + i ⊙ g`,
 * `h' = o ⊙ tanh(c')`.
 *
 * @param input - this step's input
 * @param state - the hidden and cell states `[hx, cx]`; zeros when undefined
 * @param wIh - input-hidden weights, gate rows i, f, g, o
 * @param wHh - hidden-hidden weights, gate rows i, f, g, o
 * @param bIh - input-hidden bias; none when undefined
 * @param bHh - hidden-hidden bias; none when undefined
 * @returns the next states `{ h, c }`
 *
 * **Shape**: input `(N, H_in)` or `(H_in)`; hx, cx, h and c `(N, H)` or `(H)`; wIh `(4H, H_in)`;
 *   wHh `(4H, H)`; bIh, bHh `(4H)`.
 * @throws FlodlError ERR_SHAPE for an input of another rank than 1 or 2, or a weight or state of the
 *   wrong shape; ERR_DTYPE for an integer input, or weights or states of another dtype;
 *   ERR_INVALID_ARGUMENT for a state that is not `[hx, cx]`
 * @example
 * ```ts
 * let state: [Tensor, Tensor] = [zeros([batch, hidden]), zeros([batch, hidden])];
 * for (const x of steps) {
 *   const { h, c } = lstmCell(x, state, wIh, wHh, bIh, bHh);
 *   state = [h, c];
 * }
 * ```
 * @see PyTorch `torch.lstm_cell(input, (hx, cx), w_ih, w_hh, b_ih, b_hh)`, what `torch.nn.LSTMCell.forward` calls
 */
export function lstmCell(
  input: Tensor,
  state: readonly [Tensor, Tensor] | undefined,
  wIh: Tensor,
  wHh: Tensor,
  bIh?: Tensor,
  bHh?: Tensor,
): LstmCellResult {
  const stateShape = checkCell('lstmCell', 4, input, wIh, wHh, [bIh, bHh]);
  const states = checkLstmStates('lstmCell', ['hx', 'cx'], state, stateShape, input);
  const [h, c] = aten.call('lstmCell', input, states, wIh, wHh, bIh, bHh);
  return { h, c };
}
