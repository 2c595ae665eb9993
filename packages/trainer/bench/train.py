#!/usr/bin/env python3
"""PyTorch side of `pnpm bench:train` (bench/pytorch-side.mjs runs it as a worker).

Prints one JSON line with the versions and CUDA settings once torch is loaded, then reads one
JSON line per model from stdin (name, batch, inputShape, classes, steps, warmup and optionally
adam, the update mode of that run), builds the same model as bench/models.mjs, trains it with
Adam (lr 1e-3) in eager mode on synthetic data
made once on the device, and answers one JSON line: samples/s, seconds and the last loss.
cudnn.benchmark stays off (flodl cannot turn it on); the TF32 switches keep PyTorch's
defaults, which are libtorch's and so flodl's too (matmul off, cuDNN convolutions on).

    echo '{"name": "mlp", "batch": 256, "inputShape": [784], "classes": 10, "steps": 10, "warmup": 2}' |
        python3 bench/train.py --device cpu --threads 2
"""
import argparse
import json
import os
import platform
import re
import sys
import time
import warnings

try:
    import torch
    from torch import nn
except ImportError as error:
    print(f"{sys.executable}: {error}", file=sys.stderr)
    sys.exit(3)  # bench/train.mjs then tries the next interpreter


class LstmClassifier(nn.Module):
    """Two stacked LSTM layers over (N, L, 64), a linear classifier on the last step's output."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(64, 256, num_layers=2, batch_first=True)
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        output, _ = self.lstm(x)
        return self.head(output[:, -1])


class TransformerClassifier(nn.Module):
    """A transformer encoder over (N, L, 256), mean-pooled over the sequence, a linear classifier."""

    def __init__(self):
        super().__init__()
        layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
        self.head = nn.Linear(256, 10)

    def forward(self, x):
        return self.head(self.encoder(x).mean(1))


def build(name):
    if name == "mlp64":
        return nn.Sequential(
            nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 10)
        )
    if name == "mlp":
        return nn.Sequential(nn.Linear(784, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10))
    if name == "cnn":
        return nn.Sequential(
            nn.Conv2d(1, 32, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(64 * 7 * 7, 128),
            nn.ReLU(),
            nn.Linear(128, 10),
        )
    if name == "cnn-small":
        return nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * 7 * 7, 10),
        )
    if name == "lstm":
        return LstmClassifier()
    if name == "transformer":
        return TransformerClassifier()
    raise SystemExit(f"unknown model {name}")


def adam(parameters, mode):
    """single: the single-tensor update; foreach: the multi-tensor one; fused: the fused CUDA kernel;
    defaults: PyTorch's choice (single-tensor on the CPU, foreach on CUDA)."""
    if mode == "single":
        return torch.optim.Adam(parameters, lr=1e-3, foreach=False)
    if mode == "foreach":
        return torch.optim.Adam(parameters, lr=1e-3, foreach=True)
    if mode == "fused":
        return torch.optim.Adam(parameters, lr=1e-3, fused=True)
    return torch.optim.Adam(parameters, lr=1e-3)


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train(spec, device, adam_mode):
    """Trains `warmup` untimed steps, then times `steps` steps, as trainFlodl in train.mjs."""
    torch.manual_seed(0)
    model = build(spec["name"]).to(device)
    inputs = torch.randn([spec["batch"], *spec["inputShape"]], device=device)
    labels = torch.randint(0, spec["classes"], [spec["batch"]], device=device)
    optimizer = adam(model.parameters(), spec.get("adam", adam_mode))

    update = [0.0]  # seconds in optimizer.step() (on CUDA, to the end of its launches)

    def step():
        loss = nn.functional.cross_entropy(model(inputs), labels)
        optimizer.zero_grad(set_to_none=True)  # flodl's zeroGrad default; 1.13's is False
        loss.backward()
        before = time.perf_counter()
        optimizer.step()
        update[0] += time.perf_counter() - before
        return loss.detach()

    for _ in range(spec["warmup"]):
        step()
    synchronize(device)
    update[0] = 0.0
    started = time.perf_counter()
    for _ in range(spec["steps"]):
        loss = step()
    synchronize(device)
    seconds = time.perf_counter() - started
    return {
        "samplesPerSecond": spec["steps"] * spec["batch"] / seconds,
        "seconds": seconds,
        "updateSeconds": update[0],
        "finalLoss": loss.item(),
    }


def blas_libraries():
    """libtorch's BLAS: its build setting, then the BLAS libraries mapped into this process."""
    config = torch.__config__.show()
    found = [part.split("=", 1)[1] for part in config.replace("\n", ",").split(",") if "BLAS_INFO=" in part]
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if len(line.split()) >= 6}
    except OSError:
        paths = set()
    pattern = re.compile(r"^lib(open)?blas|^libmkl|^libblis")
    return [f"BLAS_INFO={found[0]}" if found else "BLAS_INFO unknown"] + sorted(
        p for p in paths if pattern.match(os.path.basename(p))
    )


def tf32_settings():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # newer releases prefer the fp32_precision switches
        return {
            "matmul": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn": bool(torch.backends.cudnn.allow_tf32),
            "float32MatmulPrecision": torch.get_float32_matmul_precision(),
        }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--adam", default="defaults", choices=["single", "foreach", "fused", "defaults"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise SystemExit(f"torch {torch.__version__} at {sys.executable} sees no CUDA device")
        torch.backends.cudnn.benchmark = False  # flodl has no switch for it, so both leave it off
    info = {
        "torch": torch.__version__,
        "pythonVersion": platform.python_version(),
        "threads": torch.get_num_threads(),
        "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
        "tf32": tf32_settings(),
        "blas": blas_libraries(),
    }
    print(json.dumps(info), flush=True)
    for line in sys.stdin:
        if line.strip():
            print(json.dumps(train(json.loads(line), device, args.adam)), flush=True)
            if device.type == "cuda":
                torch.cuda.empty_cache()  # hand the blocks back before flodl's turn


if __name__ == "__main__":
    main()
