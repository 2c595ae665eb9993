// Where a resumed run's coordinator starts: the epoch in progress and the samples of it
// already trained, the LR clock, the averaging count, ElChe's trajectory and the guard's
// history, as a checkpoint bundle recorded them.

import { invalidArgument } from '@flodl/tensor-native';
import type { ElCheState } from './el-che/el-che.js';
import { checkInteger, checkOptionsObject, rejectUnknownKeys } from './validate.js';

/** The state a resumed coordinator starts from (`CoordinatorOptions.resume`). */
export interface CoordinatorResume {
  /** The epoch in progress at the save: the run continues with it. */
  epoch: number;
  /** Positions of `epoch`'s permutation already trained, `[from, to)`: they are not handed out again. */
  covered?: readonly (readonly [number, number])[];
  /** The LR clock at the save. Default 0. */
  globalStep?: number;
  /** Averaging rounds completed at the save (round numbers continue from it). Default 0. */
  averagingCount?: number;
  /** ElChe's trajectory; restored when it was saved with the same world size. */
  elche?: ElCheState;
  /** The convergence guard's history (the level guard's ring). */
  guardHistory?: readonly number[];
}

const OP = 'ClusterCoordinator';
const KEYS: readonly (keyof CoordinatorResume)[] = [
  'epoch',
  'covered',
  'globalStep',
  'averagingCount',
  'elche',
  'guardHistory',
];

/**
 * Validates a {@link CoordinatorResume} against the run it resumes.
 *
 * @throws FlodlError `ERR_INVALID_ARGUMENT` naming `resume.<field>`
 */
export function checkResume(value: unknown, numEpochs: number, totalSamples: number): CoordinatorResume {
  const raw = checkOptionsObject(OP, 'resume', value);
  rejectUnknownKeys(OP, 'resume', raw, KEYS);
  const epoch = checkInteger(OP, 'resume.epoch', raw.epoch, 0);
  if (epoch > numEpochs) throw invalidArgument(OP, 'resume.epoch', `at most numEpochs (${numEpochs})`, epoch);
  const covered = raw.covered === undefined ? [] : raw.covered;
  if (!isSpanList(covered, totalSamples))
    throw invalidArgument(OP, 'resume.covered', `[from, to) spans within [0, ${totalSamples}]`, covered);
  const guardHistory = raw.guardHistory === undefined ? [] : raw.guardHistory;
  if (!Array.isArray(guardHistory) || !guardHistory.every((item) => Number.isFinite(item)))
    throw invalidArgument(OP, 'resume.guardHistory', 'a list of finite numbers', guardHistory);
  const elche = raw.elche as ElCheState | undefined;
  if (
    elche !== undefined &&
    (typeof elche !== 'object' ||
      elche === null ||
      !Array.isArray(elche.smoothedMsPerBatch) ||
      !Number.isFinite(elche.anchor) ||
      !Number.isSafeInteger(elche.calibrationCount))
  )
    throw invalidArgument(OP, 'resume.elche', 'an ElChe state (ElChe.toState())', elche);
  return Object.freeze({
    epoch,
    covered: mergeSpans(covered as [number, number][]),
    globalStep: raw.globalStep === undefined ? 0 : checkInteger(OP, 'resume.globalStep', raw.globalStep, 0),
    averagingCount:
      raw.averagingCount === undefined ? 0 : checkInteger(OP, 'resume.averagingCount', raw.averagingCount, 0),
    ...(elche === undefined ? {} : { elche }),
    guardHistory: [...(guardHistory as number[])],
  });
}

/** True when `value` is a list of `[from, to)` spans of integers with `0 <= from <= to <= total`. */
export function isSpanList(value: unknown, total: number): value is [number, number][] {
  return (
    Array.isArray(value) &&
    value.every(
      (span) =>
        Array.isArray(span) &&
        span.length === 2 &&
        Number.isSafeInteger(span[0]) &&
        Number.isSafeInteger(span[1]) &&
        span[0] >= 0 &&
        span[0] <= span[1] &&
        span[1] <= total,
    )
  );
}

/** `spans` sorted and merged: disjoint, ascending, no empty span. */
export function mergeSpans(spans: readonly (readonly [number, number])[]): [number, number][] {
  const sorted = spans.filter(([from, to]) => to > from).sort((left, right) => left[0] - right[0]);
  const merged: [number, number][] = [];
  for (const [from, to] of sorted) {
    const last = merged.at(-1);
    if (last && from <= last[1]) last[1] = Math.max(last[1], to);
    else merged.push([from, to]);
  }
  return merged;
}

/** The positions of `[start, end)` not in the merged `covered` spans, as `[from, to)` runs. */
export function uncoveredRuns(
  start: number,
  end: number,
  covered: readonly (readonly [number, number])[],
): [number, number][] {
  const runs: [number, number][] = [];
  let at = start;
  for (const [from, to] of covered) {
    if (to <= at) continue;
    if (from >= end) break;
    if (from > at) runs.push([at, Math.min(from, end)]);
    at = Math.max(at, to);
    if (at >= end) break;
  }
  if (at < end) runs.push([at, end]);
  return runs;
}

/** Refuses an ElChe state of another world size (it is then not restored: ElChe recalibrates). */
export function elcheFits(state: ElCheState | undefined, worldSize: number): state is ElCheState {
  return state !== undefined && state.smoothedMsPerBatch.length === worldSize;
}
