"""Golden trajectories for the optimizers and gradient clipping (test/optim.test.ts, test/clip.test.ts).

Every case trains the same small float64 problem for 50 steps with one torch.optim optimizer
and records the parameters after a few steps. The problem:

    hidden = tanh(inputs @ w1 + b1)                        inputs [5, 3], w1 [3, 4], b1 [4]
    loss   = mean((hidden @ w2 - targets)^2) + 0.05 * sum(w1^2) + 0.1 * sum(sin(w2))
                                                           w2 [4, 2], targets [5, 2]

`unused` [2] is a fourth parameter that never receives a gradient: every optimizer must skip
it (its grad stays None because the loop zeroes with set_to_none=True). Cases with
`maximize` maximize `-loss`, so every trajectory stays bounded.

Option names are written camelCase as the TypeScript API spells them and translated to
PyTorch's keywords here (KEYWORDS), so the test can pass `options` straight through.

Regenerate with Debian's PyTorch (python3-torch):
    pnpm --filter @flodl/nn run goldens      # runs every scripts/make-*.py
or  /usr/bin/python3 scripts/make-goldens-optim.py
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import encode_data, write_json  # noqa: E402

# The default dtype stays float32: NAdam keeps its mu_product in a default-dtype scalar tensor,
# and the goldens must show what PyTorch does as users run it. Problem tensors are float64.
DTYPE = torch.float64
STEPS = 50
CHECKPOINTS = [1, 2, 10, 25, 50]

KEYWORDS = {
    "lr": "lr",
    "momentum": "momentum",
    "dampening": "dampening",
    "weightDecay": "weight_decay",
    "nesterov": "nesterov",
    "maximize": "maximize",
    "betas": "betas",
    "eps": "eps",
    "amsgrad": "amsgrad",
    "alpha": "alpha",
    "centered": "centered",
    "lrDecay": "lr_decay",
    "initialAccumulatorValue": "initial_accumulator_value",
    "momentumDecay": "momentum_decay",
}
OPTIMIZERS = {
    "SGD": torch.optim.SGD,
    "Adam": torch.optim.Adam,
    "AdamW": torch.optim.AdamW,
    "RMSprop": torch.optim.RMSprop,
    "Adagrad": torch.optim.Adagrad,
    "RAdam": torch.optim.RAdam,
    "NAdam": torch.optim.NAdam,
}


def deterministic(shape, phase, scale):
    count = math.prod(shape)
    values = [scale * math.sin(0.7 * k + phase) + 0.1 * math.cos(1.3 * k * phase) for k in range(count)]
    return torch.tensor(values, dtype=DTYPE).reshape(shape)


INPUTS = deterministic([5, 3], 0.3, 1.0)
TARGETS = deterministic([5, 2], 1.1, 0.8)
INITIAL = {
    "w1": deterministic([3, 4], 0.5, 0.6),
    "b1": deterministic([4], 2.0, 0.2),
    "w2": deterministic([4, 2], 1.7, 0.5),
    "unused": deterministic([2], 0.9, 1.0),
}
NAMES = ["w1", "b1", "w2", "unused"]


def loss_of(w1, b1, w2):
    hidden = INPUTS.matmul(w1).add(b1).tanh()
    fit = hidden.matmul(w2).sub(TARGETS).square().mean()
    return fit.add(w1.square().sum().mul(0.05)).add(w2.sin().sum().mul(0.1))


def keywords(options):
    return {KEYWORDS[key]: (tuple(value) if key == "betas" else value) for key, value in options.items()}


def run_case(case):
    params = [INITIAL[name].clone().requires_grad_() for name in NAMES]
    if case.get("groups"):
        groups = [dict(keywords(group["options"]), params=[params[k] for k in group["params"]])
                  for group in case["groups"]]
        optimizer = OPTIMIZERS[case["optimizer"]](groups, **keywords(case["options"]))
    else:
        optimizer = OPTIMIZERS[case["optimizer"]](params, **keywords(case["options"]))
    checkpoints = {}
    losses = []
    negate = case.get("negateLoss", False)
    for step in range(1, STEPS + 1):
        if case.get("setLr") and step == case["setLr"]["step"]:
            for group in optimizer.param_groups:
                group["lr"] = case["setLr"]["lr"]
        optimizer.zero_grad(set_to_none=True)
        loss = loss_of(params[0], params[1], params[2])
        losses.append(loss.item())
        (loss.neg() if negate else loss).backward()
        if case.get("clipGradNorm"):
            clip = case["clipGradNorm"]
            norm_type = math.inf if clip["normType"] == "inf" else clip["normType"]
            torch.nn.utils.clip_grad_norm_(params, clip["maxNorm"], norm_type)
        optimizer.step()
        if step in CHECKPOINTS:
            checkpoints[str(step)] = [p.detach().reshape(-1).tolist() for p in params]
    assert params[3].grad is None and len(optimizer.state[params[3]]) in (0, 2)  # Adagrad pre-fills state
    assert torch.equal(params[3].detach(), INITIAL["unused"]), "the unused parameter moved"
    return {**case, "checkpoints": checkpoints, "losses": losses}


def cases():
    def case(name, optimizer, options, **extra):
        return {"name": name, "optimizer": optimizer, "options": options, **extra}

    return [
        case("SGD plain", "SGD", {"lr": 0.05}),
        case("SGD momentum", "SGD", {"lr": 0.05, "momentum": 0.9}),
        case("SGD momentum nesterov", "SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
        case("SGD momentum dampening", "SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3}),
        case("SGD weight decay", "SGD", {"lr": 0.05, "weightDecay": 0.01}),
        case("SGD nesterov weight decay", "SGD",
             {"lr": 0.03, "momentum": 0.8, "nesterov": True, "weightDecay": 0.05}),
        case("SGD maximize momentum weight decay", "SGD",
             {"lr": 0.05, "momentum": 0.8, "weightDecay": 0.01, "maximize": True}, negateLoss=True),
        case("Adam defaults", "Adam", {"lr": 0.01}),
        case("Adam betas eps", "Adam", {"lr": 0.02, "betas": [0.8, 0.99], "eps": 1e-6}),
        case("Adam weight decay", "Adam", {"lr": 0.01, "weightDecay": 0.05}),
        case("Adam amsgrad", "Adam", {"lr": 0.01, "amsgrad": True}),
        case("Adam maximize amsgrad weight decay", "Adam",
             {"lr": 0.01, "amsgrad": True, "weightDecay": 0.01, "maximize": True}, negateLoss=True),
        case("AdamW defaults", "AdamW", {"lr": 0.01}),
        case("AdamW weight decay amsgrad", "AdamW", {"lr": 0.01, "weightDecay": 0.1, "amsgrad": True}),
        case("AdamW betas eps maximize", "AdamW",
             {"lr": 0.02, "betas": [0.85, 0.995], "eps": 1e-7, "maximize": True}, negateLoss=True),
        case("RMSprop defaults", "RMSprop", {"lr": 0.01}),
        case("RMSprop alpha eps", "RMSprop", {"lr": 0.005, "alpha": 0.9, "eps": 1e-6}),
        case("RMSprop momentum", "RMSprop", {"lr": 0.005, "momentum": 0.9}),
        case("RMSprop centered", "RMSprop", {"lr": 0.005, "centered": True}),
        case("RMSprop centered momentum weight decay", "RMSprop",
             {"lr": 0.003, "centered": True, "momentum": 0.5, "weightDecay": 0.02}),
        case("RMSprop maximize", "RMSprop", {"lr": 0.005, "maximize": True}, negateLoss=True),
        case("Adagrad defaults", "Adagrad", {"lr": 0.1}),
        case("Adagrad lr decay", "Adagrad", {"lr": 0.1, "lrDecay": 0.01}),
        case("Adagrad initial accumulator", "Adagrad", {"lr": 0.1, "initialAccumulatorValue": 0.1}),
        case("Adagrad weight decay eps", "Adagrad", {"lr": 0.1, "weightDecay": 0.01, "eps": 1e-6}),
        case("Adagrad maximize", "Adagrad", {"lr": 0.05, "maximize": True}, negateLoss=True),
        case("RAdam defaults", "RAdam", {"lr": 0.01}),
        case("RAdam betas eps", "RAdam", {"lr": 0.02, "betas": [0.85, 0.95], "eps": 1e-6}),
        case("RAdam weight decay", "RAdam", {"lr": 0.01, "weightDecay": 0.01}),
        case("NAdam defaults", "NAdam", {"lr": 0.01}),
        case("NAdam momentum decay betas", "NAdam",
             {"lr": 0.01, "momentumDecay": 0.01, "betas": [0.85, 0.99]}),
        case("NAdam weight decay eps", "NAdam", {"lr": 0.01, "weightDecay": 0.02, "eps": 1e-6}),
        case("SGD two groups", "SGD", {"lr": 0.05, "momentum": 0.9}, groups=[
            {"params": [0, 1], "options": {}},
            {"params": [2, 3], "options": {"lr": 0.01, "momentum": 0.5, "weightDecay": 0.1}},
        ]),
        case("Adam two groups", "Adam", {"lr": 0.01}, groups=[
            {"params": [0], "options": {"lr": 0.02, "betas": [0.8, 0.9]}},
            {"params": [1, 2, 3], "options": {"amsgrad": True}},
        ]),
        case("RMSprop two groups", "RMSprop", {"lr": 0.005}, groups=[
            {"params": [2, 0], "options": {"centered": True}},
            {"params": [1, 3], "options": {"momentum": 0.9, "lr": 0.001}},
        ]),
        case("SGD setLr at step 25", "SGD", {"lr": 0.05, "momentum": 0.9}, setLr={"step": 25, "lr": 0.005}),
        case("Adam setLr at step 25", "Adam", {"lr": 0.01}, setLr={"step": 25, "lr": 0.002}),
        case("Adam with clipGradNorm", "Adam", {"lr": 0.01}, clipGradNorm={"maxNorm": 0.5, "normType": 2}),
        case("SGD with clipGradNorm inf", "SGD", {"lr": 0.05, "momentum": 0.9},
             clipGradNorm={"maxNorm": 0.2, "normType": "inf"}),
    ]


def encode(tensor):
    return {"shape": list(tensor.shape), "data": tensor.reshape(-1).tolist()}


def clip_cases():
    """clip_grad_norm_ and clip_grad_value_ on fixed gradients, several norms."""
    grads = [deterministic([3, 4], 0.2, 1.5), deterministic([5], 1.4, 0.7), deterministic([2, 2], 2.2, 3.0)]
    out = []
    for norm_type in [2.0, 1.0, 3.5, math.inf]:
        for max_norm in [100.0, 1.0, 0.05]:
            params = [torch.zeros(g.shape, dtype=DTYPE, requires_grad=True) for g in grads]
            params.append(torch.zeros(3, dtype=DTYPE, requires_grad=True))  # no grad: ignored
            for param, grad in zip(params, grads):
                param.grad = grad.clone()
            total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type)
            out.append({
                "kind": "norm",
                "maxNorm": max_norm,
                "normType": "inf" if norm_type == math.inf else norm_type,
                "totalNorm": total.item(),
                "clipped": [encode(p.grad) for p in params[:3]],
            })
    for clip_value in [0.5, 0.1]:
        params = [torch.zeros(g.shape, dtype=DTYPE, requires_grad=True) for g in grads]
        for param, grad in zip(params, grads):
            param.grad = grad.clone()
        torch.nn.utils.clip_grad_value_(params, clip_value)
        out.append({"kind": "value", "clipValue": clip_value, "clipped": [encode(p.grad) for p in params]})
    return {"grads": [encode(g) for g in grads], "cases": out}


def main():
    fixture = {
        "torch": torch.__version__,
        "steps": STEPS,
        "inputs": encode(INPUTS),
        "targets": encode(TARGETS),
        "initial": [dict(encode(INITIAL[name]), name=name) for name in NAMES],
        "cases": [run_case(case) for case in cases()],
        "clip": clip_cases(),
    }
    path = os.path.join(os.path.dirname(__file__), "..", "test", "fixtures", "optim.json")
    write_json(path, encode_data(fixture))
    print(f"wrote {path}: {len(fixture['cases'])} optimizer cases, {len(fixture['clip']['cases'])} clip cases")


if __name__ == "__main__":
    main()
