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

/**
 * The float bytes as numbers without copying when they sit aligned for `dtype` (a received
 * tensor always does); a copy otherwise.
 */
function floatView(dtype: DType, bytes: Uint8Array): Float32Array | Float64Array {
  const size = dtype === 'float32' ? 4 : dtype === 'float64' ? 8 : 0;
  if (size === 0) throw invalidArgument(OP, 'dtype', HOST_AVERAGE_DTYPES.join(' or '), dtype);
  if (bytes.byteOffset % size !== 0 || bytes.byteLength % size !== 0) return readFloats(dtype, bytes);
  const length = bytes.byteLength / size;
  return size === 4
    ? new Float32Array(bytes.buffer, bytes.byteOffset, length)
    : new Float64Array(bytes.buffer, bytes.byteOffset, length);
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
  length: number;
  /** Σ of the contributions folded so far (float64), allocated once `pending` overflows. */
  sum: Float64Array | undefined;
  /** Contributions added but not folded yet: views of their bytes, in order. */
  pending: (Float32Array | Float64Array)[];
  mass: number;
}

/** Contributions held per tensor before they are folded into a float64 sum. */
const MAX_PENDING = 8;

/** Elements per block of the fold over many contributions. */
const BLOCK = 4096;

/**
 * The root of a host averaging round (mass law): folds sum pre-scaled tensors and their
 * masses (in float64), and `average()` divides once per tensor by the summed mass of exactly
 * the contributions that were added. Contributions of zero mass add nothing.
 *
 * The work is one pass: `add` keeps a view of each contribution's bytes (no copy) and
 * `average()` reads every contribution once, sums each element in float64 in the order they
 * were added and writes the quotient once in the tensor's dtype, without a float64 buffer of
 * the model's size. Past 8 contributions per tensor the held ones are folded into such a
 * buffer, so memory stays bounded by the caller's own contributions. The bytes added must
 * not change until `average()` returns.
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
   * Adds one contribution (sums only; its bytes are read by `average()`).
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
      const values = floatView(tensor.dtype, tensor.bytes);
      let slot = this.#slots.get(tensor.name);
      if (!slot) {
        slot = {
          dtype: tensor.dtype,
          shape: [...tensor.shape],
          length: values.length,
          sum: undefined,
          pending: [],
          mass: 0,
        };
        this.#slots.set(tensor.name, slot);
      } else if (slot.dtype !== tensor.dtype || slot.length !== values.length) {
        throw invalidArgument(
          `${OP}.add`,
          tensor.name,
          `${slot.dtype} [${slot.shape.join(', ')}]`,
          `${tensor.dtype} [${tensor.shape.join(', ')}]`,
        );
      }
      if (tensor.mass === 0) continue;
      if (slot.pending.length === MAX_PENDING) {
        slot.sum = foldPending(slot);
        slot.pending = [];
      }
      slot.pending.push(values);
      slot.mass += tensor.mass;
    }
    this.#accepted.push(rank);
  }

  /**
   * The consensus: per tensor Σ(m·W) / Σ m (one division); tensors nobody weighted are left out.
   * With `into`, each tensor's values are written into that set's buffer for its name (made on
   * first use, reused while its length and dtype stay the same), so a root that keeps a set
   * per round in flight writes no fresh memory per round; the consensus then shares those
   * buffers until they are written again.
   */
  average(into?: ConsensusBuffers): HostTensor[] {
    return this.averageLater(into).map(settled);
  }

  /**
   * The consensus of `average`, each tensor's values computed as they are first read: all of
   * them on `bytes`, the first bytes only on `upTo` (a root that ships the consensus chunk by
   * chunk averages each chunk while the one before it goes out). The contributions' bytes must
   * not change, and nothing more be added, until every tensor was read whole.
   */
  averageLater(into?: ConsensusBuffers): LaterTensor[] {
    const out: LaterTensor[] = [];
    for (const [name, slot] of this.#slots) {
      if (slot.mass > 0) out.push(new LaterTensor(name, slot, into));
    }
    return out;
  }
}

/** `tensor` with every value computed, as a plain HostTensor. */
export function settled(tensor: HostTensor): HostTensor {
  const { name, dtype, shape, mass, bytes } = tensor;
  return { name, dtype, shape, mass, bytes };
}

/** A tensor of a consensus whose values are computed as they are read ({@link MassAccumulator.averageLater}). */
export class LaterTensor implements HostTensor {
  readonly dtype: DType;
  readonly shape: readonly number[];
  readonly mass: number;
  readonly #slot: Slot;
  readonly #into: ConsensusBuffers | undefined;
  #values: Floats | undefined;
  #view: Uint8Array | undefined;
  /** Elements computed so far, from the first. */
  #done = 0;

  constructor(
    readonly name: string,
    slot: Slot,
    into: ConsensusBuffers | undefined,
  ) {
    this.dtype = slot.dtype;
    this.shape = slot.shape;
    this.mass = slot.mass;
    this.#slot = slot;
    this.#into = into;
  }

