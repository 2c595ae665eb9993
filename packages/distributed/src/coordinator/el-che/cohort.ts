/**
 * Slow-cohort band (floDl `COHORT_BAND`): a rank may anchor only when its smoothed ms/batch is
 * within 15% of the slowest, so a clearly faster device is never a candidate.
 */
export const COHORT_BAND = 0.15;

/**
 * Dominance margin (floDl `DOMINANCE_MARGIN`): within the cohort the current anchor keeps the
 * role unless a challenger is at least 10% slower, so near-identical devices never churn.
 */
export const DOMINANCE_MARGIN = 0.1;

/**
 * Ranks whose smoothed ms/batch is ≥ (1 − {@link COHORT_BAND}) × the slowest, among the
 * eligible ranks with a reading. Empty when no eligible rank has a positive reading.
 */
export function slowCohort(smoothedMs: readonly number[], eligible?: readonly boolean[]): number[] {
  let slowest = 0;
  for (let rank = 0; rank < smoothedMs.length; rank++) {
    if (eligible && !eligible[rank]) continue;
    slowest = Math.max(slowest, smoothedMs[rank] ?? 0);
  }
  if (slowest <= 0) return [];
  const threshold = slowest * (1 - COHORT_BAND);
  const cohort: number[] = [];
  for (let rank = 0; rank < smoothedMs.length; rank++) {
    if (eligible && !eligible[rank]) continue;
    if ((smoothedMs[rank] ?? 0) >= threshold) cohort.push(rank);
  }
  return cohort;
}

/**
 * Elects the anchor rank: the slow cohort, then sticky-with-margin inside it. The current
 * anchor stays while it is in the cohort unless the slowest challenger exceeds it by
 * {@link DOMINANCE_MARGIN}; with no current anchor in the cohort the lowest index wins.
 * `undefined` when no rank has a reading.
 */
export function electAnchor(
  smoothedMs: readonly number[],
  current: number | undefined,
  eligible?: readonly boolean[],
): number | undefined {
  const cohort = slowCohort(smoothedMs, eligible);
  if (cohort.length === 0) return undefined;
  if (cohort.length === 1) return cohort[0];
  if (current !== undefined && cohort.includes(current)) {
    const currentMs = smoothedMs[current] ?? 0;
    let challenger: number | undefined;
    let challengerMs = Number.NEGATIVE_INFINITY;
    for (const rank of cohort) {
      if (rank === current) continue;
      const ms = smoothedMs[rank] ?? 0;
      if (ms > challengerMs) {
        challenger = rank;
        challengerMs = ms;
      }
    }
    if (challenger !== undefined && challengerMs > currentMs * (1 + DOMINANCE_MARGIN)) return challenger;
    return current;
  }
  return Math.min(...cohort);
}
