#!/usr/bin/env node
// `npm test`: set-up (scripts/setup.mjs), the import-cycle check (scripts/check-cycles.mjs),
// then every package's tests through turbo, then one closing line that sums the vitest JSON
// reports: "tests: N passed, N failed, N skipped".
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runPnpm } from './pnpm.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const packageDirs = ['packages', 'apps']
  .filter((group) => existsSync(join(root, group)))
  .flatMap((group) => readdirSync(join(root, group)).map((name) => join(root, group, name)));
const reports = packageDirs.map((dir) => join(dir, 'test-results.json'));
for (const report of reports) rmSync(report, { force: true });

const cycles = spawnSync(process.execPath, [join(root, 'scripts', 'check-cycles.mjs')], { stdio: 'inherit' });

const result = runPnpm([
  'exec',
  'turbo',
  'run',
  'lint',
  'typecheck',
  'test',
  '--concurrency=1',
  '--output-logs=new-only',
  ...process.argv.slice(2),
]);

let passed = 0;
let failed = 0;
let skipped = 0;
for (const report of reports) {
  if (!existsSync(report)) continue;
  const data = JSON.parse(readFileSync(report, 'utf8'));
  passed += data.numPassedTests ?? 0;
  failed += data.numFailedTests ?? 0;
  skipped += (data.numPendingTests ?? 0) + (data.numTodoTests ?? 0);
}
const status = cycles.status !== 0 ? 1 : (result.status ?? 1);
if (status !== 0 && failed === 0) failed = 1; // a build, lint or typecheck failure counts as a failure
console.log(`tests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(status);
