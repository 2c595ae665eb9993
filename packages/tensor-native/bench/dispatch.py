"""Per-op dispatch cost of PyTorch from Python on small tensors (the reference side of
`pnpm bench:dispatch`). Prints one JSON object: op name -> nanoseconds per op.
Arguments: iterations, device (cpu or cuda; on cuda the clock is read after a synchronize),
repeats (the best of this many timings is kept; default 3)."""
import json
import sys
import time

import torch

torch.set_num_threads(1)
iterations = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
device = sys.argv[2] if len(sys.argv) > 2 else "cpu"
repeats = max(1, int(sys.argv[3])) if len(sys.argv) > 3 else 3
sync = torch.cuda.synchronize if device != "cpu" else (lambda: None)
torch.manual_seed(0)
x = torch.rand(64, device=device)
y = torch.rand(64, device=device)
m = torch.rand(8, 8, device=device)
n = torch.rand(8, 8, device=device)
index = torch.tensor([1, 3, 5], dtype=torch.long, device=device)
w = torch.rand(64, requires_grad=True, device=device)

cases = {
    "add": lambda: torch.add(x, y),
    "mul": lambda: x * y,
    "relu": lambda: torch.relu(x),
    "sum": lambda: x.sum(),
    "matmul 8x8": lambda: m @ n,
    "reshape": lambda: x.reshape(8, 8),
    "select m[3]": lambda: m[3],
    "narrow": lambda: m.narrow(0, 2, 3),
    "index_select": lambda: m.index_select(0, index),
    "add (grad)": lambda: w + y,
}

results = {}
for name, fn in cases.items():
    for _ in range(2000):
        fn()
    sync()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(iterations):
            fn()
        sync()
        best = min(best, (time.perf_counter_ns() - start) / iterations)
    results[name] = best
print(json.dumps({"torch": torch.__version__, "results": results}))
