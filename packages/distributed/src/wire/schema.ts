/** Raises the error of a field that is not what its codec accepts; never returns. */
export type FieldFailure = (path: string, expected: string, got: unknown) => never;

/**
 * How one field travels: validation plus the MessagePack-ready form. Every decoded value
 * is validated; every encoded value too, so a bad message fails at the sender.
 */
export interface FieldCodec<T> {
  /** What a valid value is, in words, e.g. `a non-negative safe integer`. */
  readonly expected: string;
  /** True when the field may be absent (encoded as nil, or left off the end). */
  readonly optional: boolean;
  encode(value: T, path: string, fail: FieldFailure): unknown;
  decode(raw: unknown, path: string, fail: FieldFailure): T;
}

/** Field codecs of a struct, in wire order: the key order here is the order on the wire. */
export type StructFields<T> = { [K in keyof T]-?: FieldCodec<T[K]> };

function primitive<T>(expected: string, accepts: (value: unknown) => boolean): FieldCodec<T> {
  const check = (value: unknown, path: string, fail: FieldFailure): T =>
    accepts(value) ? (value as T) : fail(path, expected, value);
  return { expected, optional: false, encode: check, decode: check };
}

/** An integer in `[minimum, maximum]`. */
export function integerIn(minimum: number, maximum: number, expected: string): FieldCodec<number> {
  return primitive(
    expected,
    (value) => typeof value === 'number' && Number.isInteger(value) && value >= minimum && value <= maximum,
  );
}

/** An unsigned integer below 2¹⁶. */
export const u16 = integerIn(0, 0xffff, 'an integer in [0, 65535]');

/** An unsigned integer below 2³². */
export const u32 = integerIn(0, 0xffffffff, 'an integer in [0, 4294967295]');

/** A non-negative safe integer (counts, offsets, steps). */
export const count = integerIn(0, Number.MAX_SAFE_INTEGER, 'a non-negative safe integer');

/** A positive integer below 2³² (world sizes, tensor counts). */
export const positive = integerIn(1, 0xffffffff, 'an integer in [1, 4294967295]');

/** Any number, NaN and infinities included (losses and metrics may legitimately be NaN). */
export const number = primitive<number>('a number', (value) => typeof value === 'number');

/** A finite number. */
export const finite = primitive<number>('a finite number', (value) => Number.isFinite(value));

/** A finite non-negative number (durations in ms, masses, learning rates). */
export const nonNegative = primitive<number>(
  'a finite non-negative number',
  (value) => typeof value === 'number' && Number.isFinite(value) && value >= 0,
);

/** A boolean. */
export const boolean = primitive<boolean>('a boolean', (value) => typeof value === 'boolean');

/** A string of at most `maxLength` UTF-16 units. */
export function string(maxLength: number): FieldCodec<string> {
  return primitive(
    `a string of at most ${maxLength} characters`,
    (value) => typeof value === 'string' && value.length <= maxLength,
  );
}

/** Exactly `length` bytes. Decoding copies them out of the receive buffer. */
export function bytes(length: number): FieldCodec<Uint8Array> {
  const expected = `${length} bytes`;
  const accepts = (value: unknown): value is Uint8Array =>
    value instanceof Uint8Array && value.length === length;
  return {
    expected,
    optional: false,
    encode: (value, path, fail) => (accepts(value) ? value : fail(path, expected, value)),
    decode: (raw, path, fail) => (accepts(raw) ? raw.slice() : fail(path, expected, raw)),
  };
}

/** Between 1 and `maxLength` bytes (an opaque token). Decoding copies them out of the receive buffer. */
export function bytesUpTo(maxLength: number): FieldCodec<Uint8Array> {
  const expected = `1 to ${maxLength} bytes`;
  const accepts = (value: unknown): value is Uint8Array =>
    value instanceof Uint8Array && value.length >= 1 && value.length <= maxLength;
  return {
    expected,
    optional: false,
    encode: (value, path, fail) => (accepts(value) ? value : fail(path, expected, value)),
    // A plain Uint8Array copy, whatever view the decoder handed out (a Buffer off a socket).
    decode: (raw, path, fail) => (accepts(raw) ? new Uint8Array(raw) : fail(path, expected, raw)),
  };
}

/**
 * One of a fixed list of names, sent as its index (a byte). The list is append-only:
 * existing names keep their index forever.
 */
export function oneOf<const T extends string>(names: readonly T[]): FieldCodec<T> {
  const expected = `one of ${names.join(', ')}`;
  const indices = new Map<string, number>(names.map((name, index) => [name, index]));
  return {
    expected,
    optional: false,
    encode: (value, path, fail) => indices.get(value) ?? fail(path, expected, value),
    decode: (raw, path, fail) =>
      typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 && raw < names.length
        ? (names[raw] as T)
        : fail(path, `the index of ${expected}`, raw),
  };
}

