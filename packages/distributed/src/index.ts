// @flodl/distributed: the wire protocol, the ElChe coordinator, averaging and the launcher.
export * from './averaging/index.js';
export * from './coordinator/index.js';
export * from './launcher/index.js';
export * from './monitor/index.js';
export * from './rank/index.js';
export * from './session/index.js';
export * from './wire/index.js';
