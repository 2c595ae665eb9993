// The tsup configuration every package builds with: ESM in dist/ and CommonJS in dist/cjs/
// (a `{"type":"commonjs"}` package.json there, written by scripts/cjs-types.mjs, makes its
// .js and .d.ts files CommonJS). Declarations come from tsc, one file per module, so that
// tensor-native's `declare module './tensor.js'` augmentations reach users.

/**
 * @param {{ entry: Record<string, string> | string[]; external?: string[] }} options
 * @returns {import('tsup').Options[]}
 */
export function dualConfig({ entry, external = [] }) {
  const shared = { entry, external, dts: false, sourcemap: true, target: 'node20' };
  return [
    // Cleans dist/ except the CommonJS folder, which the second build cleans itself.
    // Entries share chunks, so a subpath and the root share one copy of each class.
    { ...shared, format: ['esm'], outDir: 'dist', splitting: true, clean: ['**/*', '!cjs', '!cjs/**'] },
    {
      ...shared,
      format: ['cjs'],
      outDir: 'dist/cjs',
      clean: true,
      // One file per entry: each computes its own `import.meta.url` (a shared chunk would give
      // the chunk's path, and RankClient starts its worker thread on its own file).
      splitting: false,
      shims: true,
      outExtension: () => ({ js: '.js' }),
    },
  ];
}
