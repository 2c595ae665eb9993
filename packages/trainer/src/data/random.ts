// The data pipeline's own PRNG, written in TypeScript so that an order depends on nothing but
// its seed: no libtorch generator, no Math.random, the same numbers in every process, on
// every machine and in every version of Node.
//
// Algorithm (reference C code: scripts/prng-reference.c):
//   - SplitMix64 (Steele, Lea, Flood 2014) expands a 64-bit seed; it is used only for seeding.
//   - xoshiro128** 1.1 (Blackman, Vigna 2018) is the generator: 128 bits of state, 32-bit
//     outputs, pure 32-bit arithmetic, so it runs at full speed without BigInt.
//   - Bounded integers by rejection (no modulo bias); shuffles are Fisher-Yates (Durstenfeld).
import { invalidArgument } from '@flodl/tensor-native';
import { checkPositiveInteger } from './validate.js';

const MASK_64 = (1n << 64n) - 1n;
const GOLDEN_GAMMA = 0x9e3779b97f4a7c15n;
const TWO_TO_32 = 2 ** 32;

/** A seed: a non-negative safe integer, or a bigint below 2^64. */
export type Seed = number | bigint;

function checkSeed(op: string, name: string, seed: unknown): bigint {
  if (typeof seed === 'number' && Number.isSafeInteger(seed) && seed >= 0) return BigInt(seed);
  if (typeof seed === 'bigint' && seed >= 0n && seed <= MASK_64) return seed;
  throw invalidArgument(op, name, 'a non-negative safe integer or a bigint below 2^64', seed);
}

/**
 * One SplitMix64 step: advances `state` by the golden gamma and returns the mixed output
 * (both as unsigned 64-bit values).
 *
 * @example splitMix64(0n) // { output: 0xe220a8397b1dcdafn, state: 0x9e3779b97f4a7c15n }
 */
export function splitMix64(state: bigint): { output: bigint; state: bigint } {
  const next = (state + GOLDEN_GAMMA) & MASK_64;
  let z = next;
  z = ((z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n) & MASK_64;
  z = ((z ^ (z >> 27n)) * 0x94d049bb133111ebn) & MASK_64;
  return { output: z ^ (z >> 31n), state: next };
}

/**
 * The 64-bit key of one epoch's permutation: `splitMix64(splitMix64(seed) + epoch)` (first
 * outputs, sums modulo 2^64). Distinct `(seed, epoch)` pairs give unrelated keys, unlike
 * `seed + epoch`, where seed 42 epoch 1 would repeat seed 43 epoch 0.
 */
export function epochKey(seed: Seed, epoch: number): bigint {
  const seedBits = checkSeed('epochKey', 'seed', seed);
  if (!Number.isSafeInteger(epoch) || epoch < 0) {
    throw invalidArgument('epochKey', 'epoch', 'a non-negative integer', epoch);
  }
  const mixed = splitMix64(seedBits).output;
  return splitMix64((mixed + BigInt(epoch)) & MASK_64).output;
}

/**
 * A xoshiro128** generator. Deterministic: the same seed gives the same sequence everywhere.
 * Not for cryptography.
 *
 * @example
 * ```ts
 * const random = Random.fromSeed(42);
 * random.nextUint32(); // 1776835114
 * random.uniformInt(6); // a die roll in [0, 6)
 * ```
 * PyTorch has no equivalent (its samplers draw from `torch.Generator`); NumPy's is
 * `np.random.Generator` with a `bit_generator`.
 */
export class Random {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  private constructor(s0: number, s1: number, s2: number, s3: number) {
    this.s0 = s0;
    this.s1 = s1;
    this.s2 = s2;
    this.s3 = s3;
  }

  /**
   * Seeds the state with two SplitMix64 outputs from `seed`, each split into its low and high
   * 32-bit halves (state words 0..3), as Vigna recommends.
   */
  static fromSeed(seed: Seed): Random {
    let step = splitMix64(checkSeed('Random.fromSeed', 'seed', seed));
    const first = step.output;
    step = splitMix64(step.state);
    const second = step.output;
    const words = [first, first >> 32n, second, second >> 32n].map((word) => Number(word & 0xffffffffn));
    // SplitMix64 never yields two zero outputs in a row, so the state is never all zero.
    return new Random(words[0]!, words[1]!, words[2]!, words[3]!);
  }

  /** The next 32-bit output, in [0, 2^32). */
  nextUint32(): number {
    const s1 = this.s1;
    const scaled = Math.imul(s1, 5);
    const result = Math.imul((scaled << 7) | (scaled >>> 25), 9) >>> 0;
    const t = s1 << 9;
    this.s2 ^= this.s0;
    this.s3 ^= s1;
    this.s1 = s1 ^ this.s2;
    this.s0 ^= this.s3;
    this.s2 ^= t;
    this.s3 = (this.s3 << 11) | (this.s3 >>> 21);
    return result;
  }

  /** A float in [0, 1) with 32 random bits. */
  nextFloat(): number {
    return this.nextUint32() / TWO_TO_32;
  }

  /**
   * An integer uniform in [0, bound), for 1 <= bound <= 2^32: draws are rejected above the
   * largest multiple of `bound` so that every value is equally likely.
   */
  uniformInt(bound: number): number {
    if (!Number.isSafeInteger(bound) || bound < 1 || bound > TWO_TO_32) {
      throw invalidArgument('Random.uniformInt', 'bound', 'an integer in [1, 2^32]', bound);
    }
    const limit = TWO_TO_32 - (TWO_TO_32 % bound);
    let draw = this.nextUint32();
    while (draw >= limit) draw = this.nextUint32();
    return draw % bound;
  }

  /**
   * Shuffles `values` in place (Fisher-Yates, Durstenfeld's form: for i from the end down to 1,
   * swap element i with a uniform j in [0, i]). Returns `values`.
   */
  shuffle<T extends { length: number; [index: number]: number }>(values: T): T {
    for (let i = values.length - 1; i > 0; i--) {
      const j = this.uniformInt(i + 1);
      const held = values[i]!;
      values[i] = values[j]!;
      values[j] = held;
    }
    return values;
  }
}

/**
 * The permutation of `[0, length)` for one epoch: a pure function of `(length, seed, epoch)`.
 * It is `Random.fromSeed(epochKey(seed, epoch)).shuffle([0, 1, …, length - 1])`, so every
 * process that agrees on the three numbers agrees on the order (distributed ranks slice it).
 *
 * @example epochPermutation(10, 42, 0) // Int32Array [7, 4, 1, 9, 8, 0, 5, 6, 2, 3]
 * @throws FlodlError ERR_INVALID_ARGUMENT for a length outside [1, 2^31) or a bad seed/epoch
 * PyTorch: `torch.randperm(length, generator=torch.Generator().manual_seed(seed + epoch))`
 * (a different generator, so different numbers).
 */
export function epochPermutation(length: number, seed: Seed, epoch: number): Int32Array {
  checkPositiveInteger('epochPermutation', 'length', length);
  if (length >= 2 ** 31) {
    throw invalidArgument('epochPermutation', 'length', 'a length below 2^31', length);
  }
  const key = epochKey(seed, epoch);
  const order = new Int32Array(length);
  for (let index = 0; index < length; index++) order[index] = index;
  return Random.fromSeed(key).shuffle(order);
}
