// @flodl/trainer: training for flodl. The data pipeline is also at `@flodl/trainer/data`.
export * from './data/index.js';
