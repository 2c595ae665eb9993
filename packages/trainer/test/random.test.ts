import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { epochKey, epochPermutation, Random, splitMix64 } from '../src/data/index.js';

// Reference values: scripts/prng-reference.c (Vigna's C code of SplitMix64 and xoshiro128**).
describe('SplitMix64', () => {
  it('matches the reference outputs from state 0', () => {
    let state = 0n;
    const outputs: bigint[] = [];
    for (let k = 0; k < 3; k++) {
      const step = splitMix64(state);
      outputs.push(step.output);
      state = step.state;
    }
    expect(outputs).toEqual([0xe220a8397b1dcdafn, 0x6e789e6aa1b965f4n, 0x06c45d188009454fn]);
  });

  it('derives epoch keys from (seed, epoch)', () => {
    expect(epochKey(42, 0)).toBe(0x57e1faba65107204n);
    expect(epochKey(42, 1)).toBe(0xfa4f945599f9054an);
    // Not seed + epoch: (42, 1) and (43, 0) are unrelated.
    expect(epochKey(42, 1)).not.toBe(epochKey(43, 0));
  });
});

describe('Random (xoshiro128**)', () => {
  it('matches the reference outputs for seed 42', () => {
    const random = Random.fromSeed(42);
    const outputs = Array.from({ length: 5 }, () => random.nextUint32());
    expect(outputs).toEqual([1776835114, 4165204688, 17111135, 2317295270, 2792088233]);
  });

  it('gives the same sequence for a number seed and the same bigint seed', () => {
    const a = Random.fromSeed(7);
    const b = Random.fromSeed(7n);
    for (let k = 0; k < 100; k++) expect(a.nextUint32()).toBe(b.nextUint32());
  });

  it('draws bounded integers in range, every value reachable', () => {
    const random = Random.fromSeed(1);
    const counts = new Array(6).fill(0);
    for (let k = 0; k < 6000; k++) counts[random.uniformInt(6)]++;
    for (const count of counts) expect(count).toBeGreaterThan(850);
    expect(random.uniformInt(1)).toBe(0);
    expect(random.uniformInt(2 ** 32)).toBeLessThan(2 ** 32);
    const float = random.nextFloat();
    expect(float).toBeGreaterThanOrEqual(0);
    expect(float).toBeLessThan(1);
  });

  it('rejects bad seeds and bounds', () => {
    expect(() => Random.fromSeed(-1)).toThrow(/seed/);
    expect(() => Random.fromSeed(1.5)).toThrow(/seed/);
    expect(() => Random.fromSeed(2n ** 64n)).toThrow(/seed/);
    expect(() => Random.fromSeed(1).uniformInt(0)).toThrow(/bound/);
  });
});

describe('epochPermutation', () => {
  it('matches the reference permutations', () => {
    expect(Array.from(epochPermutation(10, 42, 0))).toEqual([7, 4, 1, 9, 8, 0, 5, 6, 2, 3]);
    expect(Array.from(epochPermutation(10, 42, 1))).toEqual([9, 1, 3, 7, 6, 5, 0, 2, 8, 4]);
    expect(Array.from(epochPermutation(16, 7, 3))).toEqual([
      7, 12, 4, 0, 13, 11, 6, 14, 15, 8, 5, 3, 2, 9, 10, 1,
    ]);
  });

  it('is a permutation, the same on every call, different per epoch', () => {
    const order = epochPermutation(60000, 42, 5);
    expect([...order].sort((a, b) => a - b)).toEqual(Array.from({ length: 60000 }, (_, k) => k));
    expect(epochPermutation(60000, 42, 5)).toEqual(order);
    expect(epochPermutation(60000, 42, 6)).not.toEqual(order);
    expect(epochPermutation(60000, 43, 5)).not.toEqual(order);
  });

  it('is the same in another process', () => {
    const source = fileURLToPath(new URL('../src/data/random.ts', import.meta.url));
    const script = `import { epochPermutation } from ${JSON.stringify(source)};
      const order = epochPermutation(5000, 1234, 9);
      let hash = 0; for (const index of order) hash = (Math.imul(hash, 31) + index) >>> 0;
      console.log(JSON.stringify({ head: Array.from(order.subarray(0, 8)), hash }));`;
    const output = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      cwd: fileURLToPath(new URL('..', import.meta.url)),
    });
    const order = epochPermutation(5000, 1234, 9);
    let hash = 0;
    for (const index of order) hash = (Math.imul(hash, 31) + index) >>> 0;
    expect(JSON.parse(output)).toEqual({ head: Array.from(order.subarray(0, 8)), hash });
  });

  it('rejects bad arguments', () => {
    expect(() => epochPermutation(0, 42, 0)).toThrow(/length/);
    expect(() => epochPermutation(10, 42, -1)).toThrow(/epoch/);
    expect(() => epochPermutation(10, 42, 0.5)).toThrow(/epoch/);
  });
});
