"""Golden learning-rate sequences for the LR schedulers (test/schedulers.test.ts).

Each case builds an optimizer (SGD with momentum, or Adam) over one or two parameter groups,
attaches one torch.optim.lr_scheduler scheduler and records every group's learning rate (and,
for the schedulers that cycle it, the momentum or beta1) right after construction and after
each of 1000 `scheduler.step()` calls: 1001 rows. ReduceLROnPlateau is fed a recorded metric
sequence, stored in the fixture.

LambdaLR's functions are named in the fixture (`lrLambda: "exponential"`): LAMBDAS here and in
the test define each name the same way. SequentialLR's cases list the schedulers it runs
(`sequence`) and its `milestones`. A case with `epochs` steps CosineAnnealingWarmRestarts with
`scheduler.step(epoch)` at each listed (fractional) epoch, and with a plain `step()` where the
list holds null.

LinearWarmup has no PyTorch class of its own: its golden is
`SequentialLR([LinearLR(start_factor, total_iters=warmup), other], milestones=[warmup])`, or
`LinearLR(start_factor, end_factor=1, total_iters=warmup)` when nothing follows the warmup.

Options are written camelCase as the TypeScript API spells them and translated here.

Regenerate with Debian's PyTorch (python3-torch):
    pnpm --filter @flodl/nn run goldens      # runs every scripts/make-*.py
or  /usr/bin/python3 scripts/make-goldens-schedulers.py
"""
import math
import os
import sys
import warnings

import torch
from torch.optim import lr_scheduler

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import write_json  # noqa: E402

