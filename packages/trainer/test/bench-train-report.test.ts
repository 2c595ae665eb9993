import { describe, expect, it } from 'vitest';
// @ts-expect-error the bench's report is plain JavaScript without declarations
import { roundRatios } from '../bench/train-report.mjs';

const rounds = (...rates: number[]) => rates.map((samplesPerSecond) => ({ samplesPerSecond }));

describe("bench:train's per-round ratios", () => {
  it('pairs each round of flodl with the same round of PyTorch, median and range', () => {
    // Best against best would say 300/100 = 3.00; round by round the ratios are 1, 2 and 3.
    expect(roundRatios(rounds(100, 200, 300), rounds(100, 100, 100))).toBe('2.00 (1.00-3.00)');
    expect(roundRatios(rounds(300, 100, 200), rounds(100, 100, 100))).toBe('2.00 (1.00-3.00)');
    expect(roundRatios(rounds(120, 150), rounds(100, 100))).toBe('1.35 (1.20-1.50)');
  });

  it('gives one round as its ratio alone', () => {
    expect(roundRatios(rounds(150), rounds(100))).toBe('1.50');
  });
});
