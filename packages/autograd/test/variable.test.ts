import { arange, keep, liveTensorCount, ones, randn, Tensor, tidy, zeros } from '@flodl/tensor-native';
import { caught } from '@flodl/testing';
import { describe, expect, it } from 'vitest';
import { enableGrad, grad, gradcheck, isGradEnabled, noGrad, Variable } from '../src/index.js';

const f64 = (data: number[], shape?: number[]) => Tensor.from(data, shape, { dtype: 'float64' });

describe('Variable', () => {
  it('is a Tensor leaf sharing memory with its source, flags untouched', () =>
    tidy(() => {
      const source = f64([1, 2, 3]);
      const variable = new Variable(source, true);
      expect(variable).toBeInstanceOf(Tensor);
      expect(variable instanceof Variable).toBe(true);
      expect(variable.requiresGrad).toBe(true);
      expect(variable.isLeaf).toBe(true);
      expect(source.requiresGrad).toBe(false);
      expect(variable.sharesMemoryWith(source)).toBe(true);
      expect(variable.grad).toBeNull();
      expect(String(variable)).toBe('tensor([1., 2., 3.], dtype=torch.float64, requires_grad=True)');
    }));

  it('computes gradients with libtorch’s engine and accumulates them', () =>
    tidy(() => {
      const x = new Variable(f64([1, 2, 3]), true);
      const y = x.mul(x).sum(); // d/dx = 2x
      expect(y.gradFn).toBe('SumBackward0');
      expect(String(y)).toBe('tensor(14., dtype=torch.float64, grad_fn=<SumBackward0>)');
      y.backward();
      expect(x.grad!.toArray()).toEqual([2, 4, 6]);
      x.mul(3).sum().backward();
      expect(x.grad!.toArray()).toEqual([5, 7, 9]);
      x.zeroGrad();
      expect(x.grad).toBeNull();
    }));

  it('releases the graph after backward and explains a second backward', () =>
    tidy(() => {
      const x = new Variable(f64([1, 2]), true);
      const loss = x.exp().sum();
      loss.backward();
      expect(loss.gradFn).toBeNull();
      const error = caught(() => loss.backward());
      expect(error.code).toBe('ERR_AUTOGRAD');
      expect(error.message).toContain('graph was already released');
    }));

  it('runs backward twice through a retained graph', () =>
    tidy(() => {
      const x = new Variable(f64([1, 2]), true);
      const y = x.square().sum();
      y.backward(undefined, { retainGraph: true });
      y.backward();
      expect(x.grad!.toArray()).toEqual([4, 8]);
    }));

  it('needs a gradOutput for non-scalar outputs', () =>
    tidy(() => {
      const x = new Variable(f64([1, 2, 3]), true);
      const y = x.mul(2);
      expect(caught(() => y.backward()).code).toBe('ERR_AUTOGRAD');
      expect(caught(() => y.backward(ones([2], { dtype: 'float64' }))).code).toBe('ERR_SHAPE');
      y.backward(f64([1, 0, 1]));
      expect(x.grad!.toArray()).toEqual([2, 0, 2]);
    }));

  it('refuses gradients for integer tensors and in-place changes of leaves', () =>
    tidy(() => {
      expect(caught(() => new Variable(arange(3), true)).code).toBe('ERR_AUTOGRAD');
      const leaf = new Variable(f64([1, 2]), true);
      const error = caught(() => leaf.add_(1));
      expect(error.code).toBe('ERR_AUTOGRAD');
      expect(error.nativeMessage).toMatch(/leaf Variable that requires grad/);
      expect(caught(() => (Variable as unknown as (t: Tensor) => Tensor)(leaf)).code).toBe(
        'ERR_INVALID_ARGUMENT',
      );
    }));

  it('detects a tensor modified after it was saved for backward', () =>
    tidy(() => {
      const x = new Variable(f64([1, 2]), true);
      const y = x.mul(1);
      const z = y.sin(); // sin saves its input for backward
      y.mul_(2);
      expect(caught(() => z.sum().backward()).code).toBe('ERR_AUTOGRAD');
    }));

  it('setGrad checks shape, dtype and device', () =>
    tidy(() => {
      const x = new Variable(f64([1, 2]), true);
      expect(caught(() => x.setGrad(ones([3], { dtype: 'float64' }))).code).toBe('ERR_SHAPE');
      expect(caught(() => x.setGrad(ones([2]))).code).toBe('ERR_DTYPE');
      x.setGrad(ones([2], { dtype: 'float64' }));
      expect(x.grad!.toArray()).toEqual([1, 1]);
    }));

  it('gives non-leaf gradients through retainGrad and autograd.grad', () =>
    tidy(() => {
      const x = new Variable(f64([1, 2]), true);
      const y = x.mul(3);
      y.retainGrad();
      const loss = y.square().sum();
      const [dx] = grad(loss, x, { retainGraph: true });
      expect(dx!.toArray()).toEqual([18, 36]);
      expect(x.grad).toBeNull();
      // As in PyTorch, a retained gradient also collects what autograd.grad passed through.
      expect(y.grad!.toArray()).toEqual([6, 12]);
      loss.backward();
      expect(y.grad!.toArray()).toEqual([12, 24]);
      expect(x.grad!.toArray()).toEqual([18, 36]);
    }));

  it('detach and .data leave the graph', () =>
    tidy(() => {
      const x = new Variable(f64([1, 2]), true);
      expect(x.mul(2).detach().requiresGrad).toBe(false);
      expect(x.data.requiresGrad).toBe(false);
      expect(x.data.sharesMemoryWith(x)).toBe(true);
    }));
});