STEPS = 1000
KEYWORDS = {
    "stepSize": "step_size",
    "gamma": "gamma",
    "milestones": "milestones",
    "tMax": "T_max",
    "etaMin": "eta_min",
    "maxLr": "max_lr",
    "totalSteps": "total_steps",
    "pctStart": "pct_start",
    "annealStrategy": "anneal_strategy",
    "cycleMomentum": "cycle_momentum",
    "baseMomentum": "base_momentum",
    "maxMomentum": "max_momentum",
    "divFactor": "div_factor",
    "finalDivFactor": "final_div_factor",
    "threePhase": "three_phase",
    "baseLr": "base_lr",
    "stepSizeUp": "step_size_up",
    "stepSizeDown": "step_size_down",
    "mode": "mode",
    "factor": "factor",
    "patience": "patience",
    "threshold": "threshold",
    "thresholdMode": "threshold_mode",
    "cooldown": "cooldown",
    "minLr": "min_lr",
    "eps": "eps",
    "startFactor": "start_factor",
    "endFactor": "end_factor",
    "totalIters": "total_iters",
    "t0": "T_0",
    "tMult": "T_mult",
}
LAMBDAS = {
    "exponential": lambda epoch: 0.95 ** epoch,
    "inverseSqrt": lambda epoch: 1 / math.sqrt(1 + epoch),
    "warmup100": lambda epoch: min(1.0, (epoch + 1) / 100),
    "halveEvery250": lambda epoch: 0.5 ** (epoch // 250),
}
CLASSES = {
    "StepLR": lr_scheduler.StepLR,
    "MultiStepLR": lr_scheduler.MultiStepLR,
    "ExponentialLR": lr_scheduler.ExponentialLR,
    "CosineAnnealingLR": lr_scheduler.CosineAnnealingLR,
    "OneCycleLR": lr_scheduler.OneCycleLR,
    "CyclicLR": lr_scheduler.CyclicLR,
    "ReduceLROnPlateau": lr_scheduler.ReduceLROnPlateau,
    "LinearLR": lr_scheduler.LinearLR,
    "CosineAnnealingWarmRestarts": lr_scheduler.CosineAnnealingWarmRestarts,
}


def keywords(options):
    return {KEYWORDS[key]: value for key, value in options.items()}


def build(name, options, optimizer):
    """One scheduler from its TS name and camelCase options (LambdaLR's functions by name)."""
    if name == "LambdaLR":
        names = options["lrLambda"]
        functions = [LAMBDAS[item] for item in names] if isinstance(names, list) else LAMBDAS[names]
        return lr_scheduler.LambdaLR(optimizer, functions)
    return CLASSES[name](optimizer, **keywords(options))


def metric_sequence():
    """A loss-like curve: decaying, noisy (a fixed LCG), with flat stretches that trigger reductions."""
    state = 12345
    values = []
    for step in range(STEPS):
        state = (1103515245 * state + 12345) % 2**31
        noise = state / 2**31 * 2 - 1
        level = 1 / (1 + min(step, 150) / 60 + max(0, step - 400) / 300)
        values.append(level + 0.01 * noise)
    return values


METRICS = metric_sequence()


def make_optimizer(kind, lrs):
    groups = [{"params": [torch.zeros(2, requires_grad=True)], "lr": lr} for lr in lrs]
    if kind == "Adam":
        return torch.optim.Adam(groups)
    return torch.optim.SGD(groups, lr=lrs[0], momentum=0.9)


def make_scheduler(case, optimizer):
    name = case["scheduler"]
    if name == "LinearWarmup":
        options = case["options"]
        warmup = lr_scheduler.LinearLR(optimizer, start_factor=options["startFactor"], end_factor=1.0,
                                       total_iters=options["warmupSteps"])
        after = case.get("after")
        if after is None:
            return warmup
        other = CLASSES[after["scheduler"]](optimizer, **keywords(after["options"]))
        return lr_scheduler.SequentialLR(optimizer, [warmup, other], milestones=[options["warmupSteps"]])
    if name == "SequentialLR":
        schedulers = [build(item["scheduler"], item["options"], optimizer) for item in case["sequence"]]
        return lr_scheduler.SequentialLR(optimizer, schedulers, milestones=case["options"]["milestones"])
    return build(name, case["options"], optimizer)


def momentum_of(group):
    return group["betas"][0] if "betas" in group else group["momentum"]


def run(case):
    metrics = [-value for value in METRICS] if case.get("negateMetric") else METRICS
    optimizer = make_optimizer(case.get("optimizer", "SGD"), case["lrs"])
    scheduler = make_scheduler(case, optimizer)
    lrs = [[group["lr"] for group in optimizer.param_groups]]
    momenta = [[momentum_of(group) for group in optimizer.param_groups]]
    for step in range(STEPS):
        optimizer.step()
        if case["scheduler"] == "ReduceLROnPlateau":
            scheduler.step(metrics[step])
        elif case.get("epochs") is not None and case["epochs"][step] is not None:
            scheduler.step(case["epochs"][step])
        else:
            scheduler.step()
        lrs.append([group["lr"] for group in optimizer.param_groups])
        momenta.append([momentum_of(group) for group in optimizer.param_groups])
    result = dict(case, expectedLrs=lrs)
    if case.get("recordMomentum"):
        result["expectedMomenta"] = momenta
    return result


def cases():
    def case(name, scheduler, options, lrs=(0.1,), **extra):
        return {"name": name, "scheduler": scheduler, "options": options, "lrs": list(lrs), **extra}

    return [
        case("StepLR 30 x0.1", "StepLR", {"stepSize": 30, "gamma": 0.1}),
        case("StepLR 7 x0.5 two groups", "StepLR", {"stepSize": 7, "gamma": 0.5}, lrs=(0.1, 0.03)),
        case("StepLR 100 x0.9", "StepLR", {"stepSize": 100, "gamma": 0.9}),
        case("MultiStepLR", "MultiStepLR", {"milestones": [100, 300, 600], "gamma": 0.1}),
        case("MultiStepLR repeated milestones two groups", "MultiStepLR",
             {"milestones": [50, 50, 200, 999], "gamma": 0.5}, lrs=(0.1, 0.02)),
        case("ExponentialLR 0.99", "ExponentialLR", {"gamma": 0.99}),
        case("ExponentialLR 0.995 two groups", "ExponentialLR", {"gamma": 0.995}, lrs=(0.1, 0.7)),
        case("CosineAnnealingLR 100", "CosineAnnealingLR", {"tMax": 100}),
        case("CosineAnnealingLR 100 etaMin", "CosineAnnealingLR", {"tMax": 100, "etaMin": 0.001}),
        case("CosineAnnealingLR 300", "CosineAnnealingLR", {"tMax": 300}),
        case("CosineAnnealingLR 37 etaMin two groups", "CosineAnnealingLR", {"tMax": 37, "etaMin": 1e-4},
             lrs=(0.1, 0.05)),
        case("CosineAnnealingLR 1000", "CosineAnnealingLR", {"tMax": 1000}),
        case("OneCycleLR defaults", "OneCycleLR", {"maxLr": 0.1, "totalSteps": 1000}, recordMomentum=True),
        case("OneCycleLR linear three phase two groups", "OneCycleLR",
             {"maxLr": [0.1, 0.05], "totalSteps": 1000, "pctStart": 0.25, "annealStrategy": "linear",
              "divFactor": 10.0, "finalDivFactor": 100.0, "threePhase": True,
              "baseMomentum": 0.8, "maxMomentum": 0.9}, lrs=(0.1, 0.05), recordMomentum=True),
        case("OneCycleLR Adam betas", "OneCycleLR", {"maxLr": 0.01, "totalSteps": 1200, "pctStart": 0.1},
             optimizer="Adam", recordMomentum=True),
        case("OneCycleLR no momentum cycling", "OneCycleLR",
             {"maxLr": 0.1, "totalSteps": 1000, "cycleMomentum": False}, recordMomentum=True),
        case("CyclicLR triangular", "CyclicLR", {"baseLr": 0.001, "maxLr": 0.1, "stepSizeUp": 50},
             recordMomentum=True),
        case("CyclicLR triangular2 asymmetric", "CyclicLR",
             {"baseLr": 0.001, "maxLr": 0.1, "stepSizeUp": 40, "stepSizeDown": 60, "mode": "triangular2"},
             recordMomentum=True),
        case("CyclicLR exp_range two groups", "CyclicLR",
             {"baseLr": [0.001, 0.0005], "maxLr": [0.1, 0.02], "stepSizeUp": 100, "mode": "exp_range",
              "gamma": 0.998, "baseMomentum": 0.85, "maxMomentum": 0.95}, lrs=(0.1, 0.05), recordMomentum=True),
        case("CyclicLR Adam without momentum cycling", "CyclicLR",
             {"baseLr": 0.0001, "maxLr": 0.003, "stepSizeUp": 33, "cycleMomentum": False}, optimizer="Adam"),
        case("LinearWarmup alone", "LinearWarmup", {"warmupSteps": 100, "startFactor": 0.1}),
        case("LinearWarmup then StepLR", "LinearWarmup", {"warmupSteps": 50, "startFactor": 0.25},
             after={"scheduler": "StepLR", "options": {"stepSize": 100, "gamma": 0.5}}),
        case("LinearWarmup then CosineAnnealingLR two groups", "LinearWarmup",
             {"warmupSteps": 100, "startFactor": 1 / 3},
             after={"scheduler": "CosineAnnealingLR", "options": {"tMax": 900, "etaMin": 1e-5}}, lrs=(0.1, 0.01)),
        case("LinearWarmup then ExponentialLR", "LinearWarmup", {"warmupSteps": 20, "startFactor": 0.5},
             after={"scheduler": "ExponentialLR", "options": {"gamma": 0.995}}),
        case("LambdaLR exponential", "LambdaLR", {"lrLambda": "exponential"}),
        case("LambdaLR one per group", "LambdaLR", {"lrLambda": ["warmup100", "inverseSqrt"]}, lrs=(0.1, 0.03)),
        case("LambdaLR halving Adam", "LambdaLR", {"lrLambda": "halveEvery250"}, optimizer="Adam"),
        case("LinearLR defaults", "LinearLR", {}),
        case("LinearLR warmup 100", "LinearLR", {"startFactor": 0.1, "totalIters": 100}),
        case("LinearLR decay two groups", "LinearLR", {"startFactor": 1.0, "endFactor": 0.05, "totalIters": 400},
             lrs=(0.1, 0.02)),
        case("CosineAnnealingWarmRestarts 50", "CosineAnnealingWarmRestarts", {"t0": 50}),
        case("CosineAnnealingWarmRestarts 10 x2 etaMin", "CosineAnnealingWarmRestarts",
             {"t0": 10, "tMult": 2, "etaMin": 1e-4}),
        case("CosineAnnealingWarmRestarts 7 x3 two groups", "CosineAnnealingWarmRestarts", {"t0": 7, "tMult": 3},
             lrs=(0.1, 0.05)),
        case("CosineAnnealingWarmRestarts fractional epochs", "CosineAnnealingWarmRestarts",
             {"t0": 10, "tMult": 2, "etaMin": 1e-3},
             epochs=[step // 7 + (step % 7) / 7 if step < 700 else None for step in range(STEPS)]),
        case("CosineAnnealingWarmRestarts fractional epochs x1", "CosineAnnealingWarmRestarts", {"t0": 6},
             epochs=[step / 4 if step % 50 < 40 else None for step in range(STEPS)]),
        case("SequentialLR LinearLR then CosineAnnealingLR", "SequentialLR", {"milestones": [50]},
             sequence=[{"scheduler": "LinearLR", "options": {"startFactor": 0.1, "totalIters": 50}},
                       {"scheduler": "CosineAnnealingLR", "options": {"tMax": 950}}]),
        case("SequentialLR three schedulers two groups", "SequentialLR", {"milestones": [100, 400]},
             sequence=[{"scheduler": "LambdaLR", "options": {"lrLambda": "warmup100"}},
                       {"scheduler": "ExponentialLR", "options": {"gamma": 0.995}},
                       {"scheduler": "StepLR", "options": {"stepSize": 150, "gamma": 0.5}}], lrs=(0.1, 0.04)),
        case("SequentialLR LinearLR then warm restarts", "SequentialLR", {"milestones": [30]},
             sequence=[{"scheduler": "LinearLR", "options": {}},
                       {"scheduler": "CosineAnnealingWarmRestarts", "options": {"t0": 40, "tMult": 2}}]),
        case("ReduceLROnPlateau defaults", "ReduceLROnPlateau", {}),
        case("ReduceLROnPlateau max abs cooldown", "ReduceLROnPlateau",
             {"mode": "max", "thresholdMode": "abs", "threshold": 0.002, "factor": 0.5, "patience": 5,
              "cooldown": 3}, negateMetric=True),
        case("ReduceLROnPlateau min lr two groups", "ReduceLROnPlateau",
             {"factor": 0.3, "patience": 3, "threshold": 0.05, "minLr": [0.001, 0.0005], "eps": 1e-4},
             lrs=(0.1, 0.01)),
    ]


def main():
    warnings.filterwarnings("ignore")
    results = [run(case) for case in cases()]
    fixture = {"torch": torch.__version__, "steps": STEPS, "metrics": METRICS, "cases": results}
    path = os.path.join(os.path.dirname(__file__), "..", "test", "fixtures", "schedulers.json")
    write_json(path, fixture)
    print(f"wrote {path}: {len(results)} cases of {STEPS} steps")


if __name__ == "__main__":
    main()
