#!/usr/bin/env python3
"""PyTorch side of `pnpm bench:train` (bench/train-mlp.ts runs it; Debian's python3-torch 1.13).

Trains the benchmark MLP (784-256-256-10, ReLU, Adam lr 1e-3, cross entropy) on Fashion-MNIST
read from the same IDX files and normalised the same way, and prints one JSON line: wall and
CPU seconds of the timed steps, and the wall seconds of each phase (data, forward + loss,
backward, optimizer), for two data paths:
  tensorIndex  the whole set as one tensor, each batch `images[perm[i:i + B]]` (the fast idiom)
  dataloader   torch.utils.data.DataLoader(TensorDataset, batch_size=B, shuffle=True)
"""
import argparse
import gzip
import json
import os
import time

import numpy as np
import torch
from torch import nn


def read_idx(path):
    with open(path, "rb") as file:
        data = file.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    rank = data[3]
    shape = [int.from_bytes(data[4 + 4 * k : 8 + 4 * k], "big") for k in range(rank)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * rank).reshape(shape)


def find(root, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(root, name)):
            return os.path.join(root, name)
    raise SystemExit(f"{stem} not found in {root}: apt-get install dataset-fashion-mnist")


def run(batches, steps, warmup):
    """Trains `warmup` untimed steps, then times `steps` steps phase by phase."""
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    phases = {"data": 0.0, "forward": 0.0, "backward": 0.0, "optimizer": 0.0}
    started = cpu_started = 0.0
    for step in range(warmup + steps):
        if step == warmup:
            phases = dict.fromkeys(phases, 0.0)
            started, cpu_started = time.perf_counter(), time.process_time()
        t0 = time.perf_counter()
        images, labels = next(batches)
        t1 = time.perf_counter()
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.item()  # the JS loop reads the loss every step too
        t2 = time.perf_counter()
        optimizer.zero_grad()
        loss.backward()
        t3 = time.perf_counter()
        optimizer.step()
        t4 = time.perf_counter()
        for name, seconds in zip(phases, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            phases[name] += seconds
    return {
        "steps": steps,
        "seconds": time.perf_counter() - started,
        "cpuSeconds": time.process_time() - cpu_started,
        "phases": phases,
    }


def tensor_index_batches(images, labels, batch_size):
    epoch = 0
    while True:
        order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(42 + epoch))
        for start in range(0, len(labels) - batch_size + 1, batch_size):
            index = order[start : start + batch_size]
            yield images[index], labels[index]
        epoch += 1


def dataloader_batches(images, labels, batch_size):
    dataset = torch.utils.data.TensorDataset(images, labels)
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True)
    while True:
        yield from loader


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", default="/usr/share/datasets/fashion-mnist/")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--dataloader-steps", type=int, default=100)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    raw = read_idx(find(args.root, "train-images-idx3-ubyte"))
    images = ((torch.from_numpy(raw.copy()).float() / 255 - 0.286) / 0.353).reshape(-1, 1, 28, 28)
    labels = torch.from_numpy(read_idx(find(args.root, "train-labels-idx1-ubyte")).astype(np.int64))

    result = {
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "tensorIndex": run(tensor_index_batches(images, labels, args.batch_size), args.steps, args.warmup),
        "dataloader": run(dataloader_batches(images, labels, args.batch_size), args.dataloader_steps, args.warmup),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
