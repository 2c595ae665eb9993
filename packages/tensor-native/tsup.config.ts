import { defineConfig } from 'tsup';
import { dualConfig } from '../../scripts/tsup-dual.mjs';

// ESM in dist/, CommonJS in dist/cjs/; declarations from tsc (see scripts/tsup-dual.mjs).
export default defineConfig(
  dualConfig({
    entry: ['src/index.ts'],
    external: [],
  }),
);
