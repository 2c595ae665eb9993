import type { EpochPlan } from '../../wire/messages.js';

export type { EpochPlan };

/** Samples an epoch covers: `floor(N / batch) × batch` (drop-last; a partial batch cannot step). */
export function usableSamples(totalSamples: number, batchSize: number): number {
  return Math.floor(totalSamples / batchSize) * batchSize;
}

/** Consecutive plans over per-rank sizes: offsets accumulate, so slices never overlap. */
export function plansFromSizes(epoch: number, sizes: readonly number[]): EpochPlan[] {
  const plans: EpochPlan[] = [];
  let offset = 0;
  for (const size of sizes) {
    plans.push({ epoch, partitionOffset: offset, partitionSize: size });
    offset += size;
  }
  return plans;
}
