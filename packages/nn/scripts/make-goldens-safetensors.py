"""Safetensors interoperability fixtures for test/safetensors.test.ts.

1. Writes test/fixtures/from-pytorch.safetensors with a minimal, spec-following writer (8-byte
   little-endian header length, JSON header, raw little-endian bytes) from PyTorch tensors, and
   test/fixtures/from-pytorch.json with their values, so the test can check our reader.
2. Reads test/fixtures/from-flodl.safetensors (written by our writer; the test checks that the
   writer still produces exactly those bytes) with an independent reader and checks every
   tensor against the same recipe computed by PyTorch. The script fails if they differ.

Regenerate with Debian's PyTorch (python3-torch):
    pnpm --filter @flodl/nn run goldens          # runs every scripts/make-*.py
To rewrite from-flodl.safetensors first: FLODL_WRITE_FIXTURES=1 npx vitest run test/safetensors.test.ts
"""
import json
import os
import sys
import struct

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import fixtures_dir, write_json  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = fixtures_dir(__file__)
DTYPES = {
    torch.float16: "F16", torch.bfloat16: "BF16", torch.float32: "F32", torch.float64: "F64",
    torch.int32: "I32", torch.int64: "I64", torch.uint8: "U8", torch.bool: "BOOL",
}
CODES = {code: dtype for dtype, code in DTYPES.items()}


def recipe():
    """The tensors both sides build (the TS test builds the same ones)."""
    return {
        "weight.f32": torch.arange(12, dtype=torch.float32).reshape(3, 4).mul(0.25).sub(1),
        "weight.f64": torch.arange(6, dtype=torch.float64).div(3),
        "weight.f16": torch.arange(8, dtype=torch.float32).mul(0.5).half(),
        "weight.bf16": torch.arange(8, dtype=torch.float32).mul(-0.25).bfloat16(),
        "count.i32": torch.arange(5, dtype=torch.int32),
        "count.i64": torch.arange(-3, 3, dtype=torch.int64),
        "mask.bool": torch.arange(6).remainder(2).eq(0),
        "bytes.u8": torch.arange(4, dtype=torch.uint8).mul(60),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 2),
    }


def raw_bytes(tensor):
    flat = tensor.contiguous().reshape(-1)
    if tensor.dtype == torch.bfloat16:
        return flat.view(torch.int16).numpy().tobytes()
    return flat.numpy().tobytes()


def write(path, tensors, metadata):
    header, chunks, offset = {"__metadata__": metadata}, [], 0
    for name, tensor in tensors.items():
        data = raw_bytes(tensor)
        header[name] = {"dtype": DTYPES[tensor.dtype], "shape": list(tensor.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as handle:
        handle.write(struct.pack("<Q", len(text)) + text + b"".join(chunks))


def read(path):
    with open(path, "rb") as handle:
        blob = handle.read()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length])
    metadata = header.pop("__metadata__", {})
    data = blob[8 + length:]
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        dtype = CODES[entry["dtype"]]
        chunk = bytearray(data[begin:end])
        if dtype == torch.bfloat16:
            tensor = torch.frombuffer(chunk, dtype=torch.int16).view(torch.bfloat16) if chunk else torch.zeros(0, dtype=dtype)
        else:
            tensor = torch.frombuffer(chunk, dtype=dtype) if chunk else torch.zeros(0, dtype=dtype)
        tensors[name] = tensor.reshape(entry["shape"])
    return tensors, metadata


def values(tensor):
    return tensor.to(torch.float64).reshape(-1).tolist() if tensor.dtype != torch.bool else tensor.reshape(-1).tolist()


expected = recipe()
write(os.path.join(FIXTURES, "from-pytorch.safetensors"), expected, {"producer": "pytorch", "torch": torch.__version__})
write_json(os.path.join(FIXTURES, "from-pytorch.json"),
           {name: {"dtype": DTYPES[t.dtype], "shape": list(t.shape), "values": values(t)} for name, t in expected.items()})

flodl_path = os.path.join(FIXTURES, "from-flodl.safetensors")
if os.path.exists(flodl_path):
    tensors, metadata = read(flodl_path)
    assert sorted(tensors) == sorted(expected), f"names differ: {sorted(tensors)}"
    for name, tensor in tensors.items():
        want = expected[name]
        assert tensor.dtype == want.dtype and tensor.shape == want.shape, f"{name}: {tensor.dtype} {tensor.shape}"
        assert torch.equal(tensor, want), f"{name}: values differ"
    assert metadata.get("producer") == "flodl", metadata
    print(f"verified {flodl_path}: {len(tensors)} tensors equal PyTorch's")
else:
    print(f"{flodl_path} missing: write it with FLODL_WRITE_FIXTURES=1 npx vitest run test/safetensors.test.ts")
print("wrote from-pytorch.safetensors and from-pytorch.json")
