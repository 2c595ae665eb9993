"""Golden loss curve for the hand-trained MLP test (test/mlp.test.ts).

A two-layer MLP (10 -> 32 -> 3, ReLU) trained for 200 steps of plain SGD (lr 0.1) on a
mean-squared error against one-hot targets, with the forward pass, the loss and the update
written out as tensor ops exactly as the test writes them.

Regenerate with Debian's PyTorch (python3-torch):
    pnpm --filter @flodl/autograd run goldens      # runs every scripts/make-*.py
or  /usr/bin/python3 scripts/make-goldens-mlp.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import encode_data, write_json  # noqa: E402

torch.manual_seed(1234)
samples, features, hidden, classes = 64, 10, 32, 3
inputs = torch.randn(samples, features)
labels = torch.randint(0, classes, (samples,))
targets = torch.nn.functional.one_hot(labels, classes).to(torch.float32)
w1 = (torch.randn(hidden, features) * 0.3).requires_grad_()
b1 = torch.zeros(hidden).requires_grad_()
w2 = (torch.randn(classes, hidden) * 0.3).requires_grad_()
b2 = torch.zeros(classes).requires_grad_()
initial = {name: tensor.detach().clone() for name, tensor in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]}

learning_rate = 0.1
losses = []
for step in range(200):
    hidden_out = inputs.matmul(w1.t()).add(b1).relu()
    logits = hidden_out.matmul(w2.t()).add(b2)
    loss = logits.sub(targets).square().mean()
    losses.append(loss.item())
    loss.backward()
    with torch.no_grad():
        for parameter in (w1, b1, w2, b2):
            parameter.sub_(parameter.grad.mul(learning_rate))
            parameter.grad = None


def encode(tensor):
    return {"shape": list(tensor.shape), "data": tensor.reshape(-1).tolist()}


fixture = {
    "torch": torch.__version__,
    "learningRate": learning_rate,
    "inputs": encode(inputs),
    "targets": encode(targets),
    "initial": {name: encode(tensor) for name, tensor in initial.items()},
    "final": {name: encode(tensor.detach()) for name, tensor in [("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2)]},
    "losses": losses,
}
path = os.path.join(os.path.dirname(__file__), "..", "test", "fixtures", "mlp.json")
write_json(path, encode_data(fixture))
print(f"wrote {path}: {len(losses)} losses, first {losses[0]:.6f}, last {losses[-1]:.6f}")
