import { crossEntropy } from '@flodl/autograd';
import { type DType, keep, liveTensorCount, setNumThreads, Tensor, tidy } from '@flodl/tensor-native';
import { describe, expect, it } from 'vitest';
import { AdamW, Conv2d, Flatten, Linear, LSTM, MaxPool2d, Module, ReLU, Sequential } from '../src/index.js';
import { readFixture } from './golden.js';

interface Encoded {
  shape: number[];
  dtype: string;
  data: number[];
}
interface TrainingCase {
  initial: Record<string, Encoded>;
  inputs: Encoded;
  labels: Encoded;
  losses: number[];
}
const fixture = readFixture('training.json') as Record<'cnn' | 'lstm', TrainingCase>;

const decode = (encoded: Encoded) =>
  Tensor.from(encoded.data, encoded.shape, { dtype: encoded.dtype as DType });

class SequenceClassifier extends Module {
  lstm = new LSTM(4, 8, { batchFirst: true });
  fc = new Linear(8, 3);
  forward(input: Tensor): Tensor {
    return tidy(() => this.fc.forward(this.lstm.forward(input).output.select(1, -1)));
  }
}

function trainLikePyTorch(model: Module, golden: TrainingCase): number[] {
  model.to('float64');
  tidy(() => {
    const record: Record<string, Tensor> = {};
    for (const [name, encoded] of Object.entries(golden.initial)) record[name] = decode(encoded);
    model.loadStateDict(record);
  });
  const inputs = keep(decode(golden.inputs));
  const labels = keep(decode(golden.labels));
  const optimizer = new AdamW(model.parameters(), { lr: 1e-2, weightDecay: 1e-2 });
  const losses: number[] = [];
  for (let step = 0; step < golden.losses.length; step++) {
    tidy(() => {
      const loss = crossEntropy(model.forward(inputs), labels);
      losses.push(loss.item() as number);
      optimizer.zeroGrad();
      loss.backward();
      optimizer.step();
    });
  }
  optimizer.dispose();
  inputs.dispose();
  labels.dispose();
  return losses;
}

describe('training against PyTorch (AdamW, 100 steps, float64)', () => {
  setNumThreads(1);

  it('a small CNN follows PyTorch’s loss curve', () => {
    const before = liveTensorCount();
    const model = new Sequential(
      new Conv2d(1, 4, 3, { padding: 1 }),
      new ReLU(),
      new MaxPool2d(2),
      new Flatten(),
      new Linear(64, 10),
    );
    const losses = trainLikePyTorch(model, fixture.cnn);
    for (const [step, loss] of losses.entries())
      expect(loss, `step ${step}`).toBeCloseTo(fixture.cnn.losses[step]!, 9);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! / 2);
    model.dispose();
    expect(liveTensorCount()).toBe(before);
  });

  it('an LSTM classifier follows PyTorch’s loss curve', () => {
    const before = liveTensorCount();
    const model = new SequenceClassifier();
    const losses = trainLikePyTorch(model, fixture.lstm);
    for (const [step, loss] of losses.entries())
      expect(loss, `step ${step}`).toBeCloseTo(fixture.lstm.losses[step]!, 9);
    expect(losses.at(-1)!).toBeLessThan(losses[0]! / 2);
    model.dispose();
    expect(liveTensorCount()).toBe(before);
  });
});
