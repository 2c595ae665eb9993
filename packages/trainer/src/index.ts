// @flodl/trainer: the data pipeline (also at `@flodl/trainer/data`), the rank runtime and the
// managed Trainer.
export * from './data/index.js';
export * from './runtime/index.js';
export * from './trainer/index.js';
