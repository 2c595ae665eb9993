// "Did you mean …?" for misspelled option names: the one implementation every options check of
// the framework appends to its unknown-key message.
import { FlodlError, type FlodlErrorCode } from '../errors.js';

/** The largest edit distance at which a known name is suggested. */
const MAX_DISTANCE = 2;

/**
 * The optimal string alignment distance (Damerau-Levenshtein without repeated edits of one
 * substring): insertions, deletions, substitutions and swaps of two adjacent characters each
 * cost 1. Stops early and returns `limit + 1` once the distance must exceed `limit`.
 */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  let beforePrevious: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMinimum = i;
    for (let j = 1; j <= b.length; j++) {
      const substitution = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + substitution);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        best = Math.min(best, beforePrevious[j - 2]! + 1);
      }
      current.push(best);
      rowMinimum = Math.min(rowMinimum, best);
    }
    if (rowMinimum > limit) return limit + 1;
    beforePrevious = previous;
    previous = current;
  }
  return previous[b.length]!;
}

/** `step_size` → `stepSize`: PyTorch's spelling of a name in this framework's. */
function camelCase(name: string): string {
  return name.replace(/_+([a-zA-Z0-9])/g, (_, letter: string) => letter.toUpperCase());
}

/**
 * The known name closest to a misspelled `name`: within edit distance 2 (a swap of two
 * adjacent letters counts 1; PyTorch's snake_case spelling of a known camelCase name counts 0),
 * and nearer than the length of `name`, so that a short name is never "corrected" into an
 * unrelated one. Ties go to the name listed first.
 *
 * @param name the unknown name as given
 * @param known the names the caller accepts
 * @returns the suggestion, or `undefined` when no known name is close
 * @example closestName('weightdecay', ['lr', 'weightDecay']) // 'weightDecay'
 * @example closestName('weight_decay', ['lr', 'weightDecay']) // 'weightDecay'
 * @example closestName('x', ['lr']) // undefined
 * PyTorch has no equivalent (Python's `difflib.get_close_matches` plays the part elsewhere).
 */
export function closestName(name: string, known: readonly string[]): string | undefined {
  if (typeof name !== 'string' || name === '') return undefined;
  const camel = camelCase(name);
  let best: string | undefined;
  let bestDistance = MAX_DISTANCE + 1;
  for (const candidate of known) {
    if (candidate === name) continue;
    const distance = camel === candidate ? 0 : editDistance(name, candidate, MAX_DISTANCE);
    if (distance < bestDistance && distance < name.length) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/**
 * `` `; did you mean `weightDecay`?` `` when a known name is close to `name` (see
 * {@link closestName}), else the empty string: the suffix every unknown-key message ends with.
 *
 * @example `unknown option '${key}'${didYouMean(key, allowed)}`
 */
export function didYouMean(name: string, known: readonly string[]): string {
  const suggestion = closestName(name, known);
  return suggestion === undefined ? '' : `; did you mean \`${suggestion}\`?`;
}

/** Where and how {@link unknownOptionError} reports the key. */
export interface UnknownOptionDetails {
  /** Which options object held the key (`options`, `paramGroups[1]`); named after the key. */
  where?: string;
  /** The error code. Default `ERR_INVALID_ARGUMENT` (`ERR_CHECKPOINT` for a saved state). */
  code?: FlodlErrorCode;
}

/**
 * The error for an options key that `op` does not know: names the key, suggests the closest
 * known one (see {@link closestName}) and lists every known key.
 *
 * @example
 * ```ts
 * throw unknownOptionError('Adam', 'weightdecay', ['lr', 'weightDecay']);
 * // Adam: unknown option 'weightdecay'; did you mean `weightDecay`?
 * //   expected: one of lr, weightDecay
 * //   got: weightdecay
 * ```
 * PyTorch raises `TypeError: __init__() got an unexpected keyword argument` without suggestions.
 */
export function unknownOptionError(
  op: string,
  key: string,
  known: readonly string[],
  details: UnknownOptionDetails = {},
): FlodlError {
  const where = details.where === undefined ? '' : ` in ${details.where}`;
  return new FlodlError(
    details.code ?? 'ERR_INVALID_ARGUMENT',
    `unknown option '${key}'${where}${didYouMean(key, known)}`,
    {
      op,
      expected: known.length === 0 ? 'no options' : `one of ${known.join(', ')}`,
      got: key,
    },
  );
}