/** The field may be absent: `undefined` in TS, nil (or left off the end) on the wire. */
export function optional<T>(inner: FieldCodec<T>): FieldCodec<T | undefined> {
  const expected = `${inner.expected} or nothing`;
  return {
    expected,
    optional: true,
    encode: (value, path, fail) =>
      value === undefined ? null : inner.encode(value, path, widen(fail, path, expected)),
    decode: (raw, path, fail) =>
      raw === null || raw === undefined ? undefined : inner.decode(raw, path, widen(fail, path, expected)),
  };
}

/** An element that may be `null` (e.g. "no value for this rank"; absent differs from zero). */
export function nullable<T>(inner: FieldCodec<T>): FieldCodec<T | null> {
  const expected = `${inner.expected} or null`;
  return {
    expected,
    optional: false,
    encode: (value, path, fail) =>
      value === null ? null : inner.encode(value, path, widen(fail, path, expected)),
    decode: (raw, path, fail) => (raw === null ? null : inner.decode(raw, path, widen(fail, path, expected))),
  };
}

/** A failure that reports `expected` (the wrapper's wording) for the wrapped value itself. */
function widen(fail: FieldFailure, path: string, expected: string): FieldFailure {
  return (failedPath, innerExpected, got) =>
    fail(failedPath, failedPath === path ? expected : innerExpected, got);
}

/** A list of at most `maxLength` elements. */
export function list<T>(element: FieldCodec<T>, maxLength: number): FieldCodec<T[]> {
  const expected = `a list of at most ${maxLength} × ${element.expected}`;
  const map = (value: unknown, path: string, fail: FieldFailure, each: 'encode' | 'decode'): T[] => {
    if (!Array.isArray(value) || value.length > maxLength) return fail(path, expected, value);
    return value.map((item, index) => element[each](item as T, `${path}[${index}]`, fail) as T);
  };
  return {
    expected,
    optional: false,
    encode: (value, path, fail) => map(value, path, fail, 'encode'),
    decode: (raw, path, fail) => map(raw, path, fail, 'decode'),
  };
}

/** A map from names to values (a MessagePack map with string keys), at most `maxEntries`. */
export function record<T>(
  value: FieldCodec<T>,
  maxEntries: number,
  maxKeyLength = 256,
): FieldCodec<Record<string, T>> {
  const expected = `a map of at most ${maxEntries} names (<= ${maxKeyLength} characters) to ${value.expected}`;
  const map = (
    input: unknown,
    path: string,
    fail: FieldFailure,
    each: 'encode' | 'decode',
  ): Record<string, T> => {
    if (!isPlainObject(input)) return fail(path, expected, input);
    const entries = Object.entries(input);
    if (entries.length > maxEntries) return fail(path, expected, `${entries.length} entries`);
    const out: Record<string, T> = {};
    for (const [key, item] of entries) {
      if (key.length > maxKeyLength) fail(`${path} key`, `at most ${maxKeyLength} characters`, key);
      out[key] = value[each](item as T, `${path}[${JSON.stringify(key)}]`, fail) as T;
    }
    return out;
  };
  return {
    expected,
    optional: false,
    encode: (input, path, fail) => map(input, path, fail, 'encode'),
    decode: (raw, path, fail) => map(raw, path, fail, 'decode'),
  };
}

/**
 * A struct: a MessagePack array of its fields in declared order. Optional fields at the
 * end may be left off, so a later version can append optional fields.
 */
export function struct<T extends object>(
  fields: StructFields<T>,
): FieldCodec<T> & { fields: StructFields<T> } {
  const entries = Object.entries(fields) as [string, FieldCodec<unknown>][];
  let required = entries.length;
  while (required > 0 && entries[required - 1]?.[1].optional) required -= 1;
  const names = entries.map(([name]) => name).join(', ');
  const arity = required === entries.length ? String(required) : `${required} to ${entries.length}`;
  const expected = `a list of ${arity} field${entries.length === 1 ? '' : 's'} (${names})`;
  return {
    expected,
    optional: false,
    fields,
    encode(value, path, fail) {
      if (!isPlainObject(value)) return fail(path, `an object with ${names}`, value);
      const out: unknown[] = [];
      for (const [name, codec] of entries)
        out.push(codec.encode((value as Record<string, unknown>)[name], `${path}.${name}`, fail));
      // Trailing absent optionals are left off: they cost nothing and keep old peers happy.
      while (out.length > required && out[out.length - 1] === null) out.pop();
      return out;
    },
    decode(raw, path, fail) {
      if (!Array.isArray(raw) || raw.length < required || raw.length > entries.length)
        return fail(path, expected, raw);
      const out: Record<string, unknown> = {};
      entries.forEach(([name, codec], index) => {
        const decoded = codec.decode(raw[index], `${path}.${name}`, fail);
        if (decoded !== undefined) out[name] = decoded;
      });
      return out as T;
    },
  };
}

/** True for `{}`-style objects (not arrays, buffers, dates or class instances). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
