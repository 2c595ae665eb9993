#!/usr/bin/env node
// After `tsup && tsc -p tsconfig.build.json` in a package: marks dist/cjs/ as CommonJS and
// copies the declarations there, so `require` resolves to types in CommonJS form
// (TypeScript's node16 resolution reads a .d.ts by the nearest package.json's "type").
import { cpSync, existsSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const dist = join(process.cwd(), 'dist');
const cjs = join(dist, 'cjs');
if (!existsSync(join(cjs, 'index.js'))) {
  console.error(`cjs-types: ${relative(process.cwd(), cjs)}/index.js is missing; run tsup first`);
  process.exit(1);
}
writeFileSync(join(cjs, 'package.json'), `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`);

function copyDeclarations(from, to) {
  for (const name of readdirSync(from)) {
    const source = join(from, name);
    if (source === cjs) continue;
    if (statSync(source).isDirectory()) copyDeclarations(source, join(to, name));
    else if (name.endsWith('.d.ts')) cpSync(source, join(to, name));
  }
}
copyDeclarations(dist, cjs);
