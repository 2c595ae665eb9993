// recordScalar: per-rank named scalars that ride the next chunk report into EpochMetrics.scalars.
import { invalidArgument } from '@flodl/tensor-native';

const totals = new Map<string, { sum: number; count: number }>();

/**
 * Records a named value for the epoch in progress (call it from `trainStep`, an eval, or a
 * cooperative loop): the rank's mean of each name reaches `EpochMetrics.scalars` (batch-weighted
 * over ranks) and `EpochMetrics.perRank`.
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for an empty name or a non-number value
 * @example
 * ```ts
 * recordScalar('accuracy', correct / batchSize);
 * ```
 * floDl: `record_scalar(name, value)`.
 */
export function recordScalar(name: string, value: number): void {
  if (typeof name !== 'string' || name === '')
    throw invalidArgument('recordScalar', 'name', 'a non-empty string', name);
  if (typeof value !== 'number') throw invalidArgument('recordScalar', 'value', 'a number', value);
  const entry = totals.get(name);
  if (entry) {
    entry.sum += value;
    entry.count += 1;
  } else totals.set(name, { sum: value, count: 1 });
}

/** @internal Takes every total recorded since the previous drain. */
export function drainScalars(): Record<string, { sum: number; count: number }> {
  const drained = Object.fromEntries(totals);
  totals.clear();
  return drained;
}

/** @internal The totals recorded since the previous drain, left in place (a checkpoint's copy). */
export function peekScalars(): Record<string, { sum: number; count: number }> {
  return Object.fromEntries([...totals].map(([name, entry]) => [name, { ...entry }]));
}

/** @internal Adds saved totals back (a resumed epoch's scalars from before the save). */
export function restoreScalars(saved: Record<string, { sum: number; count: number }>): void {
  for (const [name, { sum, count }] of Object.entries(saved)) {
    const entry = totals.get(name);
    if (entry) {
      entry.sum += sum;
      entry.count += count;
    } else totals.set(name, { sum, count });
  }
}
