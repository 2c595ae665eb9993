// The page's style sheets are bundled by esbuild; TypeScript only needs to accept the imports.
declare module '*.css';
