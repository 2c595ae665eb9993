"""Golden names and printing of nn.ParameterList for test/containers.test.ts.

A model holds a ParameterList (built from plain tensors, then `append`ed and `extend`ed) beside a
Linear and a ModuleList whose child holds a ParameterList of its own. The fixture records, from
PyTorch: the state_dict keys in order with each tensor's shape and values, the named_parameters
order, len() of each list, and repr() of a list and of the model. Values are built from
arange (no generator), so the TS test builds the same tensors.

Regenerate with Debian's PyTorch (python3-torch):
    pnpm --filter @flodl/nn run goldens      # runs every scripts/make-*.py
or  /usr/bin/python3 scripts/make-goldens-containers.py
"""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import dtype_name, fixtures_dir, write_json  # noqa: E402


def ramp(*shape, scale=0.1, dtype=torch.float32):
    """arange(numel) * scale, reshaped: the same recipe as the TS test's `ramp`."""
    count = 1
    for size in shape:
        count *= size
    return (torch.arange(count, dtype=dtype) * scale).reshape(shape)


class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = nn.ParameterList([ramp(3, scale=0.5)])


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weights = nn.ParameterList([ramp(2, 3), ramp(3, scale=0.2)])
        self.weights.append(ramp(4, 1, scale=0.3, dtype=torch.float64))
        self.weights.extend([ramp(1, scale=0.4), ramp(2, 2, scale=0.7)])
        self.head = nn.Linear(3, 2)
        self.blocks = nn.ModuleList([Inner()])
        with torch.no_grad():
            self.head.weight.copy_(ramp(2, 3, scale=-0.1))
            self.head.bias.copy_(ramp(2, scale=0.05))


def main():
    model = Model()
    state = model.state_dict()
    fixture = {
        "torch": torch.__version__,
        "stateDict": [
            {"name": name, "shape": list(tensor.shape), "dtype": dtype_name(tensor.dtype),
             "data": tensor.flatten().tolist()}
            for name, tensor in state.items()
        ],
        "namedParameters": [name for name, _ in model.named_parameters()],
        "lengths": {"weights": len(model.weights), "blocks.0.scales": len(model.blocks[0].scales)},
        "requiresGrad": [parameter.requires_grad for parameter in model.weights],
        "reprList": repr(model.weights),
        "reprEmpty": repr(nn.ParameterList()),
        "reprModel": repr(model),
    }
    path = os.path.join(fixtures_dir(__file__), "containers.json")
    write_json(path, fixture)
    print(f"wrote {path}: {len(state)} state_dict entries")


if __name__ == "__main__":
    main()
