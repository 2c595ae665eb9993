// @flodl/autograd: autograd over libtorch's own engine.
export { Variable, type VariableConstructor } from './variable.js';
export { enableGrad, isGradEnabled, noGrad, setGradEnabled } from './grad-mode.js';
export { gradcheck, type GradcheckOptions } from './gradcheck.js';
export { autogradGrad as grad } from '@flodl/tensor-native';
export * from './functional/index.js';
export * as F from './functional/index.js';
