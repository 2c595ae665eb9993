export * from './focal.js';
export * from './losses.js';
