import { keep, liveTensorCount, Tensor, tidy } from '@flodl/tensor-native';
import { readFixture } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { noGrad, Variable } from '../src/index.js';

interface Encoded {
  shape: number[];
  data: number[];
}
interface MlpFixture {
  learningRate: number;
  inputs: Encoded;
  targets: Encoded;
  initial: Record<'w1' | 'b1' | 'w2' | 'b2', Encoded>;
  final: Record<'w1' | 'b1' | 'w2' | 'b2', Encoded>;
  losses: number[];
}

const fixture = readFixture(new URL('./fixtures/mlp.json', import.meta.url)) as MlpFixture;
const load = (encoded: Encoded) => Tensor.from(Float32Array.from(encoded.data), encoded.shape);

describe('a two-layer MLP trained by hand', () => {
  it('follows PyTorch’s loss curve for 200 SGD steps within 1e-5 relative', () => {
    const before = liveTensorCount();
    const inputs = keep(load(fixture.inputs));
    const targets = keep(load(fixture.targets));
    const parameters = (['w1', 'b1', 'w2', 'b2'] as const).map((name) =>
      keep(tidy(() => new Variable(load(fixture.initial[name]), true))),
    );
    const [w1, b1, w2, b2] = parameters as [Tensor, Tensor, Tensor, Tensor];
    const losses: number[] = [];
    for (let step = 0; step < 200; step++) {
      tidy(() => {
        const hidden = inputs.matmul(w1.t()).add(b1).relu();
        const logits = hidden.matmul(w2.t()).add(b2);
        const loss = logits.sub(targets).square().mean();
        losses.push(loss.item() as number);
        loss.backward();
        noGrad(() => {
          for (const parameter of parameters) {
            parameter.sub_(parameter.grad!.mul(fixture.learningRate));
            parameter.zeroGrad();
          }
        });
      });
    }
    losses.forEach((loss, step) => {
      const expected = fixture.losses[step]!;
      expect(Math.abs(loss - expected) / Math.abs(expected), `step ${step}`).toBeLessThanOrEqual(1e-5);
    });
    expect(losses[199]!).toBeLessThan(losses[0]! * 0.5);
    (['w1', 'b1', 'w2', 'b2'] as const).forEach((name, k) => {
      const expected = load(fixture.final[name]);
      expect(parameters[k]!.allclose(expected, { rtol: 1e-5, atol: 1e-6 }), name).toBe(true);
      expected.dispose();
    });
    for (const tensor of [inputs, targets, ...parameters]) tensor.dispose();
    expect(liveTensorCount()).toBe(before);
  });
});
