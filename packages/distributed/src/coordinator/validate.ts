import { describeValue, didYouMean, FlodlError } from '@flodl/tensor-native';

export {
  checkBoolean,
  checkInteger,
  checkNumberInRange,
  checkOneOf,
  checkOptionsObject,
} from '@flodl/tensor-native';

// Argument checks shared by the coordinator's config resolvers: tensor-native's, plus the
// coordinator's own wording for a misspelled option.

/**
 * Rejects misspelled option names: every own key of `options` must be in `known`; the message
 * suggests the closest known name (tensor-native's `didYouMean`).
 */
export function rejectUnknownKeys(op: string, name: string, options: object, known: readonly string[]): void {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) {
      throw new FlodlError('ERR_INVALID_ARGUMENT', `invalid ${name}.${key}${didYouMean(key, known)}`, {
        op,
        expected: `one of the known options (${known.join(', ')})`,
        got: describeValue(key),
      });
    }
  }
}
