import { invalidArgument } from './errors.js';

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
