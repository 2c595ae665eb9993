import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/pool.ts'],
  format: ['esm'],
  // Declarations come from tsc (tsconfig.build.json), one file per module.
  dts: false,
  sourcemap: true,
  clean: true,
  target: 'node20',
  external: ['vitest', 'vitest/node'],
});
