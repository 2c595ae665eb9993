// binding-types.ts's NativeOpTable against the addon: the same names as the loaded addon's
// entries and as the registrations in native/ops-*.cc, the build-dependent ones (and only
// those) optional, and each entry as many parameters as its C++ body reads arguments.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { native } from '../src/internal/binding.js';
import { type NativeEntry, nativeEntries } from './helpers/native-sources.js';

interface Declared {
  readonly name: string;
  readonly optional: boolean;
  /** Parameters before a rest parameter, or all of them. */
  readonly parameters: number;
  readonly rest: boolean;
}

function declaredEntries(): Declared[] {
  const path = fileURLToPath(new URL('../src/internal/binding-types.ts', import.meta.url));
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const table = source.statements.find(
    (statement): statement is ts.InterfaceDeclaration =>
      ts.isInterfaceDeclaration(statement) && statement.name.text === 'NativeOpTable',
  );
  if (table === undefined) throw new Error('binding-types.ts declares no NativeOpTable');
  return table.members.map((member) => {
    if (!ts.isMethodSignature(member) || !ts.isIdentifier(member.name)) {
      throw new Error(`NativeOpTable: '${member.getText(source)}' is not a method signature`);
    }
    const rest = member.parameters.some((parameter) => parameter.dotDotDotToken !== undefined);
    return {
      name: member.name.text,
      optional: member.questionToken !== undefined,
      parameters: member.parameters.length - (rest ? 1 : 0),
      rest,
    };
  });
}

const declared = declaredEntries();
const registered = nativeEntries();
const loaded = Object.keys(native).filter(
  (name) => typeof (native as Record<string, unknown>)[name] === 'function',
);

function missing(names: readonly string[], from: readonly string[]): string[] {
  const present = new Set(from);
  return names.filter((name) => !present.has(name)).sort();
}

describe('NativeOpTable (binding-types.ts)', () => {
  it('declares each entry once', () => {
    const names = declared.map((entry) => entry.name);
    expect(names.filter((name, k) => names.indexOf(name) !== k)).toEqual([]);
  });

  it('declares exactly the entries native/ops-*.cc registers', () => {
    const names = declared.map((entry) => entry.name);
    const sources = registered.map((entry) => entry.name);
    expect(missing(sources, names), 'registered but not declared').toEqual([]);
    expect(missing(names, sources), 'declared but not registered').toEqual([]);
  });

  it('marks optional exactly the entries registered under a preprocessor condition', () => {
    const optional = declared.filter((entry) => entry.optional).map((entry) => entry.name);
    const conditional = registered.filter((entry) => entry.conditional).map((entry) => entry.name);
    expect(optional.sort()).toEqual(conditional.sort());
  });

  it('declares every entry of the loaded addon, which has every entry every build registers', () => {
    const names = declared.map((entry) => entry.name);
    const always = declared.filter((entry) => !entry.optional).map((entry) => entry.name);
    expect(missing(loaded, names), 'in the addon but not declared').toEqual([]);
    expect(missing(always, loaded), 'declared but not in the addon (rebuild it: build:addon)').toEqual([]);
  });

  it("gives each entry as many parameters as its C++ body reads arguments, a rest parameter where it reads integerTail's", () => {
    const byName = new Map<string, NativeEntry>(registered.map((entry) => [entry.name, entry]));
    const drift: string[] = [];
    for (const entry of declared) {
      const source = byName.get(entry.name);
      if (source === undefined) continue;
      if (source.restFrom !== undefined) {
        if (!entry.rest || entry.parameters !== source.restFrom) {
          drift.push(`${entry.name}: a rest parameter after ${source.restFrom} (${source.file})`);
        }
      } else if (entry.rest || entry.parameters !== source.arity) {
        const declaredCount = `${entry.parameters}${entry.rest ? ' and a rest' : ''}`;
        drift.push(`${entry.name}: ${declaredCount} declared, ${source.arity} read in ${source.file}`);
      }
    }
    expect(drift.join('\n')).toBe('');
  });

  it('reads the sources as they are: a sample of known entries', () => {
    const byName = new Map(registered.map((entry) => [entry.name, entry]));
    expect(byName.get('neg')).toMatchObject({ file: 'ops-elementwise.cc', arity: 1 });
    expect(byName.get('zeros')).toMatchObject({ arity: 3 });
    expect(byName.get('reshape')).toMatchObject({ restFrom: 1 });
    expect(byName.get('foreachAdam')).toMatchObject({ conditional: true, arity: 15 });
    expect(byName.get('fusedAdamW')).toMatchObject({ conditional: true, arity: 14 });
    expect(byName.get('distGroupCreate')).toMatchObject({ conditional: false, arity: 7 });
    expect(byName.get('gru')).toMatchObject({ arity: 9 });
    expect(registered.length).toBeGreaterThan(350);
  });
});
