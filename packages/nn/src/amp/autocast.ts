import {
  type Device,
  type DType,
  FlodlError,
  invalidArgument,
  runWithAutocast,
  unknownOptionError,
} from '@flodl/tensor-native';

/** Options of `autocast`. */
export interface AutocastOptions {
  /** Which ops autocast: 'cpu' (default) or 'cuda' ('cuda:N' counts as 'cuda'). */
  device?: Device;
  /** Turn it off for a region inside an autocast region. Default true. */
  enabled?: boolean;
}

/**
 * Runs `fn` under libtorch's automatic mixed precision: eligible ops (matmul, conv, linear, …)
 * run in `dtype`, precision-sensitive ones (softmax, losses, reductions) stay in float32.
 * bfloat16 on the CPU; float16 or bfloat16 on CUDA. Nestable and exception-safe.
 *
 * @example const loss = autocast('bfloat16', () => criterion(model.forward(x), y));
 * @throws FlodlError ERR_DTYPE for a dtype autocast does not support on that device
 * PyTorch: `with torch.autocast(device_type, dtype):`.
 */
export function autocast<T>(dtype: DType, fn: () => T, options: AutocastOptions = {}): T {
  for (const key of Object.keys(options)) {
    if (key !== 'device' && key !== 'enabled')
      throw unknownOptionError('autocast', key, ['device', 'enabled']);
  }
  const device = options.device ?? 'cpu';
  const deviceType =
    device === 'cpu' ? 'cpu' : typeof device === 'string' && device.startsWith('cuda') ? 'cuda' : null;
  if (deviceType === null) throw invalidArgument('autocast', 'device', "'cpu', 'cuda' or 'cuda:N'", device);
  const allowed: DType[] = deviceType === 'cpu' ? ['bfloat16'] : ['float16', 'bfloat16'];
  if (!allowed.includes(dtype)) {
    throw new FlodlError('ERR_DTYPE', `autocast on ${deviceType} does not support ${dtype}`, {
      op: 'autocast',
      expected: allowed.join(' or '),
      got: String(dtype),
    });
  }
  if (typeof fn !== 'function') throw invalidArgument('autocast', 'fn', 'a function', fn);
  return runWithAutocast(deviceType, dtype, options.enabled !== false, fn);
}
