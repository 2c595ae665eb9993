import { type DType, invalidArgument } from '@flodl/tensor-native';
import { contributionMass } from '../coordinator/averaging/mass-law.js';

/** A tensor on the host: raw little-endian bytes with its name, dtype, shape and mass. */
export interface HostTensor {
  readonly name: string;
  readonly dtype: DType;
  readonly shape: readonly number[];
  /** The weight these values were pre-scaled by at their source. */
  readonly mass: number;
  readonly bytes: Uint8Array;
}

/** The dtypes the host averaging path accepts. */
export const HOST_AVERAGE_DTYPES: readonly DType[] = ['float32', 'float64'];

const OP = 'MassAccumulator';

/**
 * A contribution's mass: its realized steps in the window shaped by `gamma` (`steps^γ`); zero
 * steps give zero mass (the contribution is excluded).
 */
export function windowMass(steps: number, gamma = 1): number {
  if (!Number.isInteger(steps) || steps < 0)
    throw invalidArgument('windowMass', 'steps', 'an integer >= 0', steps);
  if (!(gamma >= 0 && Number.isFinite(gamma)))
    throw invalidArgument('windowMass', 'gamma', 'a finite number >= 0', gamma);
  return contributionMass(steps, gamma);
}

/** The weight of a float buffer: equal among ranks that stepped, 0 for a rank that did not. */
export function bufferWeight(steps: number): number {
  return steps > 0 ? 1 : 0;
}

/** Reads float bytes as numbers (float32 or float64). */
export function readFloats(dtype: DType, bytes: Uint8Array): Float32Array | Float64Array {
  const copy = bytes.slice();
  if (dtype === 'float32') return new Float32Array(copy.buffer, 0, copy.byteLength / 4);
  if (dtype === 'float64') return new Float64Array(copy.buffer, 0, copy.byteLength / 8);
  throw invalidArgument(OP, 'dtype', HOST_AVERAGE_DTYPES.join(' or '), dtype);
}

/** Writes numbers as float bytes of `dtype` (float32 rounds each value once). */
export function writeFloats(dtype: DType, values: ArrayLike<number>): Uint8Array {
  if (dtype === 'float32') return new Uint8Array(Float32Array.from(values).buffer);
  if (dtype === 'float64') return new Uint8Array(Float64Array.from(values).buffer);
  throw invalidArgument(OP, 'dtype', HOST_AVERAGE_DTYPES.join(' or '), dtype);
}

/** Pre-scales host values by `mass` at their source: the bytes to ship with that mass. */
export function prescaleHost(tensor: Omit<HostTensor, 'mass'>, mass: number): HostTensor {
  const values = readFloats(tensor.dtype, tensor.bytes);
  const scaled = values.map((value) => value * mass);
  return { ...tensor, mass, bytes: new Uint8Array(scaled.buffer) };
}

interface Slot {
  dtype: DType;
  shape: readonly number[];
  sum: Float64Array;
  mass: number;
}

/**
 * The root of a host averaging round (mass law): folds sum pre-scaled tensors and their
 * masses (in float64), and `average()` divides once per tensor by the summed mass of exactly
 * the contributions that were added. Contributions of zero mass add nothing.
 *
 * @example
 * ```ts
 * const root = new MassAccumulator();
 * for (const [rank, tensors] of received) root.add(rank, tensors);
 * const consensus = root.average(); // Σ m·W / Σ m, per tensor
 * ```
 */
export class MassAccumulator {
  readonly #slots = new Map<string, Slot>();
  readonly #accepted: number[] = [];

  /** Ranks whose contributions were added, in order. */
  get accepted(): readonly number[] {
    return this.#accepted;
  }

  /** Σ mass per tensor name. */
  massOf(name: string): number {
    return this.#slots.get(name)?.mass ?? 0;
  }

  /**
   * Folds one contribution in (sums only).
   *
   * @throws FlodlError ERR_INVALID_ARGUMENT for a dtype or shape that disagrees with earlier ones, a bad mass, or a rank added twice
   */
  add(rank: number, tensors: readonly HostTensor[]): void {
    if (this.#accepted.includes(rank))
      throw invalidArgument(`${OP}.add`, 'rank', 'a rank not yet added', rank);
    for (const tensor of tensors) {
      if (!(tensor.mass >= 0 && Number.isFinite(tensor.mass))) {
        throw invalidArgument(`${OP}.add`, `${tensor.name}.mass`, 'a finite number >= 0', tensor.mass);
      }
      const values = readFloats(tensor.dtype, tensor.bytes);
      let slot = this.#slots.get(tensor.name);
      if (!slot) {
        slot = {
          dtype: tensor.dtype,
          shape: [...tensor.shape],
          sum: new Float64Array(values.length),
          mass: 0,
        };
        this.#slots.set(tensor.name, slot);
      } else if (slot.dtype !== tensor.dtype || slot.sum.length !== values.length) {
        throw invalidArgument(
          `${OP}.add`,
          tensor.name,
          `${slot.dtype} [${slot.shape.join(', ')}]`,
          `${tensor.dtype} [${tensor.shape.join(', ')}]`,
        );
      }
      if (tensor.mass === 0) continue;
      for (let index = 0; index < values.length; index += 1)
        slot.sum[index] = (slot.sum[index] as number) + (values[index] as number);
      slot.mass += tensor.mass;
    }
    this.#accepted.push(rank);
  }

  /**
   * The consensus: per tensor Σ(m·W) / Σ m (one division); tensors nobody weighted are left out.
   */
  average(): HostTensor[] {
    const out: HostTensor[] = [];
    for (const [name, slot] of this.#slots) {
      if (!(slot.mass > 0)) continue;
      const mean = slot.sum.map((value) => value / slot.mass);
      out.push({
        name,
        dtype: slot.dtype,
        shape: slot.shape,
        mass: slot.mass,
        bytes: writeFloats(slot.dtype, mean),
      });
    }
    return out;
  }
}

/** EASGD on host values: `(1 − α)·W + α·W_avg`, element by element. */
export function easgdBlendHost(
  local: ArrayLike<number>,
  average: ArrayLike<number>,
  alpha: number,
): number[] {
  checkAlpha(alpha);
  if (local.length !== average.length) {
    throw invalidArgument('easgdBlendHost', 'average', `length ${local.length}`, average.length);
  }
  return Array.from(local, (value, index) => (1 - alpha) * value + alpha * (average[index] as number));
}

/** @throws FlodlError ERR_INVALID_ARGUMENT unless 0 < alpha ≤ 1 */
export function checkAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha <= 1)) throw invalidArgument('easgd', 'alpha', 'a number in (0, 1]', alpha);
}
