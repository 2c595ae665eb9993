import { describe, expect, it } from 'vitest';
import { CudaEvent, CudaStream, cuda, ones, tidy, withStream } from '../src/index.js';

describe('CUDA streams and events', () => {
  it.skipIf(cuda.isAvailable())('refuse clearly without CUDA', () => {
    expect(() => new CudaStream()).toThrowError(expect.objectContaining({ code: 'ERR_DEVICE' }));
    expect(() => new CudaEvent()).toThrowError(expect.objectContaining({ code: 'ERR_DEVICE' }));
  });

  it.skipIf(!cuda.isAvailable())('order a copy on a side stream before compute, and time it', () =>
    tidy(() => {
      const side = new CudaStream();
      const copied = new CudaEvent();
      const start = new CudaEvent({ enableTiming: true });
      const end = new CudaEvent({ enableTiming: true });
      const host = ones([1 << 20]).pinMemory();
      const onDevice = withStream(side, () => {
        start.record(side);
        const moved = host.to({ device: 'cuda', nonBlocking: true });
        end.record(side);
        copied.record(side);
        return moved;
      });
      copied.wait();
      onDevice.recordStream(CudaStream.current());
      expect(onDevice.sum().item()).toBe(1 << 20);
      end.synchronize();
      expect(start.elapsedTime(end)).toBeGreaterThanOrEqual(0);
      expect(side.query()).toBe(true);
      for (const event of [copied, start, end]) event.dispose();
      expect(() => copied.query()).toThrowError(expect.objectContaining({ code: 'ERR_DISPOSED' }));
    }),
  );
});
