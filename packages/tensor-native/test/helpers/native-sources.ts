// What the addon's C++ sources say about each native entry, read as text: the names
// native/ops-*.cc registers (and which of them only under a preprocessor condition), and the
// highest argument index each entry's body reads through call.h's readers, its own helpers'
// included. test/binding-table.test.ts holds binding-types.ts's NativeOpTable to these.
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const NATIVE = fileURLToPath(new URL('../../native/', import.meta.url));

/** What one registered entry's sources read. */
export interface NativeEntry {
  /** The name on the exports object. */
  readonly name: string;
  /** The ops file that registers it. */
  readonly file: string;
  /** Registered inside an `#if`/`#ifdef` of the register function: some builds only. */
  readonly conditional: boolean;
  /** How many arguments the body reads: the highest index read plus one (0: none). */
  readonly arity: number;
  /** The index from which `integerTail` reads the sizes as numbers (a rest parameter), if any. */
  readonly restFrom: number | undefined;
}

// call.h's argument readers: c.reader(index).
const READERS = [
  'tensor',
  'tensors',
  'number',
  'integer',
  'optionalInteger',
  'flag',
  'scalar',
  'optionalScalar',
  'integers',
  'integerTail',
  'dtype',
  'optionalDtype',
  'device',
  'string',
  'isAbsent',
  'invalid',
];

function stripComments(source: string): string {
  return source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, '');
}

/** The text from `open` (an index just past an opening brace or parenthesis) to its match. */
function enclosed(text: string, open: number, left = '{', right = '}'): string {
  let depth = 1;
  let k = open;
  while (depth > 0 && k < text.length) {
    if (text[k] === left) depth++;
    else if (text[k] === right) depth--;
    k++;
  }
  return text.slice(open, k - 1);
}

/** The top-level comma-separated pieces of an argument or parameter list. */
function splitList(list: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let k = 0; k < list.length; k++) {
    const ch = list[k];
    if (ch === '(' || ch === '{' || ch === '<' || ch === '[') depth++;
    else if (ch === ')' || ch === '}' || ch === '>' || ch === ']') depth--;
    else if (ch === ',' && depth === 0) {
      parts.push(list.slice(start, k).trim());
      start = k + 1;
    }
  }
  const last = list.slice(start).trim();
  if (last !== '') parts.push(last);
  return parts;
}

interface Helper {
  readonly parameters: string[];
  readonly body: string;
}

/** The functions of one file that take the call (`Call& c`), by name. */
function helpersOf(text: string): Map<string, Helper> {
  const helpers = new Map<string, Helper>();
  const signature =
    /\b(\w+)\(((?:[^(){};]|\([^()]*\))*\bCall&\s*c\b(?:[^(){};]|\([^()]*\))*)\)\s*(?:const\s*)?\{/g;
  for (const match of text.matchAll(signature)) {
    const name = match[1]!;
    const parameters = splitList(match[2]!).map((parameter) => parameter.split(/[\s&*]+/).pop() ?? '');
    helpers.set(name, { parameters, body: enclosed(text, match.index + match[0].length) });
  }
  return helpers;
}

interface Reads {
  highest: number;
  restFrom: number | undefined;
}

/**
 * The argument indices `body` reads, where `bases` gives the value of a helper's index
 * parameters; reads at non-constant indices (a loop's) are not counted.
 */
function readsOf(body: string, helpers: Map<string, Helper>, bases: Map<string, number>, depth = 0): Reads {
  const reads: Reads = { highest: -1, restFrom: undefined };
  const resolve = (expression: string): number | undefined => {
    const match = /^\s*(\w+)\s*(?:\+\s*(\d+))?\s*$/.exec(expression);
    if (match === null) return undefined;
    const offset = Number(match[2] ?? 0);
    if (/^\d+$/.test(match[1]!)) return Number(match[1]) + offset;
    const base = bases.get(match[1]!);
    return base === undefined ? undefined : base + offset;
  };
  const note = (index: number | undefined): void => {
    if (index !== undefined && index > reads.highest) reads.highest = index;
  };
  for (const match of body.matchAll(/\bc\.(\w+)\(([^(),]*)[,)]/g)) {
    if (!READERS.includes(match[1]!)) continue;
    const index = resolve(match[2]!);
    note(index);
    if (match[1] === 'integerTail') reads.restFrom = index;
  }
  for (const match of body.matchAll(/\bc\.info\[([^\]]*)\]/g)) note(resolve(match[1]!));
  if (depth > 4) return reads;
  for (const [name, helper] of helpers) {
    for (const call of body.matchAll(new RegExp(`\\b${name}\\(`, 'g'))) {
      const args = splitList(enclosed(body, call.index + call[0].length, '(', ')'));
      if (!args.includes('c')) continue;
      const inner = new Map<string, number>();
      helper.parameters.forEach((parameter, k) => {
        const value = args[k] === undefined ? undefined : resolve(args[k]);
        if (value !== undefined) inner.set(parameter, value);
      });
      const nested = readsOf(helper.body, helpers, inner, depth + 1);
      note(nested.highest);
      if (nested.restFrom !== undefined) reads.restFrom = nested.restFrom;
    }
  }
  return reads;
}

