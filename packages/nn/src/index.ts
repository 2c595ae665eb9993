// @flodl/nn: modules, layers, losses, init, optimizers, schedulers, checkpoints, AMP.

export { type AutocastOptions, autocast } from './amp/autocast.js';
export {
  GradScaler,
  type GradScalerOptions,
  type GradScalerState,
  type ScalableOptimizer,
} from './amp/grad-scaler.js';
export { type CapturedLossFn, CapturedStep, type CapturedStepOptions } from './captured-step.js';
export { load, save } from './checkpoint/module-io.js';
export { loadOptimizer, saveOptimizer } from './checkpoint/optimizer-io.js';
export {
  type ByteDigest,
  MAX_HEADER_BYTES,
  readSafetensors,
  readSafetensorsMetadata,
  type SafetensorsContents,
  type SafetensorsMetadata,
  writeFileAtomic,
  writeSafetensors,
} from './checkpoint/safetensors.js';
export * from './clip.js';
export { ModuleDict, ModuleList, ParameterList, Sequential } from './containers.js';
export * as init from './init.js';
export * from './layers/index.js';
export * from './losses/index.js';
export { type LoadReport, Module } from './module.js';
export * from './optim/index.js';
export { Buffer, type BufferConstructor, Parameter, type ParameterConstructor } from './parameter.js';
export * from './schedulers/index.js';
