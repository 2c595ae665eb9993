"""Golden loss curves for test/training.test.ts: a small CNN and an LSTM classifier trained
for 100 steps with AdamW in float64 (one intra-op thread), starting from recorded weights.

Regenerate with Debian's PyTorch (python3-torch):
    pnpm --filter @flodl/nn run goldens      # runs every scripts/make-*.py
"""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import dtype_name, encode_data, write_json  # noqa: E402

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)


def encode(tensor):
    return {"shape": list(tensor.shape), "dtype": dtype_name(tensor.dtype), "data": tensor.detach().reshape(-1).tolist()}


def train(model, inputs, labels, forward, steps=100):
    initial = {name: encode(value) for name, value in model.state_dict().items()}
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=1e-2)
    losses = []
    for _ in range(steps):
        loss = nn.functional.cross_entropy(forward(model, inputs), labels)
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return {"initial": initial, "inputs": encode(inputs), "labels": encode(labels), "losses": losses}


torch.manual_seed(3)
cnn = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 10))
cnn_case = train(cnn, torch.randn(16, 1, 8, 8), torch.randint(0, 10, (16,)), lambda model, x: model(x))


class SequenceClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 8, batch_first=True)
        self.fc = nn.Linear(8, 3)

    def forward(self, x):
        output, _ = self.lstm(x)
        return self.fc(output[:, -1])


torch.manual_seed(4)
lstm_case = train(SequenceClassifier(), torch.randn(6, 5, 4), torch.randint(0, 3, (6,)), lambda model, x: model(x))

path = os.path.join(os.path.dirname(__file__), "..", "test", "fixtures", "training.json")
write_json(path, encode_data({"torch": torch.__version__, "cnn": cnn_case, "lstm": lstm_case}))
print(f"wrote {path}: cnn {cnn_case['losses'][0]:.4f} -> {cnn_case['losses'][-1]:.4f}, lstm {lstm_case['losses'][0]:.4f} -> {lstm_case['losses'][-1]:.4f}")
