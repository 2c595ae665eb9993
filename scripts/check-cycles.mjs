#!/usr/bin/env node
// Fails when a package's source files import each other in a circle (ARCHITECTURE.md: no
// cycles). Reads every packages/*/src/**/*.ts and apps/*/src/**/*.ts, follows relative imports
// and re-exports (type-only ones too, as `madge --circular` does: a type circle is a layering
// circle), and prints each circle found as its files. It also fails when a file outside a
// package's src/internal/ imports that package's raw native binding (STYLE.md). `npm test` runs it.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** Every .ts file under `dir` (declaration files excepted). */
function sourceFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const STATEMENT = /^\s*(?:import|export)\s+(?:type\s+)?[^;]*?\s+from\s+['"](\.[^'"]+)['"]/gm;
const SIDE_EFFECT = /^\s*import\s+['"](\.[^'"]+)['"]/gm;

/** The file a relative specifier names ('./tensor.js' → tensor.ts, './internal' → internal/index.ts). */
function resolveSpecifier(from, specifier) {
  const base = resolve(dirname(from), specifier);
  const candidates = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')];
  return candidates.find((candidate) => existsSync(candidate) && statSync(candidate).isFile());
}

/** The files one file imports or re-exports from. */
function edgesOf(file) {
  const text = readFileSync(file, 'utf8');
  const targets = [];
  for (const [, specifier] of text.matchAll(STATEMENT)) targets.push(specifier);
  for (const [, specifier] of text.matchAll(SIDE_EFFECT)) targets.push(specifier);
  return targets
    .map((specifier) => resolveSpecifier(file, specifier))
    .filter((target) => target !== undefined);
}

/** The strongly connected components with more than one file, or a file importing itself (Tarjan). */
function circles(graph) {
  let counter = 0;
  const index = new Map();
  const low = new Map();
  const stack = [];
  const onStack = new Set();
  const found = [];
  const visit = (node) => {
    index.set(node, counter);
    low.set(node, counter);
    counter++;
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node), low.get(next)));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node), index.get(next)));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component = [];
    let member;
    do {
      member = stack.pop();
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.reverse());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

const groups = ['packages', 'apps'].filter((group) => existsSync(join(root, group)));
const sources = groups
  .flatMap((group) => readdirSync(join(root, group)).map((name) => join(root, group, name, 'src')))
  .filter((dir) => existsSync(dir));
const graph = new Map();
for (const file of sources.flatMap(sourceFiles)) graph.set(file, edgesOf(file));

/**
 * Imports of a package's raw native binding (`src/internal/binding.ts`) from outside that
 * package's `src/internal/` (STYLE.md: only src/internal/ touches the raw binding).
 */
function bindingLeaks(graph) {
  const leaks = [];
  for (const [file, targets] of graph) {
    for (const target of targets) {
      if (!target.endsWith(join('src', 'internal', 'binding.ts'))) continue;
      const internalDir = dirname(target);
      if (!file.startsWith(`${internalDir}/`)) leaks.push([file, target]);
    }
  }
  return leaks;
}

const found = circles(graph);
const leaks = bindingLeaks(graph);
if (found.length === 0) {
  console.log(`import cycles: none in ${graph.size} source files`);
} else {
  console.error(`import cycles: ${found.length} circle(s) of source files importing each other`);
  for (const component of found)
    console.error(`  ${component.map((file) => relative(root, file)).join(' ⇄ ')}`);
}
if (leaks.length === 0) {
  console.log('raw binding: imported only from src/internal/');
} else {
  console.error(
    `raw binding: ${leaks.length} file(s) outside src/internal/ import it (go through src/internal/, e.g. nativeOps)`,
  );
  for (const [file, target] of leaks) console.error(`  ${relative(root, file)} → ${relative(root, target)}`);
}
if (found.length > 0 || leaks.length > 0) process.exit(1);
