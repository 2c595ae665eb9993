import { checkPositiveInteger } from '@flodl/tensor-native';

/** A completed round, as the launcher-side host saw it. */
export interface HostRound {
  version: number;
  /** Ranks whose contributions were accepted (host modes) or that acked (collective modes). */
  accepted: number[];
  /** Host modes: the mass each accepted rank shipped with its parameters. */
  masses?: Record<number, number>;
  /** Host modes: Σ mass of the accepted contributions (the one divisor). */
  totalMass?: number;
  /** Host modes: ranks of the round that died before it completed (their contributions left out). */
  dropped?: number[];
}

/** Default `historyLimit` of the hosts: the newest entries each of their lists keeps. */
export const HOST_HISTORY_LIMIT = 10_000;

/**
 * `limit` checked: a positive integer (default {@link HOST_HISTORY_LIMIT}).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT otherwise
 */
export function historyLimitOf(op: string, limit: number | undefined): number {
  return limit === undefined ? HOST_HISTORY_LIMIT : checkPositiveInteger(op, 'historyLimit', limit);
}

/**
 * Appends `item` to a host's history list; once the list holds twice `limit` entries, the
 * oldest are dropped in one block, leaving the newest `limit` (so a long run's lists stay
 * bounded at a cost that does not grow with them).
 */
export function pushBounded<T>(list: T[], item: T, limit: number): void {
  list.push(item);
  if (list.length >= 2 * limit) list.splice(0, list.length - limit);
}
