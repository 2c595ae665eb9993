// The tsup configuration every package builds with: ESM in dist/ and CommonJS in dist/cjs/
// (a `{"type":"commonjs"}` package.json there, written by scripts/cjs-types.mjs, makes its
// .js and .d.ts files CommonJS). Declarations come from tsc, one file per module, so that
// tensor-native's `declare module './tensor.js'` augmentations reach users.

/**
 * @param {{ entry: Record<string, string> | string[]; external?: string[] }} options
 * @returns {import('tsup').Options[]}
 */
export function dualConfig({ entry, external = [] }) {
  const shared = { entry, external, dts: false, sourcemap: true, target: 'node20', splitting: true };
  return [
    // Cleans dist/ except the CommonJS folder, which the second build cleans itself.
    { ...shared, format: ['esm'], outDir: 'dist', clean: ['**/*', '!cjs', '!cjs/**'] },
    {
      ...shared,
      format: ['cjs'],
      outDir: 'dist/cjs',
      clean: true,
      shims: true,
      outExtension: () => ({ js: '.js' }),
    },
  ];
}
