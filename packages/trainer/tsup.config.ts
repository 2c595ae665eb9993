import { defineConfig } from 'tsup';

export default defineConfig({
  // The root entry and the `@flodl/trainer/data` subpath each get their own file.
  entry: { index: 'src/index.ts', 'data/index': 'src/data/index.ts' },
  format: ['esm'],
  // Declarations come from tsc (tsconfig.build.json), one file per module.
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node20',
  external: ['@flodl/tensor-native', '@flodl/autograd', '@flodl/nn'],
});