describe('grad mode', () => {
  it('noGrad turns recording off, nests, and restores the mode on throw', () =>
    tidy(() => {
      const x = new Variable(f64([1]), true);
      expect(isGradEnabled()).toBe(true);
      const inside = noGrad(() => {
        const a = x.mul(2);
        const b = enableGrad(() => x.mul(2));
        const c = noGrad(() => x.mul(2));
        return [a.requiresGrad, b.requiresGrad, c.requiresGrad, isGradEnabled()];
      });
      expect(inside).toEqual([false, true, false, false]);
      expect(isGradEnabled()).toBe(true);
      expect(() =>
        noGrad(() => {
          throw new Error('boom');
        }),
      ).toThrow('boom');
      expect(isGradEnabled()).toBe(true);
      expect(caught(() => noGrad((async () => 1) as unknown as () => number)).code).toBe('ERR_AUTOGRAD');
      expect(isGradEnabled()).toBe(true);
    }));
});

describe('gradcheck', () => {
  it('accepts libtorch’s gradients', () =>
    tidy(() => {
      const x = new Variable(randn([4], { dtype: 'float64' }), true);
      const w = new Variable(randn([4, 3], { dtype: 'float64' }), true);
      expect(gradcheck((a, b) => a.unsqueeze(0).matmul(b).tanh().mul(a.sum()), [x, w])).toBe(true);
      expect(gradcheck((a) => [a.sigmoid(), a.exp().cumsum(0)], [x])).toBe(true);
    }));

  it('catches a wrong gradient and says where', () =>
    tidy(() => {
      const x = new Variable(f64([0.5, -1.5]), true);
      // `.data` hides the first factor from autograd: d/dx is x, not 2x.
      const broken = (a: Tensor) => a.data.mul(a);
      expect(gradcheck(broken, [x], { raiseException: false })).toBe(false);
      const error = caught(() => gradcheck(broken, [x]));
      expect(error.code).toBe('ERR_AUTOGRAD');
      expect(error.message).toContain('inputs[0] element 0');
    }));

  it('asks for float64 inputs that require grad', () =>
    tidy(() => {
      expect(caught(() => gradcheck((a) => a, [new Variable(ones([2]), true)])).code).toBe('ERR_DTYPE');
      expect(caught(() => gradcheck((a) => a, [ones([2], { dtype: 'float64' })])).code).toBe('ERR_AUTOGRAD');
    }));
});

describe('memory', () => {
  it('a 10k-step training loop keeps live tensors and RSS flat', () => {
    const before = liveTensorCount();
    const weights = keep(tidy(() => new Variable(randn([32, 16]).mul(0.1), true)));
    const inputs = keep(randn([64, 32]));
    const targets = keep(zeros([64, 16]));
    const step = () =>
      tidy(() => {
        const loss = inputs.matmul(weights).tanh().sub(targets).square().mean();
        loss.backward();
        noGrad(() => weights.sub_(weights.grad!.mul(0.01)));
        weights.zeroGrad();
      });
    for (let k = 0; k < 500; k++) step();
    const rssWarm = process.memoryUsage.rss();
    const liveWarm = liveTensorCount();
    for (let k = 0; k < 10_000; k++) step();
    expect(liveTensorCount()).toBe(liveWarm);
    expect(process.memoryUsage.rss() - rssWarm).toBeLessThan(32 * 1024 * 1024);
    for (const tensor of [weights, inputs, targets]) tensor.dispose();
    expect(liveTensorCount()).toBe(before);
  });
});
