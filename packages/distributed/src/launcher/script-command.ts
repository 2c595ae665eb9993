import { readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FlodlError } from '@flodl/tensor-native';

/** Environment variable pointing at a tsx install (its folder) when it is not resolvable otherwise. */
export const TSX_ENV = 'FLODL_TSX';

const TYPESCRIPT = new Set(['.ts', '.mts', '.cts']);
const JAVASCRIPT = new Set(['.js', '.mjs', '.cjs']);

/**
 * The Node arguments that run `script`: plain `node` for JavaScript, `node --import tsx`
 * for TypeScript (tsx resolved from `FLODL_TSX`, the script's folder, the working
 * directory, then this package).
 *
 * @throws FlodlError ERR_INVALID_ARGUMENT for another extension, a script that is not a file
 *   (named by its resolved path), or a `.ts` script without tsx
 */
export function scriptCommand(script: string, nodeArgs: readonly string[] = []): string[] {
  const path = resolve(script);
  const extension = extname(path);
  if (!JAVASCRIPT.has(extension) && !TYPESCRIPT.has(extension)) {
    throw new FlodlError('ERR_INVALID_ARGUMENT', 'invalid script', {
      op: 'launch',
      expected: 'a .js, .mjs, .cjs, .ts or .mts file',
      got: JSON.stringify(script),
    });
  }
  checkScriptFile(script, path);
  if (JAVASCRIPT.has(extension)) return [...nodeArgs, path];
  return [...nodeArgs, '--import', resolveTsx(path).loaderUrl, path];
}

/** Refuses a script that is not a file before any rank starts (each would fail alone, without a record). */
function checkScriptFile(script: string, path: string): void {
  const found = statSync(path, { throwIfNoEntry: false });
  if (found?.isFile()) return;
  throw new FlodlError(
    'ERR_INVALID_ARGUMENT',
    `the rank script ${path} ${found ? 'is not a file' : 'does not exist'}`,
    {
      op: 'launch',
      expected: 'the path of the script every rank runs (relative to the working directory)',
      got: path === script ? path : `${JSON.stringify(script)} (in ${process.cwd()})`,
    },
  );
}

/** Where tsx was found: its package folder, its `--import` loader and its `register` API. */
export interface TsxLocation {
  directory: string;
  loaderUrl: string;
  apiUrl: string;
}

/**
 * Finds tsx.
 *
 * @param near A file whose folder is searched first (after `FLODL_TSX`).
 * @throws FlodlError ERR_INVALID_ARGUMENT when tsx is nowhere to be found
 */
export function resolveTsx(near: string = process.cwd()): TsxLocation {
  const tried: string[] = [];
  const explicit = process.env[TSX_ENV];
  const candidates: string[] = [];
  if (explicit) {
    tried.push(`${TSX_ENV}=${explicit}`);
    const manifest = join(explicit, 'package.json');
    try {
      return locate(dirname(manifest), JSON.parse(readFileSync(manifest, 'utf8')));
    } catch {
      // fall through to the other places, and name this one in the error
    }
  }
  candidates.push(
    join(dirname(resolve(near)), 'noop.js'),
    join(process.cwd(), 'noop.js'),
    fileURLToPath(import.meta.url),
  );
  for (const from of candidates) {
    tried.push(dirname(from));
    try {
      const manifest = createRequire(from).resolve('tsx/package.json');
      return locate(dirname(manifest), JSON.parse(readFileSync(manifest, 'utf8')));
    } catch {
      // not here
    }
  }
  throw new FlodlError('ERR_INVALID_ARGUMENT', 'cannot run a TypeScript script: tsx is not installed', {
    op: 'launch',
    expected: `tsx resolvable from the script (pnpm add -D tsx), ${TSX_ENV} pointing at a tsx folder, or a compiled .js script`,
    got: `no tsx in ${tried.join(', ')}`,
  });
}

interface TsxManifest {
  exports?: Record<string, unknown>;
}

function locate(directory: string, manifest: TsxManifest): TsxLocation {
  const loader = entry(manifest.exports?.['.']) ?? './dist/loader.mjs';
  const api = entry(manifest.exports?.['./esm/api']) ?? './dist/esm/api/index.mjs';
  return {
    directory,
    loaderUrl: pathToFileURL(join(directory, loader)).href,
    apiUrl: pathToFileURL(join(directory, api)).href,
  };
}

function entry(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value !== 'object' || value === null) return undefined;
  const conditions = value as Record<string, unknown>;
  return entry(conditions.import) ?? entry(conditions.default);
}