  /** Every value (computed now where they were not yet). */
  get bytes(): Uint8Array {
    return this.upTo(Number.POSITIVE_INFINITY);
  }

  /** The tensor's bytes, of which at least the first `byteEnd` hold their values. */
  upTo(byteEnd: number): Uint8Array {
    const slot = this.#slot;
    const float64 = slot.dtype === 'float64';
    this.#values ??=
      this.#into?.take(this.name, float64 ? 'float64' : 'float32', slot.length) ??
      (float64 ? new Float64Array(slot.length) : new Float32Array(slot.length));
    const values = this.#values;
    const end = Math.min(slot.length, Math.ceil(byteEnd / values.BYTES_PER_ELEMENT));
    if (end > this.#done) {
      foldRange(slot, slot.mass, values, this.#done, end);
      this.#done = end;
    }
    this.#view ??= new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    return this.#view;
  }
}

/**
 * Output buffers for {@link MassAccumulator.average}, one per tensor name, kept from round to
 * round. A consensus written into a set is valid until the set is written again: a root keeps
 * one set per consensus it still holds or sends.
 */
export class ConsensusBuffers {
  readonly #buffers = new Map<string, Floats>();

  /** The buffer for `name`, made anew when it is missing or of another length or dtype. */
  take(name: string, dtype: 'float32' | 'float64', length: number): Floats {
    const held = this.#buffers.get(name);
    const matches = held?.length === length && (dtype === 'float64') === held instanceof Float64Array;
    if (held !== undefined && matches) return held;
    const fresh = dtype === 'float64' ? new Float64Array(length) : new Float32Array(length);
    this.#buffers.set(name, fresh);
    return fresh;
  }
}

type Floats = Float32Array | Float64Array;

/**
 * One pass over a slot's folded sum and held contributions: each element's float64 sum in the
 * order the contributions came (from 0, as a running sum would), written out as is (no
 * `mass`: a float64 sum for later folds) or divided by `mass` once in the slot's dtype (the
 * consensus).
 */
function foldPending(slot: Slot, mass?: number): Float64Array;
function foldPending(slot: Slot, mass: number, into?: Floats): Floats;
function foldPending(slot: Slot, mass?: number, into?: Floats): Floats {
  const out =
    into ??
    (mass === undefined || slot.dtype === 'float64'
      ? new Float64Array(slot.length)
      : new Float32Array(slot.length));
  foldRange(slot, mass ?? 1, out, 0, slot.length);
  return out;
}

/** {@link foldPending}'s pass over the elements [from, to) into `out`, divided by `divisor`. */
function foldRange(slot: Slot, divisor: number, out: Floats, from: number, to: number): void {
  const inputs: Floats[] = slot.sum ? [slot.sum, ...slot.pending] : slot.pending;
  // Two or three inputs (the usual world sizes) in one loop each; more go block by block.
  if (inputs.length === 1) sum1(out, inputs[0] as Floats, divisor, from, to);
  else if (inputs.length === 2) sum2(out, inputs[0] as Floats, inputs[1] as Floats, divisor, from, to);
  else if (inputs.length === 3)
    sum3(out, inputs[0] as Floats, inputs[1] as Floats, inputs[2] as Floats, divisor, from, to);
  else sumBlocks(out, inputs, divisor, from, to);
}

function sum1(out: Floats, a: Floats, divisor: number, from: number, to: number): void {
  for (let i = from; i < to; i += 1) out[i] = (0 + (a[i] as number)) / divisor;
}

function sum2(out: Floats, a: Floats, b: Floats, divisor: number, from: number, to: number): void {
  for (let i = from; i < to; i += 1) out[i] = (0 + (a[i] as number) + (b[i] as number)) / divisor;
}

function sum3(out: Floats, a: Floats, b: Floats, c: Floats, divisor: number, from: number, to: number): void {
  for (let i = from; i < to; i += 1)
    out[i] = (0 + (a[i] as number) + (b[i] as number) + (c[i] as number)) / divisor;
}

/** Any number of inputs, `BLOCK` elements at a time (the block's float64 sums stay in L1). */
function sumBlocks(out: Floats, inputs: readonly Floats[], divisor: number, from: number, to: number): void {
  const block = new Float64Array(BLOCK);
  for (let start = from; start < to; start += BLOCK) {
    const size = Math.min(BLOCK, to - start);
    block.fill(0);
    for (const values of inputs) addBlock(block, values, start, size);
    for (let i = 0; i < size; i += 1) out[start + i] = (block[i] as number) / divisor;
  }
}

/** `block[i] += values[start + i]` for `size` elements. */
function addBlock(block: Float64Array, values: Floats, start: number, size: number): void {
  for (let i = 0; i < size; i += 1) block[i] = (block[i] as number) + (values[start + i] as number);
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
