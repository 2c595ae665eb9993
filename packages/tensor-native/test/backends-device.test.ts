import { afterEach, describe, expect, it } from 'vitest';
import {
  backends,
  cuda,
  getDefaultDevice,
  ones,
  randn,
  setDefaultDevice,
  Tensor,
  tidy,
  zerosLike,
} from '../src/index.js';

describe('backends', () => {
  it('reads and writes every switch, and restores it', () => {
    const switches = [
      [backends.cudnn, 'enabled'],
      [backends.cudnn, 'benchmark'],
      [backends.cudnn, 'deterministic'],
      [backends.cudnn, 'allowTF32'],
      [backends.cuda.matmul, 'allowTF32'],
      [backends, 'deterministicAlgorithms'],
    ] as const;
    for (const [owner, key] of switches) {
      const target = owner as unknown as Record<string, boolean>;
      const before = target[key];
      expect(typeof before).toBe('boolean');
      target[key] = !before;
      expect(target[key]).toBe(!before);
      target[key] = before as boolean;
      expect(target[key]).toBe(before);
    }
  });

  it('has PyTorch defaults for the cuDNN switches', () => {
    expect(backends.cudnn.enabled).toBe(true);
    expect(backends.cudnn.benchmark).toBe(false);
    expect(backends.cudnn.deterministic).toBe(false);
  });

  it('refuses a non-boolean and unknown switches', () => {
    expect(() => {
      (backends.cudnn as unknown as Record<string, unknown>).benchmark = 1;
    }).toThrowError(/backends\.cudnn\.benchmark.*a boolean/s);
    expect(() => {
      (backends.cudnn as unknown as Record<string, unknown>).fastest = true;
    }).toThrow(TypeError);
  });
});

describe('default device', () => {
  const initial = getDefaultDevice();
  afterEach(() => setDefaultDevice(initial));

  it('is where factories put tensors that name no device', () =>
    tidy(() => {
      setDefaultDevice('cpu');
      expect(getDefaultDevice()).toBe('cpu');
      expect(ones([2]).device).toBe('cpu');
      expect(Tensor.from([1, 2]).device).toBe('cpu');
      // An explicit device and *Like factories are not affected.
      expect(randn([2], { device: 'cpu' }).device).toBe('cpu');
      expect(zerosLike(ones([3])).device).toBe('cpu');
    }));

  it.skipIf(cuda.isAvailable())('refuses CUDA where there is none, and stays unchanged', () => {
    expect(() => setDefaultDevice('cuda')).toThrowError(
      expect.objectContaining({
        code: 'ERR_DEVICE',
        message: expect.stringContaining('CUDA is not available'),
      }),
    );
    expect(getDefaultDevice()).toBe(initial);
  });

  it.skipIf(!cuda.isAvailable())('moves factories onto CUDA', () =>
    tidy(() => {
      setDefaultDevice('cuda');
      expect(getDefaultDevice()).toBe('cuda:0');
      expect(ones([2]).device).toBe('cuda:0');
      expect(Tensor.from([[1, 2]]).device).toBe('cuda:0');
      expect(ones([2], { device: 'cpu' }).device).toBe('cpu');
      // Printing names the device only when it is not the default, as PyTorch does.
      expect(String(ones([1]))).toBe('tensor([1.])');
      expect(String(ones([1], { device: 'cpu' }))).toBe("tensor([1.], device='cpu')");
    }),
  );

  it('validates the spelling', () => {
    expect(() => setDefaultDevice('gpu' as never)).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_ARGUMENT' }),
    );
  });
});
