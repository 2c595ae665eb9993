"""Golden values of torch.nn.init for test/init.test.ts: each initialiser applied to a fresh
tensor right after torch.manual_seed(seed). flodl draws from the same libtorch generator in
the same order, so the values must match.

Regenerate with Debian's PyTorch (python3-torch):
    pnpm --filter @flodl/nn run goldens      # runs every scripts/make-*.py
"""
import math
import os
import sys

import torch
from torch.nn import init

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import write_json  # noqa: E402

CASES = [
    ("uniform_", [3, 4], lambda t: init.uniform_(t, -0.5, 2.0)),
    ("normal_", [3, 4], lambda t: init.normal_(t, 1.0, 0.5)),
    ("xavierUniform_", [6, 5], lambda t: init.xavier_uniform_(t, gain=1.5)),
    ("xavierNormal_", [6, 5], lambda t: init.xavier_normal_(t)),
    ("kaimingUniform_ a=sqrt5", [8, 3, 2, 2], lambda t: init.kaiming_uniform_(t, a=math.sqrt(5))),
    ("kaimingUniform_ fan_out relu", [8, 3], lambda t: init.kaiming_uniform_(t, mode="fan_out", nonlinearity="relu")),
    ("kaimingNormal_", [8, 3], lambda t: init.kaiming_normal_(t, nonlinearity="relu")),
    ("truncNormal_", [5, 6], lambda t: init.trunc_normal_(t, mean=0.5, std=2.0, a=-1.0, b=3.0)),
    ("orthogonal_ tall", [6, 3], lambda t: init.orthogonal_(t)),
    ("orthogonal_ wide", [3, 6], lambda t: init.orthogonal_(t, gain=2.0)),
    ("orthogonal_ conv", [4, 2, 3], lambda t: init.orthogonal_(t)),
]

cases = []
for seed, (name, shape, fill) in enumerate(CASES):
    torch.manual_seed(seed)
    tensor = torch.empty(shape)
    fill(tensor)
    cases.append({"name": name, "seed": seed, "shape": shape, "values": tensor.reshape(-1).tolist()})

path = os.path.join(os.path.dirname(__file__), "..", "test", "fixtures", "init.json")
write_json(path, {"torch": torch.__version__, "cases": cases})
print(f"wrote {path}: {len(cases)} cases")
