import { fileURLToPath } from 'node:url';
import { defineConfig } from 'tsup';
import { bundlePageAssets, PAGE_ASSET_FOLDER } from './src/monitor/page-bundle.js';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  // Declarations come from tsc (tsconfig.build.json), one file per module.
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node20',
  // esbuild is only loaded to bundle the dashboard page when running from source.
  external: ['@flodl/tensor-native', '@flodl/autograd', '@flodl/nn', 'esbuild'],
  // The dashboard page (its script, styles and uPlot) ships bundled beside dist/index.js.
  onSuccess: async () => {
    await bundlePageAssets(
      fileURLToPath(new URL(`./dist/${PAGE_ASSET_FOLDER}`, import.meta.url)),
      fileURLToPath(new URL('./src/monitor/page/client.ts', import.meta.url)),
    );
  },
});
