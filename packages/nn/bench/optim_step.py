# The PyTorch side of `pnpm bench:optim` (bench/optim-step.mjs): times optimizer.step() of each
# optimizer with its per-tensor (foreach=False) and multi-tensor (foreach=True) update on the
# same parameter shapes, gradients fixed, and prints one JSON line: {torch, rows: [...]}.
import json
import sys
import time

try:
    import torch
except ImportError:
    sys.exit(3)

settings = json.loads(sys.argv[1])
torch.set_num_threads(settings["threads"])
torch.manual_seed(0)

MAKERS = {
    "SGD": lambda params, foreach: torch.optim.SGD(params, lr=0.01, momentum=0.9, foreach=foreach),
    "Adam": lambda params, foreach: torch.optim.Adam(params, lr=1e-3, foreach=foreach),
    "RMSprop": lambda params, foreach: torch.optim.RMSprop(params, lr=1e-3, foreach=foreach),
    "Adagrad": lambda params, foreach: torch.optim.Adagrad(params, lr=1e-2, foreach=foreach),
    "NAdam": lambda params, foreach: torch.optim.NAdam(params, lr=2e-3, foreach=foreach),
    "RAdam": lambda params, foreach: torch.optim.RAdam(params, lr=1e-3, foreach=foreach),
}


def timed(name, foreach):
    params = [torch.randn(shape, requires_grad=True) for shape in settings["shapes"]]
    for param in params:
        param.grad = torch.randn(param.shape) * 1e-3
    optimizer = MAKERS[name](params, foreach)
    for _ in range(settings["warmup"]):
        optimizer.step()
    started = time.perf_counter()
    for _ in range(settings["steps"]):
        optimizer.step()
    return (time.perf_counter() - started) / settings["steps"] * 1e6


rows = {(name, mode): [] for name in settings["optimizers"] for mode in ("single", "foreach")}
for _ in range(settings["rounds"]):
    for name in settings["optimizers"]:
        for mode in ("single", "foreach"):
            rows[(name, mode)].append(timed(name, mode == "foreach"))
print(json.dumps({
    "torch": torch.__version__,
    "rows": [{"optimizer": name, "mode": mode, "us": min(times)} for (name, mode), times in rows.items()],
}))
