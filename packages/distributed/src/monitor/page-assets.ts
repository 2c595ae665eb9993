import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FlodlError } from '@flodl/tensor-native';
import { bundlePageAssets, CLIENT_ENTRY, PAGE_ASSET_FOLDER, type PageAssets } from './page-bundle.js';

export type { PageAssets };

let cached: Promise<PageAssets> | undefined;

/** The built assets shipped in the package, when this module runs from `dist`. */
function shippedAssets(): PageAssets | undefined {
  const here = dirname(fileURLToPath(import.meta.url));
  for (const folder of [join(here, PAGE_ASSET_FOLDER), join(here, '..', PAGE_ASSET_FOLDER)]) {
    const script = join(folder, 'client.js');
    if (existsSync(script))
      return { script: readFileSync(script, 'utf8'), css: readFileSync(join(folder, 'client.css'), 'utf8') };
  }
  return undefined;
}

/**
 * The page's assets: the ones built into the package, or (running from source) bundled once.
 *
 * @throws `ERR_IO` when neither is possible (a broken install: rebuild the package).
 */
export function pageAssets(): Promise<PageAssets> {
  cached ??= (async () => {
    const shipped = shippedAssets();
    if (shipped) return shipped;
    if (!existsSync(CLIENT_ENTRY))
      throw new FlodlError('ERR_IO', 'the dashboard page is missing from the package', {
        op: 'startDashboard',
        expected: `${PAGE_ASSET_FOLDER}/client.js beside dist/index.js`,
        got: 'no bundled page',
      });
    return bundlePageAssets();
  })();
  cached.catch(() => {
    cached = undefined;
  });
  return cached;
}
