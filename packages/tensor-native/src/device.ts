import { FlodlError, invalidArgument } from './errors.js';
import { cudaDeviceCount } from './internal/cuda-runtime.js';

/** Where a tensor lives: `'cpu'`, `'cuda'` (device 0) or `'cuda:N'`. */
export type Device = 'cpu' | 'cuda' | `cuda:${number}`;

const CUDA_PATTERN = /^cuda(?::(\d{1,3}))?$/;

/** Parses a device into its native code: -1 for the CPU, N for cuda:N. */
export function deviceCode(op: string, value: unknown, name = 'device'): number {
  if (value === 'cpu') return -1;
  if (typeof value === 'string') {
    const match = CUDA_PATTERN.exec(value);
    if (match) return match[1] === undefined ? 0 : Number(match[1]);
  }
  throw invalidArgument(op, name, "'cpu', 'cuda' or 'cuda:N'", value);
}

/** The canonical name of a native device code. */
export function deviceName(code: number): Device {
  return code < 0 ? 'cpu' : `cuda:${code}`;
}

/** Normalises `'cuda'` to `'cuda:0'`; validates the spelling. */
export function normalizeDevice(op: string, value: unknown): Device {
  return deviceName(deviceCode(op, value));
}

let defaultCode = -1;

/**
 * Sets the device that factories (`zeros`, `randn`, `Tensor.from`, …) use when their options
 * name none, and that layers create their parameters on. Process-wide (per worker thread).
 *
 * @example
 * ```ts
 * setDefaultDevice('cuda');
 * const w = randn([4, 4]); // on cuda:0
 * ```
 * PyTorch: `torch.set_default_device('cuda')`.
 * @throws FlodlError ERR_INVALID_ARGUMENT for a malformed device
 * @throws FlodlError ERR_DEVICE when the CUDA device does not exist here
 */
export function setDefaultDevice(device: Device): void {
  const code = deviceCode('setDefaultDevice', device);
  if (code >= 0) {
    const count = cudaDeviceCount();
    if (code >= count) {
      throw new FlodlError(
        'ERR_DEVICE',
        count === 0 ? 'CUDA is not available' : `cuda:${code} does not exist`,
        {
          op: 'setDefaultDevice',
          expected: count === 0 ? "'cpu' (no CUDA device is visible)" : `a device in [0, ${count - 1}]`,
          got: String(device),
        },
      );
    }
  }
  defaultCode = code;
}

/** The device factories use when none is given: `'cpu'` unless {@link setDefaultDevice} changed it. PyTorch: `torch.get_default_device()`. */
export function getDefaultDevice(): Device {
  return deviceName(defaultCode);
}

/** Native code of a factory's device option: the default device when unset. */
export function optionDeviceCode(op: string, value: unknown): number {
  return value === undefined ? defaultCode : deviceCode(op, value);
}
