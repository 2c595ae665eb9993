#!/usr/bin/env python3
"""PyTorch side of `pnpm bench:ddp` (the reference `pytorch`): the same model, data and settings.

bench/ddp.ts runs it with one JSON argument (the run's settings) and reads the JSON it writes to
the settings' `out`. `mode` is `alone` (one process on `aloneDevice`, at the fastest of
`speeds`) or `ddp`: `nproc` processes of one thread each, rank r on `devices[r]`,
DistributedDataParallel over Gloo on CPU ranks and over NCCL on GPU ranks (every rank on one
kind), each epoch's shuffled images split between them as DistributedSampler does (every rank
the same count). On a GPU the images live on the device, and a paced rank synchronizes each
step before it times it.
A rank at speed s < 1 idles (time.sleep, no CPU) (1/s - 1) times the median of its last
steps after each step, standing in for a slower device as bench:ddp's paced ranks do; DDP
averages the gradients at every step, so every rank goes at the slowest one's pace.

Models, data and training match bench/ddp-run.ts: the Fashion-MNIST MLP 784-256-256-10, the
small CNN or the wide ResNet-20, images normalized with mean 0.2860 and std 0.3530, Adam (lr
from the settings), the first `samples` images of the split, a shuffle per epoch, the held-out
images evaluated (accuracy and mean cross-entropy) with the trained model of rank 0. Exits with 3
when this interpreter has no torch (bench/ddp.ts then tries the next one).

    python3 bench/ddp-pytorch.py '{"model": "mlp", "mode": "ddp", "nproc": 2, "speeds": [1, 1],
        "samples": 60000, "epochs": 3, "batchSize": 128, "lr": 0.001,
        "root": "/usr/share/datasets/fashion-mnist", "split": "train", "holdout": 0,
        "out": "/tmp/result.json"}'
"""
import ctypes
import gzip
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import time

try:
    import numpy as np
    import torch
    import torch.distributed as dist
    from torch import nn
    from torch.nn.parallel import DistributedDataParallel
except ImportError as error:
    print(f"{sys.executable}: {error}", file=sys.stderr)
    sys.exit(3)

MEAN, STD = 0.2860, 0.3530
SEED = 42
FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


def read_idx(root, name):
    """One IDX file of `root`, raw or gzipped, as a numpy array of its shape."""
    path = os.path.join(root, name)
    opener = open
    if not os.path.exists(path):
        path, opener = path + ".gz", gzip.open
    with opener(path, "rb") as file:
        data = file.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def load(root, split, device="cpu"):
    """(images [N, 1, 28, 28] float32 normalized, labels [N] int64) of a split, on `device`."""
    images, labels = (read_idx(root, name) for name in FILES[split])
    x = torch.from_numpy(images.astype(np.float32) / 255.0).sub_(MEAN).div_(STD).unsqueeze(1)
    return x.contiguous().to(device), torch.from_numpy(labels.astype(np.int64)).to(device)


class BasicBlock(nn.Module):
    """ResNet's basic block, as bench/fashion-models.ts builds it."""

    def __init__(self, in_channels, out_channels, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.conv2 = nn.Conv2d(out_channels, out_channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = None
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, 1, stride=stride, bias=False), nn.BatchNorm2d(out_channels)
            )

    def forward(self, x):
        branch = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
        return torch.relu(branch + (self.shortcut(x) if self.shortcut is not None else x))


def resnet(widths=(64, 128, 256)):
    """ResNet-20's layout at four times its width (bench/fashion-models.ts `resnet`)."""
    layers = [nn.Conv2d(1, widths[0], 3, padding=1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU()]
    channels = widths[0]
    for stage, width in enumerate(widths):
        for block in range(3):
            layers.append(BasicBlock(channels, width, 2 if stage > 0 and block == 0 else 1))
            channels = width
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, 10)]
    return nn.Sequential(*layers)


