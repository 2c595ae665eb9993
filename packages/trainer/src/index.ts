// @flodl/trainer: the data pipeline (also at `@flodl/trainer/data`), the rank runtime and the
// managed Trainer, checkpoint bundles, and the progress display of a run.
export * from './checkpoint/index.js';
export * from './data/index.js';
export * from './progress/index.js';
export * from './runtime/index.js';
export * from './trainer/index.js';
