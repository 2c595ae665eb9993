"""PyTorch's inference mode, scenario by scenario, for test/inference-mode.test.ts.

Each scenario runs here with torch.inference_mode() and in the test with inferenceMode(), and
records what matters: whether results require grad, have a grad_fn or are inference tensors,
the thread's grad and inference modes inside and after, which misuses throw, and the values.
The weight is w = [1, 2, 3] (float32, requires grad); x is a plain tensor [0.5, -1.0, 2.0].

Regenerate with Debian's PyTorch (python3-torch):
    pnpm --filter @flodl/autograd run goldens      # runs every scripts/make-*.py
or  /usr/bin/python3 scripts/make-goldens-inference-mode.py
"""
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import encode_data, fixtures_dir, write_json  # noqa: E402


def weight():
    return torch.tensor([1.0, 2.0, 3.0]).requires_grad_()


def plain():
    return torch.tensor([0.5, -1.0, 2.0])


def describe(tensor):
    """What the test compares for a result tensor."""
    return {
        "requiresGrad": tensor.requires_grad,
        "gradFn": None if tensor.grad_fn is None else type(tensor.grad_fn).__name__,
        "isInference": tensor.is_inference(),
        "data": tensor.detach().flatten().tolist(),
    }


def modes():
    return {"gradEnabled": torch.is_grad_enabled(), "inferenceEnabled": torch.is_inference_mode_enabled()}


def throws(run):
    try:
        run()
    except RuntimeError:
        return True
    return False


def op_inside():
    w = weight()
    with torch.inference_mode():
        inside = modes()
        y = w.mul(w)
    return {"result": describe(y), "inside": inside, "after": modes()}


def factory_inside():
    with torch.inference_mode():
        z = torch.zeros(2)
    return {"result": describe(z)}


def enable_grad_inside():
    w = weight()
    with torch.inference_mode():
        with torch.enable_grad():
            inside = modes()
            y = w.mul(w)
    return {"result": describe(y), "inside": inside}


def no_grad_inside():
    w = weight()
    with torch.inference_mode():
        with torch.no_grad():
            y = w.mul(w)
        after_inner = modes()
    return {"result": describe(y), "inside": after_inner}


def normal_mode_nested():
    w = weight()
    with torch.inference_mode():
        with torch.inference_mode(mode=False):
            inside = modes()
            y = w.mul(w)
        back = modes()
    return {"result": describe(y), "inside": inside, "back": back}


def nested_inference():
    w = weight()
    with torch.inference_mode():
        with torch.inference_mode():
            y = w.mul(w)
        back = modes()
    return {"result": describe(y), "back": back, "after": modes()}


def view_of_normal_tensor():
    x = plain()
    with torch.inference_mode():
        v = x.view(3)
    return {"result": describe(v)}


def in_place_on_normal_tensor():
    x = plain()
    with torch.inference_mode():
        x.add_(1)
    return {"result": describe(x)}


def inference_tensor_outside():
    w = weight()
    with torch.inference_mode():
        y = w.mul(w)
    return {
        "savedForBackwardThrows": throws(lambda: y.mul(w)),
        "inPlaceThrows": throws(lambda: y.add_(1)),
        "requiresGradThrows": throws(lambda: y.requires_grad_()),
        "plainOp": describe(y.add(1)),
    }


def clone_outside_trains():
    w = weight()
    with torch.inference_mode():
        y = w.mul(w)
    c = y.clone()
    c.mul(w).sum().backward()
    return {"clone": describe(c), "grad": w.grad.tolist()}


def exception_restores():
    try:
        with torch.inference_mode():
            raise ValueError("boom")
    except ValueError:
        pass
    return {"after": modes()}


SCENARIOS = {
    "an op on a tensor that requires grad": op_inside,
    "a factory": factory_inside,
    "enableGrad inside": enable_grad_inside,
    "noGrad inside": no_grad_inside,
    "mode false inside": normal_mode_nested,
    "nested": nested_inference,
    "a view of a normal tensor": view_of_normal_tensor,
    "an in-place change of a normal tensor": in_place_on_normal_tensor,
    "an inference tensor outside": inference_tensor_outside,
    "a clone outside trains": clone_outside_trains,
    "an exception inside": exception_restores,
}

payload = {
    "meta": {"torch": torch.__version__, "generator": "scripts/make-goldens-inference-mode.py"},
    "scenarios": [{"name": name, "expected": run()} for name, run in SCENARIOS.items()],
}
path = os.path.join(fixtures_dir(__file__), "inference-mode.json")
write_json(path, encode_data(payload))
print(f"wrote {os.path.relpath(path)}: {len(SCENARIOS)} scenarios")
