// Reading the PyTorch goldens of scripts/make-goldens-layers.py and comparing tensors to them.
import { type DType, getDefaultDevice, setDefaultDevice, Tensor } from '@flodl/tensor-native';
import {
  fixtureData,
  forDevice,
  expectClose as kitExpectClose,
  readFixture as kitReadFixture,
  type Tolerance,
} from '@flodl/testing';
import { expect } from 'vitest';

export { forDevice, onDevice, type Tolerance } from '@flodl/testing';

/** A tensor as the golden script writes it. */
export interface Encoded {
  shape: number[];
  dtype: DType;
  /** Row-major values (JSON has no infinities: the scripts write them as 'inf', '-inf', 'nan'; readFixture turns them back). */
  data: number[];
}

/** An input: a tensor (with whether it takes gradients), a reference to an earlier input, or structure. */
export type EncodedValue =
  | { tensor: Encoded; grad: boolean }
  | { ref: number }
  | EncodedValue[]
  | { [key: string]: EncodedValue }
  | number
  | string
  | boolean
  | null;

/** float64 forward and backward against PyTorch's float64. */
export const FLOAT64: Tolerance = { atol: 1e-10, rtol: 1e-9 };

/** The device the cases run on: 'cpu', or CUDA in the device tier (`pnpm test:gpu`, test/device-setup.ts). */
export const testDevice = getDefaultDevice();

/**
 * Runs `make` with the CPU as the default device: seeded draws (default initialisation) then
 * come from the CPU generator, like PyTorch's goldens; CUDA's generator draws other numbers.
 */
export function onHost<T>(make: () => T): T {
  const device = getDefaultDevice();
  setDefaultDevice('cpu');
  try {
    return make();
  } finally {
    setDefaultDevice(device);
  }
}

/** Reads test/fixtures/`name` (the encoded non-finite numbers of tensors' data decoded). */
export function readFixture<T>(name: string): T {
  return kitReadFixture<T>(new URL(`./fixtures/${name}`, import.meta.url));
}

/** The tensor an encoding describes (float32 values come back exactly: they were written with 9 digits). */
export function decodeTensor(encoded: Encoded): Tensor {
  return Tensor.from(fixtureData(encoded), encoded.shape, { dtype: encoded.dtype });
}

function isTensorValue(value: object): value is { tensor: Encoded; grad: boolean } {
  return 'tensor' in value;
}

function isReference(value: object): value is { ref: number } {
  return 'ref' in value;
}

/**
 * Decodes forward inputs; floating tensors marked `grad` become leaves that require grad and are
 * listed in `leaves` under their position (`0`, `1.0`, `3.attnMask`), as the script names them.
 */
export function decodeInputs(values: EncodedValue[]): { inputs: unknown[]; leaves: Map<string, Tensor> } {
  const leaves = new Map<string, Tensor>();
  const walk = (value: EncodedValue, path: string): unknown => {
    if (value === null) return undefined;
    if (Array.isArray(value)) return value.map((item, k) => walk(item, `${path}.${k}`));
    if (typeof value !== 'object') return value;
    if (isTensorValue(value)) {
      const tensor = decodeTensor(value.tensor);
      if (value.grad) {
        tensor.requiresGrad_(true);
        leaves.set(path, tensor);
      }
      return tensor;
    }
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, walk(item, `${path}.${key}`)]),
    );
  };
  const inputs: unknown[] = [];
  values.forEach((value, k) => {
    inputs.push(
      value !== null && typeof value === 'object' && isReference(value)
        ? inputs[value.ref]
        : walk(value, String(k)),
    );
  });
  return { inputs, leaves };
}

/** Decodes a constructor argument or option object (tensors become tensors, nulls stay null). */
export function decodeOptions(value: EncodedValue): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) return value.map(decodeOptions);
  if (isTensorValue(value)) return decodeTensor(value.tensor);
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, decodeOptions(item)]));
}

/** A record of state_dict name → tensor. */
export function decodeRecord(entries: [string, Encoded][]): Record<string, Tensor> {
  return Object.fromEntries(entries.map(([key, encoded]) => [key, decodeTensor(encoded)]));
}

/** Checks shape and dtype, then every value within the tolerance (widened on the device tier). */
export function expectClose(
  actual: Tensor | undefined,
  expected: Encoded,
  tolerance: Tolerance,
  label: string,
): void {
  expect(actual, `${label}: missing`).toBeInstanceOf(Tensor);
  kitExpectClose(actual, expected, forDevice(tolerance), label);
}

/** Bit-for-bit equality (init values, integer results). */
export function expectExact(actual: Tensor | undefined, expected: Encoded, label: string): void {
  expectClose(actual, expected, { atol: 0, rtol: 0 }, label);
}
