// Learning-rate schedulers (PyTorch: torch.optim.lr_scheduler). Filled in by the optimizer work.
export {};
