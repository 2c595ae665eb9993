// @flodl/autograd: autograd over libtorch's own engine.

export { autogradGrad as grad } from '@flodl/tensor-native';
export * from './functional/index.js';
export * as F from './functional/index.js';
export {
  enableGrad,
  type InferenceModeOptions,
  inferenceMode,
  isGradEnabled,
  isInferenceModeEnabled,
  noGrad,
  setGradEnabled,
} from './grad-mode.js';
export { type GradcheckOptions, gradcheck } from './gradcheck.js';
export { Variable, type VariableConstructor } from './variable.js';
