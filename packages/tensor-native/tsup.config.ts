import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts'],
  format: ['esm'],
  // Declarations come from tsc (tsconfig.build.json), one file per module, so that the op
  // families' `declare module './tensor.js'` augmentations reach users; a bundled .d.ts drops them.
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node20',
});