/** The bodies of the entries a file defines (`FLODL_OP(name)`, or a macro that expands to one). */
function bodiesOf(text: string): Map<string, string[]> {
  const bodies = new Map<string, string[]>();
  const add = (name: string, body: string): void => {
    const list = bodies.get(name) ?? [];
    list.push(body);
    bodies.set(name, list);
  };
  const joined = text.replace(/\\\n/g, '\n');
  for (const match of joined.matchAll(/FLODL_OP\((\w+)\)\s*\{/g)) {
    add(match[1]!, enclosed(joined, match.index + match[0].length));
  }
  // Macros that define entries: `#define UNARY(NAME, EXPR) FLODL_OP(NAME) { ... }`, then `UNARY(neg, ...)`.
  for (const define of text.matchAll(/#define (\w+)\(([^)]*)\)((?:[^\n]*\\\n)*[^\n]*)/g)) {
    const macro = define[1]!;
    const parameters = splitList(define[2]!);
    const expansion = define[3]!.replace(/\\\n/g, '\n');
    const open = /FLODL_OP\(\w+\)\s*\{/.exec(expansion);
    if (open === null) continue;
    const template = enclosed(expansion, open.index + open[0].length);
    for (const use of joined.matchAll(new RegExp(`^${macro}\\(`, 'gm'))) {
      const args = splitList(enclosed(joined, use.index + use[0].length, '(', ')'));
      let body = template;
      parameters.forEach((parameter, k) => {
        body = body.replace(new RegExp(`\\b${parameter}\\b`, 'g'), args[k] ?? '');
      });
      add(args[0]!, body);
    }
  }
  return bodies;
}

/** Every entry the ops files register, with what its body reads. */
export function nativeEntries(): NativeEntry[] {
  const entries: NativeEntry[] = [];
  const files = readdirSync(NATIVE)
    .filter((file) => /^ops-.*\.cc$/.test(file))
    .sort();
  for (const file of files) {
    const text = stripComments(readFileSync(NATIVE + file, 'utf8'));
    const helpers = helpersOf(text);
    const bodies = bodiesOf(text);
    const register = /\bvoid register\w+Ops\(Registry& r\)\s*\{/.exec(text);
    if (register === null) throw new Error(`${file}: no register function`);
    let level = 0;
    for (const line of enclosed(text, register.index + register[0].length).split('\n')) {
      if (/^\s*#if/.test(line)) level++;
      else if (/^\s*#endif/.test(line)) level--;
      const match = /FLODL_REGISTER\(r, (\w+)\)|r\.add\("(\w+)", &op_(\w+)\)/.exec(line);
      if (match === null) continue;
      const name = match[1] ?? match[2]!;
      const definitions = bodies.get(match[1] ?? match[3]!) ?? [];
      if (definitions.length === 0) throw new Error(`${file}: no body for ${name}`);
      // An entry with #if branches (a CUDA or c10d build and a stub) reads what its fullest one reads.
      let arity = 0;
      let restFrom: number | undefined;
      for (const body of definitions) {
        const reads = readsOf(body, helpers, new Map());
        arity = Math.max(arity, reads.highest + 1);
        restFrom ??= reads.restFrom;
      }
      entries.push({ name, file, conditional: level > 0, arity, restFrom });
    }
  }
  return entries;
}
