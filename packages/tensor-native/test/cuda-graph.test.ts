import { describe, expect, it } from 'vitest';
import {
  CudaGraph,
  cuda,
  isCurrentStreamCapturing,
  keep,
  liveTensorCount,
  ones,
  randn,
  tidy,
  zeros,
} from '../src/index.js';

const code = (code: string) => expect.objectContaining({ code });

describe('CUDA graphs', () => {
  it.skipIf(cuda.isAvailable())('refuse clearly without CUDA', () => {
    expect(() => new CudaGraph()).toThrowError(code('ERR_DEVICE'));
    expect(isCurrentStreamCapturing()).toBe(false);
  });

  it.skipIf(!cuda.isAvailable())('replay the captured work on new input, with one launch', () =>
    tidy(() => {
      const x = keep(zeros([256], { device: 'cuda' }));
      const graph = new CudaGraph();
      expect(() => graph.replay()).toThrowError(code('ERR_CUDA_GRAPH'));
      const seen: boolean[] = [];
      const y = graph.capture(() => {
        seen.push(isCurrentStreamCapturing());
        return keep(x.mul(2).add(1).relu());
      });
      expect(seen).toEqual([true]);
      expect(isCurrentStreamCapturing()).toBe(false);
      expect(graph.captured).toBe(true);
      for (let round = 0; round < 5; round++) {
        const input = randn([256], { device: 'cuda' });
        x.copy_(input);
        graph.replay();
        expect(y.allclose(input.mul(2).add(1).relu(), { rtol: 0, atol: 0 })).toBe(true);
      }
      expect(() => graph.capture(() => x.add(1))).toThrowError(code('ERR_CUDA_GRAPH'));
      graph.dispose();
      expect(() => graph.replay()).toThrowError(code('ERR_DISPOSED'));
      x.dispose();
      y.dispose();
    }),
  );

  it.skipIf(!cuda.isAvailable())(
    'refuse a host synchronisation inside the capture, and leave CUDA usable',
    () => {
      const before = liveTensorCount();
      const x = ones([8], { device: 'cuda' });
      const graph = new CudaGraph();
      expect(() => graph.capture(() => x.sum().item())).toThrowError(code('ERR_CUDA_GRAPH'));
      expect(graph.captured).toBe(false);
      expect(isCurrentStreamCapturing()).toBe(false);
      // The device still works, and the same graph can capture something valid afterwards.
      expect(tidy(() => x.sum().item())).toBe(8);
      // Temporaries of a capture die with it; what it returns lives on.
      const doubled = graph.capture(() => x.mul(2).add(0));
      graph.replay();
      expect(tidy(() => doubled.sum().item())).toBe(16);
      // (Some GPU work in it, so the native side does not warn about an empty graph.)
      expect(() =>
        new CudaGraph().capture(() => {
          x.add(1);
          return Promise.resolve(1) as never;
        }),
      ).toThrowError(code('ERR_INVALID_ARGUMENT'));
      graph.dispose();
      doubled.dispose();
      x.dispose();
      expect(liveTensorCount()).toBe(before);
    },
  );

  it.skipIf(!cuda.isAvailable())('share one memory pool between graphs', () =>
    tidy(() => {
      const x = keep(randn([1024], { device: 'cuda' }));
      const first = new CudaGraph();
      const a = first.capture(() => keep(x.add(1)));
      const second = new CudaGraph();
      const b = second.capture(() => keep(a.mul(3)), { pool: first });
      x.copy_(ones([1024], { device: 'cuda' }));
      first.replay();
      second.replay();
      expect(b.sum().item()).toBe(6 * 1024);
      expect(() => new CudaGraph().capture(() => 0, { pool: new CudaGraph() })).toThrowError(
        code('ERR_CUDA_GRAPH'),
      );
      expect(() => new CudaGraph().capture(() => 0, { captureErrorMode: 'loose' as never })).toThrowError(
        code('ERR_INVALID_ARGUMENT'),
      );
      for (const graph of [first, second]) graph.dispose();
      for (const tensor of [x, a, b]) tensor.dispose();
    }),
  );
});
