// getRngState / setRngState: a saved generator state repeats what is drawn next, exactly.
import { describe, expect, it } from 'vitest';
import {
  cuda,
  FlodlError,
  getRngState,
  manualSeed,
  randn,
  setRngState,
  tidy,
  toBytes,
} from '../src/index.js';

const draw = (device: 'cpu' | 'cuda:0' = 'cpu'): string =>
  tidy(() => Buffer.from(toBytes(randn([64], { device }))).toString('hex'));

describe('RNG state', () => {
  it('repeats the draws after the saved point, whatever was drawn in between', () => {
    manualSeed(7);
    draw();
    const state = getRngState();
    const first = [draw(), draw()];
    manualSeed(123);
    draw();
    setRngState(state);
    expect([draw(), draw()]).toEqual(first);
    expect(first[0]).not.toEqual(first[1]);
  });

  it.skipIf(!cuda.isAvailable())("repeats a CUDA device's draws (its seed and offset)", () => {
    manualSeed(9);
    draw('cuda:0');
    const state = getRngState('cuda:0');
    const cpu = getRngState();
    const first = [draw('cuda:0'), draw('cuda:0')];
    manualSeed(10);
    setRngState(state, 'cuda:0');
    expect([draw('cuda:0'), draw('cuda:0')]).toEqual(first);
    // The CPU generator is another one: restoring the CUDA state leaves it alone.
    expect(Buffer.from(getRngState()).equals(Buffer.from(cpu))).toBe(false);
  });

  it('returns a copy: drawing does not change a saved state', () => {
    manualSeed(1);
    const state = getRngState();
    const copy = Uint8Array.from(state);
    draw();
    expect(Buffer.from(state).equals(Buffer.from(copy))).toBe(true);
  });

  it('refuses what is not a state, with typed errors', () => {
    const codeOf = (fn: () => void): string | undefined => {
      try {
        fn();
        return undefined;
      } catch (error) {
        return FlodlError.isInstance(error) ? error.code : 'untyped';
      }
    };
    expect(codeOf(() => setRngState([1, 2, 3] as unknown as Uint8Array))).toBe('ERR_INVALID_ARGUMENT');
    expect(codeOf(() => setRngState(new Uint8Array(10)))).toBe('ERR_NATIVE');
    expect(codeOf(() => getRngState('gpu' as 'cpu'))).toBe('ERR_INVALID_ARGUMENT');
    expect(codeOf(() => getRngState('cuda:99'))).toBe('ERR_DEVICE');
  });
});