def build(model):
    if model == "resnet":
        return resnet()
    if model == "mlp":
        return nn.Sequential(
            nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
        )
    return nn.Sequential(
        nn.Conv2d(1, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * 7 * 7, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


def evaluate(model, x, y):
    model.eval()
    correct, loss_sum = 0, 0.0
    with torch.no_grad():
        for start in range(0, len(y), 1000):
            logits = model(x[start : start + 1000])
            labels = y[start : start + 1000]
            correct += int((logits.argmax(1) == labels).sum())
            loss_sum += float(nn.functional.cross_entropy(logits, labels, reduction="sum"))
    return correct / len(y), loss_sum / len(y)


def rank_indices(epoch, count, rank, world):
    """DistributedSampler's split of the epoch's shuffle: padded to a multiple of world, interleaved."""
    generator = torch.Generator().manual_seed(SEED + epoch)
    order = torch.randperm(count, generator=generator)
    per_rank = -(-count // world)
    padded = torch.cat([order, order[: per_rank * world - count]])
    return padded[rank::world]


def train(settings, rank, world, speed, device):
    """Trains this rank's part on `device`; returns (model, its stats)."""
    torch.set_num_threads(1)
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.set_device(device)
    x, y = load(settings["root"], settings["split"], device)
    usable = len(y) - settings["holdout"] if settings["split"] == "test" else len(y)
    count = min(settings["samples"], usable)
    torch.manual_seed(SEED)
    model = build(settings["model"]).to(device)
    distributed = dist.is_initialized()  # mode `ddp`, with one rank too
    if not distributed:
        trained = model
    else:
        trained = DistributedDataParallel(model, device_ids=[torch.device(device).index] if cuda else None)
    optimizer = torch.optim.Adam(model.parameters(), lr=settings["lr"])
    batch = settings["batchSize"]
    recent, samples, steps = [], 0, 0
    compute_s = data_s = idle_s = 0.0
    if distributed:
        dist.barrier()
    started = time.perf_counter()
    for epoch in range(settings["epochs"]):
        trained.train()
        indices = rank_indices(epoch, count, rank, world)
        for start in range(0, len(indices), batch):
            fetched = time.perf_counter()
            rows = indices[start : start + batch]
            images, labels = x[rows], y[rows]
            began = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss = nn.functional.cross_entropy(trained(images), labels)
            loss.backward()  # DDP: the gradients' all-reduce, every step
            optimizer.step()
            if cuda and speed < 1:
                torch.cuda.synchronize()  # the pace needs the step's real time
            ended = time.perf_counter()
            data_s += began - fetched
            compute_s += ended - began
            if speed < 1:
                recent = (recent + [ended - began])[-15:]
                idle = (1 / speed - 1) * statistics.median(recent)
                time.sleep(idle)
                idle_s += idle
            samples += len(rows)
            steps += 1
        last_loss = float(loss)
    if distributed:
        dist.barrier()
    if cuda:
        torch.cuda.synchronize()
    train_s = time.perf_counter() - started
    stats = {
        "rank": rank,
        "device": device,
        "speed": speed,
        "samples": samples,
        "steps": steps,
        "trainMs": train_s * 1000,
        "computeMs": (compute_s + idle_s) * 1000,
        "dataMs": data_s * 1000,
        "paceIdleMs": idle_s * 1000,
        "workPerStepMs": compute_s * 1000 / max(steps, 1),
        "finalTrainLoss": last_loss,
        "trainSamples": count,
    }
    return model, stats


def held_out(settings, device):
    x, y = load(settings["root"], "test", device)
    if settings["split"] == "train":
        return x, y
    return x[-settings["holdout"] :], y[-settings["holdout"] :]


def blas():
    """The BLAS library this process loaded (what PyTorch's CPU products run on)."""
    with open("/proc/self/maps") as maps:
        paths = {line.split()[-1] for line in maps if "/" in line}
    found = sorted(path for path in paths if re.search(r"/lib(open)?blas|/libmkl|/libblis", path))
    return ", ".join(found) or "linked into libtorch"  # full paths: which copy of a library it was


def finish(settings, model, parts, started, device):
    x, y = held_out(settings, device)
    accuracy, loss = evaluate(model, x, y)
    train_ms = max(part["trainMs"] for part in parts)
    samples = sum(part["samples"] for part in parts)
    result = {
        "model": settings["model"],
        "mode": "pytorch-" + settings["mode"],
        "torch": torch.__version__,
        "devices": [part["device"] for part in parts],
        "blas": blas(),
        "ranks": len(parts),
        "speeds": [part["speed"] for part in parts],
        "wallMs": (time.perf_counter() - started) * 1000,
        "trainMs": train_ms,
        "trainSamples": parts[0]["trainSamples"],
        "evalSamples": len(y),
        "samples": samples,
        "samplesPerSec": samples / (train_ms / 1000),
        "accuracy": accuracy,
        "loss": loss,
        "finalTrainLoss": parts[0]["finalTrainLoss"],
        "rounds": parts[0]["steps"] if settings["mode"] == "ddp" else 0,
        "perRank": parts,
    }
    with open(settings["out"], "w") as file:
        json.dump(result, file)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def main():
    settings = json.loads(sys.argv[1])
    started = time.perf_counter()
    if settings["mode"] == "alone":
        device = settings.get("aloneDevice", "cpu")
        model, stats = train(settings, 0, 1, max(settings["speeds"]), device)
        finish(settings, model, [stats], started, device)
        return
    if "DDP_RANK" in os.environ:  # one rank of a DDP run
        rank, world = int(os.environ["DDP_RANK"]), settings["nproc"]
        device = settings.get("devices", ["cpu"] * world)[rank]
        dist.init_process_group(
            "nccl" if device.startswith("cuda") else "gloo",
            init_method=f"tcp://127.0.0.1:{os.environ['DDP_PORT']}",
            rank=rank,
            world_size=world,
        )
        model, stats = train(settings, rank, world, settings["speeds"][rank], device)
        parts = [None] * world
        dist.all_gather_object(parts, stats)
        dist.destroy_process_group()
        if rank == 0:
            finish(settings, model, parts, float(os.environ["DDP_STARTED"]), device)
        return
    env = {**os.environ, "DDP_PORT": str(free_port()), "DDP_STARTED": str(started)}
    ranks = [
        subprocess.Popen(
            [sys.executable, __file__, sys.argv[1]],
            env={**env, "DDP_RANK": str(rank)},
            preexec_fn=die_with_parent,
        )
        for rank in range(settings["nproc"])
    ]
    # A rank that fails leaves the others waiting in a collective: stop them.
    while any(rank.poll() is None for rank in ranks):
        if any(rank.poll() not in (None, 0) for rank in ranks):
            for rank in ranks:
                rank.kill()
        time.sleep(0.05)
    codes = [rank.returncode for rank in ranks]
    if any(codes):
        sys.exit(f"a DDP rank failed (exit codes {codes})")


def die_with_parent():
    """A rank is killed with this process (a timeout that kills it leaves no rank behind)."""
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


if __name__ == "__main__":
    main()
