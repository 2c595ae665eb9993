// The addon's op entries as the public files see them: each ops file picks, once at module
// load, the entries it calls; only src/internal/ imports the raw binding (STYLE.md).
//
// The picked object is also the fast path: the addon's exports object holds hundreds of
// entries, so V8 keeps it as a dictionary and every `native.x(...)` there is a hash lookup;
// a small frozen object built at once has fast, constant properties that the optimizing
// compiler folds into the call.
import { native } from './binding.js';
import type { NativeBinding } from './binding-types.js';

/**
 * The native entries `names`, typed as the binding declares them.
 *
 * @example const native = nativeOps('add', 'addScalar'); native.add(a._h, b._h);
 */
export function nativeOps<const K extends keyof NativeBinding>(...names: K[]): Pick<NativeBinding, K> {
  return Object.freeze(Object.fromEntries(names.map((name) => [name, native[name]]))) as Pick<
    NativeBinding,
    K
  >;
}

// One reusable Float64Array per list length: the addon reads it in place (one N-API call for
// the whole list, where an Array costs two per element).
const LIST_SLOTS = 9;
const lists: Float64Array[] = Array.from({ length: LIST_SLOTS }, (_, length) => new Float64Array(length));

/**
 * `values` as the addon reads integer lists fastest: a shared Float64Array of that length
 * (lists longer than 8 stay arrays). Valid until the next call: pass it to one native call
 * with no other list argument, and only after the values were checked to be integers.
 */
export function integerList(values: readonly number[]): Float64Array | readonly number[] {
  const length = values.length;
  if (length >= LIST_SLOTS) return values;
  const list = lists[length]!;
  for (let k = 0; k < length; k++) list[k] = values[k]!;
  return list;
}
