import { autogradGrad, cat, FlodlError, invalidArgument, Tensor, tidy, zeros } from '@flodl/tensor-native';
import { noGrad } from './grad-mode.js';

/** Options of `gradcheck`. */
export interface GradcheckOptions {
  /** Finite-difference step. Default 1e-6. */
  eps?: number;
  /** Absolute tolerance. Default 1e-5. */
  atol?: number;
  /** Relative tolerance. Default 1e-3. */
  rtol?: number;
  /** Throw on a mismatch (default) or return false. */
  raiseException?: boolean;
}

type Outputs = Tensor | Tensor[];

function asList(outputs: Outputs): Tensor[] {
  return Array.isArray(outputs) ? outputs : [outputs];
}

/**
 * Checks the gradients libtorch computes for `fn` against central finite differences, in
 * float64: for every input that requires grad and every output element, the analytical
 * Jacobian must match `(f(x + eps) - f(x - eps)) / 2eps` within `atol + rtol * |numerical|`.
 * PyTorch: `torch.autograd.gradcheck`.
 *
 * @example gradcheck((x) => x.sigmoid().mul(x), [randn([3], { dtype: 'float64' }).requiresGrad_()])
 * @throws FlodlError ERR_AUTOGRAD naming the input, the output element and both values on a mismatch
 */
export function gradcheck(
  fn: (...inputs: Tensor[]) => Outputs,
  inputs: Tensor[],
  options: GradcheckOptions = {},
): boolean {
  const { eps = 1e-6, atol = 1e-5, rtol = 1e-3, raiseException = true } = options;
  if (typeof fn !== 'function') throw invalidArgument('gradcheck', 'fn', 'a function', fn);
  if (!Array.isArray(inputs) || !inputs.every((input) => input instanceof Tensor)) {
    throw invalidArgument('gradcheck', 'inputs', 'an array of Tensors', inputs);
  }
  const checked = inputs.map((input, index) => ({ input, index })).filter(({ input }) => input.requiresGrad);
  if (checked.length === 0) {
    throw new FlodlError('ERR_AUTOGRAD', 'no input requires grad', {
      op: 'gradcheck',
      expected: 'at least one input with requiresGrad',
    });
  }
  for (const { input, index } of checked) {
    if (input.dtype !== 'float64') {
      throw new FlodlError('ERR_DTYPE', `inputs[${index}] must be float64 for finite differences`, {
        op: 'gradcheck',
        expected: 'float64',
        got: input.dtype,
      });
    }
  }
  return tidy(() => {
    const outputs = asList(fn(...inputs));
    // Analytical Jacobian, one row per output element: d outputs[o][k] / d inputs.
    const analytical: Tensor[][] = checked.map(() => []);
    for (const output of outputs) {
      const size = output.numel;
      for (let k = 0; k < size; k++) {
        const oneHot = zeros(output.shape, { dtype: output.dtype });
        oneHot.reshape(-1).narrow(0, k, 1).fill_(1);
        const grads = output.requiresGrad
          ? autogradGrad(
              [output],
              checked.map(({ input }) => input),
              { gradOutputs: [oneHot], retainGraph: true, allowUnused: true },
            )
          : checked.map(() => null);
        grads.forEach((grad, j) => {
          analytical[j]!.push(
            grad === null
              ? zeros(checked[j]!.input.shape, { dtype: 'float64' }).reshape(-1)
              : grad.reshape(-1),
          );
        });
      }
    }
    // Numerical Jacobian, by perturbing one input element at a time.
    for (let j = 0; j < checked.length; j++) {
      const { input, index } = checked[j]!;
      const flat = input.data.reshape(-1);
      const rows = analytical[j]!;
      for (let e = 0; e < flat.numel; e++) {
        const element = flat.narrow(0, e, 1);
        const original = element.item() as number;
        const evaluate = (value: number): Tensor => {
          element.fill_(value);
          return noGrad(() =>
            tidy(() => {
              const values = asList(fn(...inputs)).map((output) => output.reshape(-1).to('float64'));
              return cat(values).clone();
            }),
          );
        };
        const plus = evaluate(original + eps);
        const minus = evaluate(original - eps);
        element.fill_(original);
        const numerical = plus.sub(minus).div(2 * eps);
        const analyticalColumn = cat(rows.map((row) => row.narrow(0, e, 1)));
        const tolerance = numerical.abs().mul(rtol).add(atol);
        const difference = analyticalColumn.sub(numerical).abs();
        if (!difference.le(tolerance).all().item()) {
          const worst = difference.sub(tolerance).argmax().item() as number;
          const message = `gradient mismatch for inputs[${index}] element ${e} at output element ${worst}`;
          const details = {
            op: 'gradcheck',
            expected: `numerical ${(numerical.narrow(0, worst, 1).item() as number).toPrecision(8)} (atol ${atol}, rtol ${rtol})`,
            got: `analytical ${(analyticalColumn.narrow(0, worst, 1).item() as number).toPrecision(8)}`,
          };
          if (raiseException) throw new FlodlError('ERR_AUTOGRAD', message, details);
          return false;
        }
      }
    }
    return true;
  });
}
