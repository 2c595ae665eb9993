import { type FlodlError, liveTensorCount, ones, randn, Tensor, tidy, zeros } from '@flodl/tensor-native';
import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { Buffer, init, Module, ModuleDict, ModuleList, Parameter, Sequential } from '../src/index.js';

class Affine extends Module {
  weight: Tensor;
  bias: Tensor;
  runningScale: Tensor;
  constructor(inFeatures: number, outFeatures: number) {
    super();
    this.weight = new Parameter(randn([outFeatures, inFeatures]));
    this.bias = new Parameter(zeros([outFeatures]));
    this.runningScale = new Buffer(ones([outFeatures]));
  }
  forward(input: Tensor): Tensor {
    return tidy(() => input.matmul(this.weight.t()).add(this.bias).mul(this.runningScale));
  }
  override extraRepr(): string {
    const [out, inFeatures] = this.weight.shape;
    return `in_features=${inFeatures}, out_features=${out}`;
  }
}

class Tanh extends Module {
  forward(input: Tensor): Tensor {
    return input.tanh();
  }
}

class Net extends Module {
  encoder = new Sequential(new Affine(4, 8), new Tanh(), new Affine(8, 3));
  heads = new ModuleDict({ main: new Affine(3, 2) });
  extra = new ModuleList([new Affine(2, 2)]);
  forward(input: Tensor): Tensor {
    return tidy(() => this.extra.at(0).forward(this.heads.get('main')!.forward(this.encoder.forward(input))));
  }
}

describe('Module', () => {
  it('names parameters and buffers like PyTorch state_dict keys', () => {
    const net = new Net();
    expect([...net.namedParameters()].map(([name]) => name)).toEqual([
      'encoder.0.weight',
      'encoder.0.bias',
      'encoder.2.weight',
      'encoder.2.bias',
      'heads.main.weight',
      'heads.main.bias',
      'extra.0.weight',
      'extra.0.bias',
    ]);
    expect([...net.namedBuffers()].map(([name]) => name)).toEqual([
      'encoder.0.runningScale',
      'encoder.2.runningScale',
      'heads.main.runningScale',
      'extra.0.runningScale',
    ]);
    expect(
      net.parameters().every((parameter) => parameter.requiresGrad && parameter instanceof Parameter),
    ).toBe(true);
    expect(net.buffers().every((buffer) => !buffer.requiresGrad && buffer instanceof Buffer)).toBe(true);
    net.dispose();
  });

  it('prints the module tree like PyTorch', () => {
    const model = new Sequential(new Affine(4, 8), new Tanh());
    expect(String(model)).toBe('Sequential(\n  (0): Affine(in_features=4, out_features=8)\n  (1): Tanh()\n)');
    model.dispose();
  });

  it('propagates train/eval, freezes and clears gradients', () => {
    const net = new Net();
    net.eval();
    expect([...net.modules()].every((module) => !module.isTraining)).toBe(true);
    net.train();
    expect(net.encoder.at(1).isTraining).toBe(true);
    tidy(() =>
      net
        .forward(randn([5, 4]))
        .sum()
        .backward(),
    );
    expect(net.parameters().every((parameter) => parameter.grad !== null)).toBe(true);
    net.zeroGrad(false);
    expect(tidy(() => net.parameters().every((parameter) => parameter.grad!.abs().sum().item() === 0))).toBe(
      true,
    );
    net.zeroGrad();
    expect(net.parameters().every((parameter) => parameter.grad === null)).toBe(true);
    net.freeze();
    expect(net.parameters().some((parameter) => parameter.requiresGrad)).toBe(false);
    net.unfreeze();
    expect(net.parameters().every((parameter) => parameter.requiresGrad)).toBe(true);
    net.dispose();
  });

  it('training is read-only and follows train()/eval() down the tree, as PyTorch’s module.training', () => {
    const net = new Net();
    expect(net.training).toBe(true);
    net.eval();
    expect([...net.modules()].map((module) => module.training)).toEqual([...net.modules()].map(() => false));
    // A child switched on its own reports its own mode; its parent keeps the one it was given.
    net.encoder.train();
    expect([net.training, net.encoder.training, net.encoder.at(0).training, net.heads.training]).toEqual([
      false,
      true,
      true,
      false,
    ]);
    net.train(true);
    expect([...net.modules()].every((module) => module.training && module.isTraining)).toBe(true);
    expect('training' in Object.fromEntries(net.ownEntries())).toBe(false);
    const error = caught(() => {
      (net as unknown as { training: boolean }).training = false;
    }) as FlodlError;
    expect(error.message).toMatchInlineSnapshot(`
      "Net.training: training is read-only
        expected: module.train(mode) or module.eval() to switch modes
        got: an assignment"
    `);
    expect(net.training).toBe(true);
    net.dispose();
  });

  it('to(dtype) converts in place, keeping each tensor’s identity', () => {
    const net = new Net();
    const first = net.parameters()[0]!;
    tidy(() =>
      net
        .forward(randn([2, 4]))
        .sum()
        .backward(),
    );
    net.to('float64');
    expect(tidy(() => first.grad!.dtype)).toBe('float64');
    expect(net.parameters()[0]).toBe(first);
    expect(first.dtype).toBe('float64');
    expect(first.requiresGrad).toBe(true);
    expect(tidy(() => net.forward(randn([2, 4], { dtype: 'float64' })).dtype)).toBe('float64');
    net.dispose();
  });

  it('round-trips its state and reports loaded, missing and unexpected keys', () => {
    const source = new Net();
    const target = new Net();
    const report = tidy(() => target.loadStateDict(source.stateDict()));
    expect(report.missing).toEqual([]);
    expect(report.unexpected).toEqual([]);
    expect(report.loaded).toHaveLength(12);
    tidy(() => {
      const input = randn([3, 4]);
      expect(target.forward(input).allclose(source.forward(input))).toBe(true);
    });
    const partial = tidy(() => {
      const record = source.stateDict();
      delete record['extra.0.weight'];
      record['unknown.weight'] = ones([1]);
      return target.loadStateDict(record, false);
    });
    expect(partial.missing).toEqual(['extra.0.weight']);
    expect(partial.unexpected).toEqual(['unknown.weight']);
    source.dispose();
    target.dispose();
  });

  it('a failing load leaves the module untouched', () => {
    const net = new Net();
    const before = tidy(() => net.parameters()[0]!.clone());
    tidy(() => {
      const record = net.stateDict();
      record['encoder.0.weight'] = zeros([8, 4]);
      record['extra.0.bias'] = zeros([3]);
      const error = (() => {
        try {
          net.loadStateDict(record);
        } catch (caught) {
          return caught as FlodlError;
        }
        return null;
      })();
      expect(error?.code).toBe('ERR_SHAPE');
      expect(error?.message).toContain("'extra.0.bias'");
      expect(net.parameters()[0]!.allclose(before)).toBe(true);
      expect(() => net.loadStateDict({})).toThrowError(expect.objectContaining({ code: 'ERR_CHECKPOINT' }));
    });
    before.dispose();
    net.dispose();
  });

  it('frees everything on dispose', () => {
    const start = liveTensorCount();
    const net = new Net();
    expect(liveTensorCount()).toBeGreaterThan(start);
    net.dispose();
    expect(liveTensorCount()).toBe(start);
  });
});

