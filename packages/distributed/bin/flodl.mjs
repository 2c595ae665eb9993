#!/usr/bin/env node
// flodl command line. In a source checkout (src/ present and tsx resolvable) it runs the
// TypeScript sources; an installed package runs the build in dist/.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const packageDir = dirname(dirname(fileURLToPath(import.meta.url)));
const sourceEntry = join(packageDir, 'src', 'launcher', 'cli.ts');

function tsxApi() {
  const candidates = [];
  if (process.env.FLODL_TSX) candidates.push(join(process.env.FLODL_TSX, 'package.json'));
  for (const from of [join(packageDir, 'noop.js'), join(process.cwd(), 'noop.js')]) {
    try {
      candidates.push(createRequire(from).resolve('tsx/package.json'));
    } catch {
      // not here
    }
  }
  for (const manifest of candidates) {
    if (!existsSync(manifest)) continue;
    const api = JSON.parse(readFileSync(manifest, 'utf8')).exports?.['./esm/api']?.import;
    const entry = typeof api === 'string' ? api : api?.default;
    if (entry) return pathToFileURL(join(dirname(manifest), entry)).href;
  }
  return undefined;
}

async function loadCli() {
  const api = existsSync(sourceEntry) ? tsxApi() : undefined;
  if (api !== undefined) {
    const { register } = await import(api);
    register();
    return import(pathToFileURL(sourceEntry).href);
  }
  const built = join(packageDir, 'dist', 'index.js');
  const module = existsSync(built) ? await import(pathToFileURL(built).href) : {};
  if (typeof module.runCli !== 'function') {
    process.stderr.write(
      'flodl: the launcher is not built. Run `pnpm --filter @flodl/distributed build`, or install tsx (or set FLODL_TSX) to run from source.\n',
    );
    process.exit(1);
  }
  return module;
}

const { runCli } = await loadCli();
process.exitCode = await runCli(process.argv.slice(2));
