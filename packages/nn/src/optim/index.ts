// Optimizers (PyTorch: torch.optim). Filled in by the optimizer work.
export {};
