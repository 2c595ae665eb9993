// Bundling the dashboard page (its TypeScript, styles and uPlot) with esbuild. Node and esbuild
// only: the package's build (tsup.config.ts) imports it to ship the page in dist.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The dashboard page's script and styles (uPlot included), as text for inline tags. */
export interface PageAssets {
  script: string;
  css: string;
}

/** The folder the build writes the bundled page into, beside the package's `dist/index.js`. */
export const PAGE_ASSET_FOLDER = 'monitor-page';

/** The page's entry, bundled with uPlot by esbuild (at build time, or from source in development). */
export const CLIENT_ENTRY = join(dirname(fileURLToPath(import.meta.url)), 'page', 'client.ts');

/**
 * Bundles the page from its source with esbuild into `outdir` (`client.js`, `client.css`), or
 * in memory when `outdir` is absent. The package's build calls it; a run from source (tests)
 * bundles in memory on first use.
 */
export async function bundlePageAssets(outdir?: string, entry = CLIENT_ENTRY): Promise<PageAssets> {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    minify: true,
    legalComments: 'inline',
    logLevel: 'error',
    write: outdir !== undefined,
    outdir: outdir ?? join(dirname(entry), 'out'),
    entryNames: 'client',
  });
  if (outdir !== undefined) {
    return {
      script: readFileSync(join(outdir, 'client.js'), 'utf8'),
      css: readFileSync(join(outdir, 'client.css'), 'utf8'),
    };
  }
  const text = (suffix: string): string =>
    result.outputFiles?.find((file) => file.path.endsWith(suffix))?.text ?? '';
  return { script: text('.js'), css: text('.css') };
}