describe('init', () => {
  it('computes gains and fans as PyTorch', () => {
    expect(init.calculateGain('relu')).toBeCloseTo(Math.SQRT2, 15);
    expect(init.calculateGain('leaky_relu', Math.sqrt(5))).toBeCloseTo(Math.sqrt(2 / 6), 15);
    const weight = zeros([16, 3, 5, 5]);
    expect(init.calculateFanInAndFanOut(weight)).toEqual([75, 400]);
    expect(() => init.calculateFanInAndFanOut(zeros([3]))).toThrowError(
      expect.objectContaining({ code: 'ERR_SHAPE' }),
    );
    weight.dispose();
  });

  it('fills within the documented bounds', () => {
    tidy(() => {
      const weight = zeros([64, 32]);
      init.kaimingUniform_(weight, { a: Math.sqrt(5) });
      const bound = init.calculateGain('leaky_relu', Math.sqrt(5)) * Math.sqrt(3 / 32);
      expect(weight.abs().max().item()).toBeLessThanOrEqual(bound);
      init.truncNormal_(weight, 0, 1, -0.5, 0.5);
      expect(weight.abs().max().item()).toBeLessThanOrEqual(0.5);
      init.orthogonal_(weight);
      const product = weight.t().matmul(weight);
      expect(
        product.allclose(
          Tensor.from(
            Array.from({ length: 32 }, (_, i) => Array.from({ length: 32 }, (_, j) => (i === j ? 1 : 0))),
            undefined,
            { dtype: 'float32' },
          ),
          { atol: 1e-5 },
        ),
      ).toBe(true);
      init.xavierNormal_(weight);
      init.constant_(weight, 0.5);
      expect(weight.mean().item()).toBe(0.5);
    });
  });
});
