import { fileURLToPath } from 'node:url';
import { defineConfig } from 'tsup';
import { dualConfig } from '../../scripts/tsup-dual.mjs';
import { bundlePageAssets, PAGE_ASSET_FOLDER } from './src/monitor/page-bundle.js';

// ESM in dist/, CommonJS in dist/cjs/; declarations from tsc (see scripts/tsup-dual.mjs).
// esbuild is only loaded to bundle the dashboard page when running from source.
const builds = dualConfig({
  entry: {
    index: 'src/index.ts',
    'wire/index': 'src/wire/index.ts',
    'coordinator/index': 'src/coordinator/index.ts',
  },
  external: [/^@flodl\//, 'esbuild'],
});

// The dashboard page (its script, styles and uPlot) ships bundled beside each build's index.js.
export default defineConfig(
  builds.map((build) => ({
    ...build,
    onSuccess: async () => {
      await bundlePageAssets(
        fileURLToPath(new URL(`./${build.outDir}/${PAGE_ASSET_FOLDER}`, import.meta.url)),
        fileURLToPath(new URL('./src/monitor/page/client.ts', import.meta.url)),
      );
    },
  })),
);
