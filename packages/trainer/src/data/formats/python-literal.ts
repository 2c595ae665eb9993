// A parser for the one Python literal a .npy header holds: a dict of str keys to str, bool,
// int-tuple values, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }.
// Never `eval`: anything outside that grammar is rejected.

/** A value of the header dict. */
export type HeaderValue = string | boolean | number[];

/** @internal Thrown with a description of what was wrong; the caller adds the file name. */
export class LiteralSyntaxError extends Error {}

/** Parses the header dict; throws LiteralSyntaxError on anything else. */
export function parseHeaderDict(text: string): Map<string, HeaderValue> {
  let position = 0;
  const fail = (what: string): never => {
    throw new LiteralSyntaxError(`${what} at character ${position} of ${JSON.stringify(text.trim())}`);
  };
  const skipSpace = () => {
    while (position < text.length && /\s/.test(text[position]!)) position++;
  };
  const expect = (char: string) => {
    skipSpace();
    if (text[position] !== char) fail(`expected '${char}'`);
    position++;
  };
  const peek = () => {
    skipSpace();
    return text[position];
  };
  const parseString = (): string => {
    const quote = peek();
    if (quote !== "'" && quote !== '"') return fail('expected a quoted string');
    const end = text.indexOf(quote, position + 1);
    if (end < 0) fail('unterminated string');
    const value = text.slice(position + 1, end);
    if (value.includes('\\')) fail('escapes are not supported in header strings');
    position = end + 1;
    return value;
  };
  const parseTuple = (): number[] => {
    expect('(');
    const values: number[] = [];
    while (peek() !== ')') {
      const match = /^\d+/.exec(text.slice(position));
      if (match === null) fail('expected a non-negative integer in the shape');
      const value = Number(match![0]);
      if (!Number.isSafeInteger(value)) fail('shape entry too large');
      values.push(value);
      position += match![0].length;
      if (peek() === ',') position++;
      else if (peek() !== ')') fail("expected ',' or ')'");
    }
    position++;
    return values;
  };
  const parseValue = (): HeaderValue => {
    const next = peek();
    if (next === "'" || next === '"') return parseString();
    if (next === '(') return parseTuple();
    if (text.startsWith('True', position)) {
      position += 4;
      return true;
    }
    if (text.startsWith('False', position)) {
      position += 5;
      return false;
    }
    return fail('expected a string, True, False or a tuple');
  };

  const entries = new Map<string, HeaderValue>();
  expect('{');
  while (peek() !== '}') {
    const key = parseString();
    if (entries.has(key)) fail(`duplicate key '${key}'`);
    expect(':');
    entries.set(key, parseValue());
    if (peek() === ',') position++;
    else if (peek() !== '}') fail("expected ',' or '}'");
  }
  position++;
  skipSpace();
  if (position !== text.length) fail('unexpected text after the dict');
  return entries;
}
