// The differentiable functional ops (PyTorch: torch.nn.functional), one family per file.
export * from './activation.js';
export * from './attention.js';
export * from './conv.js';
export * from './dropout.js';
export * from './embedding.js';
export * from './linear.js';
export * from './loss.js';
export * from './normalization.js';
export * from './padding.js';
export * from './pooling.js';
export * from './recurrent.js';
export * from './vision.js';
