"""Golden cases for the nn layers and loss modules (test/layers.test.ts, test/losses.test.ts).

Every layer case does, in PyTorch:

  1. torch.manual_seed(seed), then builds the layer (float32, the default) and records its
     state_dict as `init`. Our layer built after manualSeed(seed) must hold the same values:
     libtorch's generator is the same, so the same init calls in the same order give the
     same numbers bit for bit.
  2. Casts the layer to float64 (`.double()`) and loads `state`: the init values plus small
     rounded noise (so all-ones / all-zeros inits such as BatchNorm's are no blind spot),
     recorded with PyTorch's state_dict key names. The test casts its layer with
     `.to('float64')` and loads `state` with loadStateDict(record, strict).
  3. Runs forward on float64 `inputs` (train or eval mode as `train` says), and backward
     from sum_k (outputs[k] * R[k]).sum() with fixed, recorded R; records `outputs`, the
     gradients of every floating input (`inputGrads`, by the input's position) and of every
     parameter (`paramGrads`, by state_dict name), and, where forward changes state
     (running statistics, max_norm renormalisation), the state afterwards as `after`.

Layers that draw from the generator in forward (Dropout in training) run forward right after
construction, with inputs from a separate generator, so the masks line up with ours too.

Values: float32 init values are written with 9 significant digits (enough to round-trip a
float32; the test reads them back with Math.fround); inputs, R and states are rounded to 4
decimals so they print short; outputs and gradients are float64 in full.

Loss cases (losses.json) build the loss module in float64, run forward on float64 inputs and
record the loss and the gradients of the floating inputs (of (loss * R).sum() for
reduction='none'). FocalLoss is checked against torchvision's sigmoid_focal_loss formula,
written out in PyTorch ops below (torchvision is not installed with Debian's PyTorch).

Option names are written as the TypeScript API spells them (`args` are the TypeScript
constructor's arguments), beside the PyTorch constructor that matches them.

Regenerate with Debian's PyTorch (python3-torch):
    pnpm --filter @flodl/nn run goldens      # runs every scripts/make-*.py
or  /usr/bin/python3 scripts/make-goldens-layers.py
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testing", "python"))
from flodl_goldens import dtype_name, encode_data, fixtures_dir, write_json  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = fixtures_dir(__file__)
F64 = torch.float64


# ---------------------------------------------------------------------------------------------
# Encoding


def encode(tensor, exact32=False):
    tensor = tensor.detach().cpu()
    dtype = dtype_name(tensor.dtype)
    flat = tensor.flatten().tolist()
    if tensor.dtype == torch.bool:
        data = [int(value) for value in flat]
    elif tensor.dtype == torch.float32:
        data = [float("%.9g" % value) for value in flat]
    else:
        data = flat
    return {"shape": list(tensor.shape), "dtype": dtype, "data": data}


class Ref:
    """An input that is the same tensor as input `index` (self-attention: m(x, x, x))."""

    def __init__(self, index):
        self.index = index


class Const:
    """A floating input that takes no gradient (a target, a mask)."""

    def __init__(self, tensor):
        self.tensor = tensor


def rounded(tensor):
    return torch.round(tensor * 1e4) / 1e4


class Data:
    """Inputs, noise and R from a generator of their own (the global one is the layers')."""

    def __init__(self, seed):
        self.generator = torch.Generator().manual_seed(seed)

    def randn(self, *shape):
        return rounded(torch.randn(tuple(shape), generator=self.generator, dtype=F64))

    def rand(self, *shape):
        return rounded(torch.rand(tuple(shape), generator=self.generator, dtype=F64))

    def randint(self, high, *shape):
        return torch.randint(0, high, shape, generator=self.generator)


def encode_value(value):
    """Inputs as the test decodes them: tensors, refs, no-grad tensors, lists, option objects."""
    if isinstance(value, torch.Tensor):
        return {"tensor": encode(value), "grad": value.is_floating_point()}
    if isinstance(value, Const):
        return {"tensor": encode(value.tensor), "grad": False}
    if isinstance(value, Ref):
        return {"ref": value.index}
    if isinstance(value, (list, tuple)):
        return [encode_value(item) for item in value]
    if isinstance(value, dict):
        return {key: encode_value(item) for key, item in value.items()}
    return value


def materialize(inputs):
    """Leaves for PyTorch: (call arguments, [(position, leaf)] of the inputs that take gradients)."""
    leaves = []

    def walk(value, path):
        if isinstance(value, torch.Tensor):
            leaf = value.clone()
            if leaf.is_floating_point():
                leaf.requires_grad_(True)
                leaves.append((path, leaf))
            return leaf
        if isinstance(value, Const):
            return value.tensor.clone()
        if isinstance(value, (list, tuple)):
            return [walk(item, f"{path}.{k}") for k, item in enumerate(value)]
        if isinstance(value, dict):
            return {key: walk(item, f"{path}.{key}") for key, item in value.items()}
        return value

    arguments = []
    for k, value in enumerate(inputs):
        arguments.append(arguments[value.index] if isinstance(value, Ref) else walk(value, str(k)))
    return arguments, leaves


def backward_from(outputs, data):
    """Runs backward from sum_k (outputs[k] * R[k]).sum(); returns the encoded R per output."""
    total = None
    weights = {}
    for key, output in outputs.items():
        if output is None or not output.is_floating_point():
            continue
        weight = data.randn(*output.shape)
        weights[key] = encode(weight)
        term = (output * weight).sum()
        total = term if total is None else total + term
    total.backward()
    return weights


# ---------------------------------------------------------------------------------------------
# Layer cases

LAYER_CASES = []


def perturbed_state(module, data, overrides):
    state = {}
    for key, value in module.state_dict().items():
        if key in overrides:
            state[key] = overrides[key]
        elif key.endswith("running_var"):
            state[key] = rounded(value * (1 + data.rand(*value.shape)))
        elif value.is_floating_point():
            state[key] = rounded(value + 0.1 * data.randn(*value.shape))
        else:
            state[key] = value.clone()
    return state


def layer_case(
    name,
    layer,
    args,
    make,
    inputs,
    seed,
    call=None,
    train=True,
    repr_=False,
    after=False,
    state=None,
    keep_init=False,
):
    """`inputs(data)` gives the forward inputs; `call(module, *inputs)` returns {key: output}."""
    torch.manual_seed(seed)
    module = make()
    init = [[key, encode(value)] for key, value in module.state_dict().items()]
    data = Data(1000 + seed)
    module.train(train)
    module.double()
    overrides = (state or (lambda module, data: {}))(module, data)
    loaded = {key: value.clone() for key, value in module.state_dict().items()} if keep_init else None
    new_state = loaded or perturbed_state(module, data, overrides)
    module.load_state_dict(new_state)
    case_inputs = inputs(data)
    arguments, leaves = materialize(case_inputs)
    outputs = (call or (lambda m, *a: {"": m(*a)}))(module, *arguments)
    weights = backward_from(outputs, data)
    case = {
        "name": name,
        "layer": layer,
        "args": args,
        "seed": seed,
        "train": train,
        "init": init,
        "state": [[key, encode(value)] for key, value in new_state.items()],
        "inputs": [encode_value(value) for value in case_inputs],
        "outputs": [[key, encode(value)] for key, value in outputs.items() if value is not None],
        "R": weights,
        "inputGrads": [[path, encode(leaf.grad)] for path, leaf in leaves],
        "paramGrads": [
            [key, None if parameter.grad is None else encode(parameter.grad)]
            for key, parameter in module.named_parameters()
        ],
    }
    if repr_:
        torch.manual_seed(seed)
        case["repr"] = repr(make())
    if after:
        case["after"] = [[key, encode(value)] for key, value in module.state_dict().items()]
    LAYER_CASES.append(case)


def module_spec(layer, *args):
    """A child module for Sequential: the test builds `new layer(...args)`."""
    return {"module": {"layer": layer, "args": list(args)}}


class RMSNormReference(nn.Module):
    """PyTorch 2.4's nn.RMSNorm written out (1.13 has none): x·rsqrt(mean(x²) + eps)·weight."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True):
        super().__init__()
        self.normalized_shape = tuple(
            [normalized_shape] if isinstance(normalized_shape, int) else normalized_shape
        )
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(self.normalized_shape)) if elementwise_affine else None

    def forward(self, x):
        eps = self.eps if self.eps is not None else torch.finfo(x.dtype).eps
        dims = tuple(range(-len(self.normalized_shape), 0))
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * self.weight if self.weight is not None else y

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.weight is not None}"


def recurrent(m, x, *state):
    """GRU/LSTM outputs under the names of our result objects."""
    if isinstance(m, nn.LSTM):
        output, (h, c) = m(x, tuple(state[0])) if state else m(x)
        return {"output": output, "hN": h, "cN": c}
    output, h = m(x, state[0]) if state else m(x)
    return {"output": output, "hN": h}


def attention(m, q, k, v, options=None):
    options = options or {}
    output, weights = m(
        q,
        k,
        v,
        key_padding_mask=options.get("keyPaddingMask"),
        need_weights=options.get("needWeights", True),
        attn_mask=options.get("attnMask"),
        average_attn_weights=options.get("averageAttnWeights", True),
    )
    return {"output": output, "weights": weights}


def values_indices(result):
    values, indices = result
    return {"values": values, "indices": indices}


def add_layer_cases():
    # --- linear family
    layer_case("Linear", "Linear", [5, 3], lambda: nn.Linear(5, 3),
               lambda d: [d.randn(2, 4, 5)], seed=1, repr_=True)
    layer_case("Linear no bias", "Linear", [4, 2, {"bias": False}], lambda: nn.Linear(4, 2, bias=False),
               lambda d: [d.randn(3, 4)], seed=2, repr_=True)
    layer_case("Bilinear", "Bilinear", [3, 4, 2], lambda: nn.Bilinear(3, 4, 2),
               lambda d: [d.randn(5, 3), d.randn(5, 4)], seed=3, repr_=True)
    layer_case("Bilinear no bias", "Bilinear", [2, 3, 4, {"bias": False}],
               lambda: nn.Bilinear(2, 3, 4, bias=False), lambda d: [d.randn(3, 2), d.randn(3, 3)], seed=4)
    layer_case("Identity", "Identity", [], lambda: nn.Identity(), lambda d: [d.randn(2, 3)], seed=5, repr_=True)
    layer_case("Flatten", "Flatten", [], lambda: nn.Flatten(), lambda d: [d.randn(2, 3, 2, 2)], seed=6, repr_=True)
    layer_case("Flatten 0..1", "Flatten", [0, 1], lambda: nn.Flatten(0, 1),
               lambda d: [d.randn(2, 3, 4)], seed=7, repr_=True)
    layer_case("Unflatten", "Unflatten", [1, [2, 3]], lambda: nn.Unflatten(1, (2, 3)),
               lambda d: [d.randn(2, 6, 2)], seed=8, repr_=True)
    layer_case("Unflatten one size", "Unflatten", [-1, [4]], lambda: nn.Unflatten(-1, (4,)),
               lambda d: [d.randn(2, 4)], seed=9, repr_=True)

    # --- convolutions
    layer_case("Conv1d stride padding groups", "Conv1d", [4, 6, 3, {"stride": 2, "padding": 1, "groups": 2}],
               lambda: nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2),
               lambda d: [d.randn(2, 4, 9)], seed=10, repr_=True)
    layer_case("Conv1d same reflect", "Conv1d", [2, 3, 4, {"padding": "same", "paddingMode": "reflect"}],
               lambda: nn.Conv1d(2, 3, 4, padding="same", padding_mode="reflect"),
               lambda d: [d.randn(2, 2, 7)], seed=11, repr_=True)
    layer_case("Conv2d", "Conv2d", [4, 6, [3, 2], {"stride": [2, 1], "padding": [1, 0], "groups": 2}],
               lambda: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2),
               lambda d: [d.randn(2, 4, 7, 5)], seed=12, repr_=True)
    layer_case("Conv2d replicate no bias", "Conv2d",
               [3, 4, 3, {"padding": 1, "paddingMode": "replicate", "bias": False}],
               lambda: nn.Conv2d(3, 4, 3, padding=1, padding_mode="replicate", bias=False),
               lambda d: [d.randn(1, 3, 5, 4)], seed=13, repr_=True)
    layer_case("Conv2d circular", "Conv2d", [2, 2, 3, {"padding": [1, 2], "paddingMode": "circular"}],
               lambda: nn.Conv2d(2, 2, 3, padding=(1, 2), padding_mode="circular"),
               lambda d: [d.randn(1, 2, 4, 5)], seed=14, repr_=True)
    layer_case("Conv2d same dilation", "Conv2d", [2, 3, 3, {"padding": "same", "dilation": 2}],
               lambda: nn.Conv2d(2, 3, 3, padding="same", dilation=2),
               lambda d: [d.randn(1, 2, 6, 5)], seed=15, repr_=True)
    layer_case("Conv1d same even kernel", "Conv1d", [2, 2, 4, {"padding": "same"}],
               lambda: nn.Conv1d(2, 2, 4, padding="same"), lambda d: [d.randn(1, 2, 6)], seed=131, repr_=True)
    layer_case("Conv2d valid", "Conv2d", [1, 2, 2, {"padding": "valid"}],
               lambda: nn.Conv2d(1, 2, 2, padding="valid"), lambda d: [d.randn(2, 1, 3, 3)], seed=16, repr_=True)
    layer_case("Conv3d", "Conv3d", [2, 4, [2, 3, 2], {"padding": [1, 0, 1]}],
               lambda: nn.Conv3d(2, 4, (2, 3, 2), padding=(1, 0, 1)),
               lambda d: [d.randn(1, 2, 3, 4, 3)], seed=17, repr_=True)
    layer_case("ConvTranspose1d", "ConvTranspose1d", [4, 2, 3, {"stride": 2, "padding": 1, "outputPadding": 1}],
               lambda: nn.ConvTranspose1d(4, 2, 3, stride=2, padding=1, output_padding=1),
               lambda d: [d.randn(2, 4, 5)], seed=18, repr_=True)
    layer_case("ConvTranspose2d groups", "ConvTranspose2d",
               [4, 6, 3, {"stride": 2, "padding": 1, "outputPadding": 1, "groups": 2}],
               lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1, groups=2),
               lambda d: [d.randn(1, 4, 3, 4)], seed=19, repr_=True)
    layer_case("ConvTranspose2d dilation no bias", "ConvTranspose2d",
               [2, 3, [2, 3], {"dilation": 2, "bias": False}],
               lambda: nn.ConvTranspose2d(2, 3, (2, 3), dilation=2, bias=False),
               lambda d: [d.randn(2, 2, 3, 3)], seed=20, repr_=True)
    layer_case("ConvTranspose3d", "ConvTranspose3d", [2, 3, 2, {"stride": 2}],
               lambda: nn.ConvTranspose3d(2, 3, 2, stride=2), lambda d: [d.randn(1, 2, 2, 3, 2)], seed=21)

    # --- batch norm: train mode updates running stats (after), eval mode uses them
    layer_case("BatchNorm1d train (N, C)", "BatchNorm1d", [3], lambda: nn.BatchNorm1d(3),
               lambda d: [d.randn(4, 3)], seed=22, after=True)
    layer_case("BatchNorm1d train (N, C, L)", "BatchNorm1d", [3, {"eps": 1e-3, "momentum": 0.25}],
               lambda: nn.BatchNorm1d(3, eps=1e-3, momentum=0.25),
               lambda d: [d.randn(2, 3, 5)], seed=23, after=True, repr_=True)
    layer_case("BatchNorm1d eval", "BatchNorm1d", [3], lambda: nn.BatchNorm1d(3),
               lambda d: [d.randn(2, 3, 4)], seed=24, train=False, after=True)
    layer_case("BatchNorm1d cumulative average", "BatchNorm1d", [2, {"momentum": None}],
               lambda: nn.BatchNorm1d(2, momentum=None), lambda d: [d.randn(5, 2)], seed=25, after=True,
               state=lambda m, d: {"num_batches_tracked": torch.tensor(3)}, repr_=True)
    layer_case("BatchNorm1d no affine no stats train", "BatchNorm1d",
               [3, {"affine": False, "trackRunningStats": False}],
               lambda: nn.BatchNorm1d(3, affine=False, track_running_stats=False),
               lambda d: [d.randn(4, 3)], seed=26, repr_=True)
    layer_case("BatchNorm1d no stats eval", "BatchNorm1d", [3, {"trackRunningStats": False}],
               lambda: nn.BatchNorm1d(3, track_running_stats=False),
               lambda d: [d.randn(4, 3)], seed=27, train=False)
    layer_case("BatchNorm2d train", "BatchNorm2d", [3], lambda: nn.BatchNorm2d(3),
               lambda d: [d.randn(2, 3, 3, 2)], seed=28, after=True, repr_=True)
    layer_case("BatchNorm2d eval", "BatchNorm2d", [3, {"eps": 0.01}], lambda: nn.BatchNorm2d(3, eps=0.01),
               lambda d: [d.randn(2, 3, 2, 2)], seed=29, train=False, after=True, repr_=True)

    # --- layer, RMS, group and instance norm
    layer_case("LayerNorm", "LayerNorm", [[3, 4]], lambda: nn.LayerNorm([3, 4]),
               lambda d: [d.randn(2, 2, 3, 4)], seed=30, repr_=True)
    layer_case("LayerNorm no affine", "LayerNorm", [4, {"eps": 1e-6, "elementwiseAffine": False}],
               lambda: nn.LayerNorm(4, eps=1e-6, elementwise_affine=False),
               lambda d: [d.randn(3, 4)], seed=31, repr_=True)
    layer_case("RMSNorm", "RMSNorm", [6], lambda: RMSNormReference(6), lambda d: [d.randn(3, 6)], seed=32)
    layer_case("RMSNorm eps", "RMSNorm", [[2, 3], {"eps": 1e-6}], lambda: RMSNormReference([2, 3], eps=1e-6),
               lambda d: [d.randn(2, 2, 3)], seed=33)
    layer_case("RMSNorm no affine", "RMSNorm", [4, {"elementwiseAffine": False}],
               lambda: RMSNormReference(4, elementwise_affine=False), lambda d: [d.randn(2, 4)], seed=34)
    layer_case("GroupNorm", "GroupNorm", [2, 6], lambda: nn.GroupNorm(2, 6),
               lambda d: [d.randn(2, 6, 5)], seed=35, repr_=True)
    layer_case("GroupNorm no affine", "GroupNorm", [3, 6, {"eps": 1e-4, "affine": False}],
               lambda: nn.GroupNorm(3, 6, eps=1e-4, affine=False),
               lambda d: [d.randn(2, 6, 2, 3)], seed=36, repr_=True)
    layer_case("InstanceNorm1d", "InstanceNorm1d", [3], lambda: nn.InstanceNorm1d(3),
               lambda d: [d.randn(2, 3, 6)], seed=37, repr_=True)
    layer_case("InstanceNorm1d unbatched", "InstanceNorm1d", [3, {"affine": True}],
               lambda: nn.InstanceNorm1d(3, affine=True), lambda d: [d.randn(3, 5)], seed=38)
    layer_case("InstanceNorm1d tracked train", "InstanceNorm1d",
               [3, {"affine": True, "trackRunningStats": True, "momentum": 0.2}],
               lambda: nn.InstanceNorm1d(3, affine=True, track_running_stats=True, momentum=0.2),
               lambda d: [d.randn(2, 3, 6)], seed=39, after=True, repr_=True)
    layer_case("InstanceNorm1d tracked eval", "InstanceNorm1d", [3, {"trackRunningStats": True}],
               lambda: nn.InstanceNorm1d(3, track_running_stats=True),
               lambda d: [d.randn(2, 3, 6)], seed=40, train=False, after=True)
    layer_case("InstanceNorm2d affine", "InstanceNorm2d", [3, {"affine": True, "eps": 1e-3}],
               lambda: nn.InstanceNorm2d(3, affine=True, eps=1e-3),
               lambda d: [d.randn(2, 3, 4, 4)], seed=41, repr_=True)
    layer_case("InstanceNorm2d tracked train", "InstanceNorm2d", [2, {"trackRunningStats": True}],
               lambda: nn.InstanceNorm2d(2, track_running_stats=True),
               lambda d: [d.randn(3, 2, 3, 3)], seed=42, after=True)
    layer_case("InstanceNorm2d tracked eval", "InstanceNorm2d", [2, {"affine": True, "trackRunningStats": True}],
               lambda: nn.InstanceNorm2d(2, affine=True, track_running_stats=True),
               lambda d: [d.randn(1, 2, 3, 3)], seed=43, train=False)

    # --- dropout: identity in eval; in training the masks come from the shared generator
    layer_case("Dropout eval", "Dropout", [0.3], lambda: nn.Dropout(0.3), lambda d: [d.randn(4, 5)],
               seed=44, train=False, repr_=True)
    layer_case("Dropout2d eval", "Dropout2d", [0.4], lambda: nn.Dropout2d(0.4), lambda d: [d.randn(2, 3, 2, 2)],
               seed=45, train=False, repr_=True)
    layer_case("Dropout train", "Dropout", [0.3], lambda: nn.Dropout(0.3), lambda d: [d.randn(6, 7)], seed=46)
    layer_case("Dropout2d train", "Dropout2d", [0.4], lambda: nn.Dropout2d(0.4),
               lambda d: [d.randn(3, 5, 2, 2)], seed=47)

    # --- embeddings
    layer_case("Embedding padding_idx", "Embedding", [10, 4, {"paddingIdx": 2}],
               lambda: nn.Embedding(10, 4, padding_idx=2),
               lambda d: [torch.tensor([[1, 2, 3, 2, 9], [0, 4, 4, 2, 7], [5, 6, 1, 1, 8]])], seed=48, repr_=True)
    layer_case("Embedding max_norm", "Embedding",
               [8, 3, {"paddingIdx": -1, "maxNorm": 1.0, "normType": 1.5, "scaleGradByFreq": True}],
               lambda: nn.Embedding(8, 3, padding_idx=-1, max_norm=1.0, norm_type=1.5, scale_grad_by_freq=True),
               lambda d: [torch.tensor([[0, 3, 3], [7, 5, 1]])], seed=49, after=True, repr_=True)
    layer_case("EmbeddingBag mean offsets", "EmbeddingBag", [10, 3], lambda: nn.EmbeddingBag(10, 3),
               lambda d: [torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), Const(torch.tensor([0, 3, 3, 6]))],
               seed=50, repr_=True)
    layer_case("EmbeddingBag sum per-sample weights", "EmbeddingBag", [10, 3, {"mode": "sum"}],
               lambda: nn.EmbeddingBag(10, 3, mode="sum"),
               lambda d: [torch.tensor([1, 2, 4, 5, 4, 3]), Const(torch.tensor([0, 2])), d.randn(6)], seed=51)
    layer_case("EmbeddingBag max 2-d", "EmbeddingBag", [6, 4, {"mode": "max", "paddingIdx": 0}],
               lambda: nn.EmbeddingBag(6, 4, mode="max", padding_idx=0),
               lambda d: [torch.tensor([[1, 0, 3], [5, 4, 0]])], seed=52, repr_=True)
    layer_case("EmbeddingBag include last offset", "EmbeddingBag",
               [7, 2, {"mode": "sum", "includeLastOffset": True}],
               lambda: nn.EmbeddingBag(7, 2, mode="sum", include_last_offset=True),
               lambda d: [torch.tensor([1, 2, 4, 5, 6, 3]), Const(torch.tensor([0, 2, 5, 6]))], seed=53)

    layer_case("EmbeddingBag max_norm", "EmbeddingBag",
               [9, 3, {"mode": "sum", "maxNorm": 0.8, "normType": 1.0, "scaleGradByFreq": True}],
               lambda: nn.EmbeddingBag(9, 3, mode="sum", max_norm=0.8, norm_type=1.0, scale_grad_by_freq=True),
               lambda d: [torch.tensor([[1, 2, 2], [8, 0, 1]])], seed=137, after=True, repr_=True)

    # --- recurrent
    layer_case("GRU 2 layers bidirectional", "GRU", [3, 4, {"numLayers": 2, "bidirectional": True}],
               lambda: nn.GRU(3, 4, num_layers=2, bidirectional=True),
               lambda d: [d.randn(5, 2, 3)], seed=54, call=recurrent, repr_=True)
    layer_case("GRU batchFirst h0 eval", "GRU",
               [3, 4, {"numLayers": 2, "dropout": 0.25, "bidirectional": True, "batchFirst": True}],
               lambda: nn.GRU(3, 4, num_layers=2, dropout=0.25, bidirectional=True, batch_first=True),
               lambda d: [d.randn(2, 5, 3), d.randn(4, 2, 4)], seed=55, call=recurrent, train=False, repr_=True)
    layer_case("GRU unbatched no bias", "GRU", [2, 3, {"bias": False}], lambda: nn.GRU(2, 3, bias=False),
               lambda d: [d.randn(4, 2), d.randn(1, 3)], seed=56, call=recurrent, repr_=True)
    layer_case("LSTM 2 layers bidirectional", "LSTM", [3, 4, {"numLayers": 2, "bidirectional": True}],
               lambda: nn.LSTM(3, 4, num_layers=2, bidirectional=True),
               lambda d: [d.randn(5, 2, 3)], seed=57, call=recurrent, repr_=True)
    layer_case("LSTM batchFirst states", "LSTM", [3, 4, {"numLayers": 2, "batchFirst": True}],
               lambda: nn.LSTM(3, 4, num_layers=2, batch_first=True),
               lambda d: [d.randn(2, 4, 3), [d.randn(2, 2, 4), d.randn(2, 2, 4)]],
               seed=58, call=recurrent, repr_=True)
    layer_case("LSTM unbatched states", "LSTM", [2, 3, {"bidirectional": True}],
               lambda: nn.LSTM(2, 3, bidirectional=True),
               lambda d: [d.randn(4, 2), [d.randn(2, 3), d.randn(2, 3)]], seed=59, call=recurrent)
    # In training the dropout between layers draws from the shared generator after the init.
    layer_case("GRU dropout train", "GRU", [2, 3, {"numLayers": 3, "dropout": 0.5}],
               lambda: nn.GRU(2, 3, num_layers=3, dropout=0.5), lambda d: [d.randn(4, 2, 2)],
               seed=132, call=recurrent)
    layer_case("LSTM dropout train", "LSTM", [2, 3, {"numLayers": 2, "dropout": 0.4, "bidirectional": True}],
               lambda: nn.LSTM(2, 3, num_layers=2, dropout=0.4, bidirectional=True),
               lambda d: [d.randn(4, 2, 2)], seed=133, call=recurrent)
    layer_case("GRUCell", "GRUCell", [3, 4], lambda: nn.GRUCell(3, 4),
               lambda d: [d.randn(2, 3), d.randn(2, 4)], seed=60, repr_=True)
    layer_case("GRUCell no state", "GRUCell", [3, 2, {"bias": False}], lambda: nn.GRUCell(3, 2, bias=False),
               lambda d: [d.randn(3, 3)], seed=61, repr_=True)
    layer_case("LSTMCell", "LSTMCell", [3, 4], lambda: nn.LSTMCell(3, 4),
               lambda d: [d.randn(2, 3), [d.randn(2, 4), d.randn(2, 4)]], seed=62, repr_=True,
               call=lambda m, x, state: dict(zip(["h", "c"], m(x, tuple(state)))))
    layer_case("LSTMCell no state no bias", "LSTMCell", [2, 3, {"bias": False}],
               lambda: nn.LSTMCell(2, 3, bias=False), lambda d: [d.randn(4, 2)], seed=63, repr_=True,
               call=lambda m, x: dict(zip(["h", "c"], m(x))))

    # --- attention (dropout off or eval mode: deterministic)
    layer_case("MultiheadAttention self", "MultiheadAttention", [8, 2], lambda: nn.MultiheadAttention(8, 2),
               lambda d: [d.randn(4, 2, 8), Ref(0), Ref(0)], seed=64, call=attention)
    layer_case("MultiheadAttention batchFirst masks", "MultiheadAttention", [6, 3, {"batchFirst": True}],
               lambda: nn.MultiheadAttention(6, 3, batch_first=True),
               lambda d: [d.randn(2, 3, 6), d.randn(2, 5, 6), d.randn(2, 5, 6), {
                   "keyPaddingMask": torch.tensor([[False, False, False, True, True],
                                                   [False, True, False, False, False]]),
                   "attnMask": torch.tensor([[False, True, False, False, False],
                                             [False, False, False, False, True],
                                             [True, False, False, False, False]]),
               }], seed=65, call=attention)
    layer_case("MultiheadAttention needWeights false", "MultiheadAttention", [4, 2, {"dropout": 0.1}],
               lambda: nn.MultiheadAttention(4, 2, dropout=0.1),
               lambda d: [d.randn(3, 2, 4), d.randn(5, 2, 4), d.randn(5, 2, 4), {
                   "needWeights": False,
                   "keyPaddingMask": torch.tensor([[False, False, False, False, True],
                                                   [True, False, False, False, False]]),
               }], seed=66, call=attention, train=False)
    layer_case("MultiheadAttention per-head weights float mask", "MultiheadAttention", [4, 2, {"bias": False}],
               lambda: nn.MultiheadAttention(4, 2, bias=False),
               lambda d: [d.randn(3, 1, 4), d.randn(4, 1, 4), d.randn(4, 1, 4), {
                   "averageAttnWeights": False,
                   "attnMask": Const(d.randn(3, 4)),
               }], seed=67, call=attention)

    layer_case("MultiheadAttention unbatched", "MultiheadAttention", [4, 2, {"batchFirst": True}],
               lambda: nn.MultiheadAttention(4, 2, batch_first=True),
               lambda d: [d.randn(3, 4), d.randn(5, 4), d.randn(5, 4), {
                   "keyPaddingMask": torch.tensor([False, True, False, False, True]),
               }], seed=134, call=attention)
    layer_case("MultiheadAttention dropout train", "MultiheadAttention", [4, 2, {"dropout": 0.3}],
               lambda: nn.MultiheadAttention(4, 2, dropout=0.3),
               lambda d: [d.randn(3, 2, 4), d.randn(5, 2, 4), d.randn(5, 2, 4)], seed=135, call=attention)
    layer_case("MultiheadAttention dropout train no weights", "MultiheadAttention", [4, 2, {"dropout": 0.3}],
               lambda: nn.MultiheadAttention(4, 2, dropout=0.3),
               lambda d: [d.randn(3, 2, 4), Ref(0), Ref(0), {"needWeights": False}], seed=136, call=attention)

    # --- pooling
    layer_case("MaxPool1d", "MaxPool1d", [3, {"stride": 2, "padding": 1}],
               lambda: nn.MaxPool1d(3, stride=2, padding=1), lambda d: [d.randn(2, 3, 9)], seed=68, repr_=True)
    layer_case("MaxPool1d dilation ceil indices", "MaxPool1d",
               [2, {"stride": 2, "dilation": 2, "ceilMode": True, "returnIndices": True}],
               lambda: nn.MaxPool1d(2, stride=2, dilation=2, ceil_mode=True, return_indices=True),
               lambda d: [d.randn(2, 2, 8)], seed=138, repr_=True, call=lambda m, x: values_indices(m(x)))
    layer_case("MaxPool2d dilation ceil", "MaxPool2d",
               [[2, 3], {"stride": [2, 1], "padding": [1, 1], "dilation": [1, 2], "ceilMode": True}],
               lambda: nn.MaxPool2d((2, 3), stride=(2, 1), padding=(1, 1), dilation=(1, 2), ceil_mode=True),
               lambda d: [d.randn(1, 2, 5, 6)], seed=69, repr_=True)
    layer_case("MaxPool2d indices", "MaxPool2d", [2, {"returnIndices": True}],
               lambda: nn.MaxPool2d(2, return_indices=True), lambda d: [d.randn(1, 2, 4, 4)], seed=70,
               call=lambda m, x: values_indices(m(x)))
    layer_case("AvgPool1d", "AvgPool1d", [3, {"stride": 2, "padding": 1, "countIncludePad": False}],
               lambda: nn.AvgPool1d(3, stride=2, padding=1, count_include_pad=False),
               lambda d: [d.randn(2, 2, 8)], seed=71, repr_=True)
    layer_case("AvgPool2d", "AvgPool2d", [3, {"stride": 2, "padding": 1, "ceilMode": True, "divisorOverride": 4}],
               lambda: nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, divisor_override=4),
               lambda d: [d.randn(1, 2, 6, 5)], seed=72, repr_=True)
    layer_case("AdaptiveAvgPool1d", "AdaptiveAvgPool1d", [4], lambda: nn.AdaptiveAvgPool1d(4),
               lambda d: [d.randn(2, 3, 10)], seed=73, repr_=True)
    layer_case("AdaptiveAvgPool2d None", "AdaptiveAvgPool2d", [[3, None]],
               lambda: nn.AdaptiveAvgPool2d((3, None)), lambda d: [d.randn(1, 2, 7, 4)], seed=74, repr_=True)
    layer_case("AdaptiveMaxPool2d", "AdaptiveMaxPool2d", [[2, 3]], lambda: nn.AdaptiveMaxPool2d((2, 3)),
               lambda d: [d.randn(2, 2, 5, 7)], seed=75, repr_=True)
    layer_case("AdaptiveMaxPool2d indices", "AdaptiveMaxPool2d", [2, {"returnIndices": True}],
               lambda: nn.AdaptiveMaxPool2d(2, return_indices=True), lambda d: [d.randn(1, 3, 5, 5)],
               seed=76, call=lambda m, x: values_indices(m(x)))

    # --- resampling
    layer_case("Upsample nearest", "Upsample", [{"scaleFactor": 2}], lambda: nn.Upsample(scale_factor=2),
               lambda d: [d.randn(1, 2, 3, 2)], seed=77, repr_=True)
    layer_case("Upsample bilinear size", "Upsample", [{"size": [5, 7], "mode": "bilinear"}],
               lambda: nn.Upsample(size=(5, 7), mode="bilinear"), lambda d: [d.randn(1, 2, 3, 4)], seed=78,
               repr_=True)
    layer_case("Upsample bilinear align corners", "Upsample",
               [{"scaleFactor": 1.5, "mode": "bilinear", "alignCorners": True}],
               lambda: nn.Upsample(scale_factor=1.5, mode="bilinear", align_corners=True),
               lambda d: [d.randn(2, 1, 4, 3)], seed=79, repr_=True)
    layer_case("Upsample nearest size", "Upsample", [{"size": 5}], lambda: nn.Upsample(size=5),
               lambda d: [d.randn(1, 2, 3)], seed=80, repr_=True)
    layer_case("PixelShuffle", "PixelShuffle", [2], lambda: nn.PixelShuffle(2),
               lambda d: [d.randn(1, 8, 2, 3)], seed=81, repr_=True)
    layer_case("PixelUnshuffle", "PixelUnshuffle", [2], lambda: nn.PixelUnshuffle(2),
               lambda d: [d.randn(1, 2, 4, 6)], seed=82, repr_=True)

    # --- activations
    activations = [
        ("ReLU", [], lambda: nn.ReLU()),
        ("LeakyReLU", [0.2], lambda: nn.LeakyReLU(0.2)),
        ("LeakyReLU", [], lambda: nn.LeakyReLU()),
        ("ELU", [0.5], lambda: nn.ELU(0.5)),
        ("ELU", [], lambda: nn.ELU()),
        ("SELU", [], lambda: nn.SELU()),
        ("GELU", [], lambda: nn.GELU()),
        ("GELU", ["tanh"], lambda: nn.GELU(approximate="tanh")),
        ("SiLU", [], lambda: nn.SiLU()),
        ("Mish", [], lambda: nn.Mish()),
        ("Softplus", [], lambda: nn.Softplus()),
        ("Softplus", [2, 1.5], lambda: nn.Softplus(2, 1.5)),
        ("Tanh", [], lambda: nn.Tanh()),
        ("Sigmoid", [], lambda: nn.Sigmoid()),
        ("Hardswish", [], lambda: nn.Hardswish()),
        ("Hardsigmoid", [], lambda: nn.Hardsigmoid()),
        ("PReLU", [], lambda: nn.PReLU()),
        ("PReLU", [3, 0.1], lambda: nn.PReLU(3, 0.1)),
        ("Softmax", [1], lambda: nn.Softmax(1)),
        ("LogSoftmax", [-1], lambda: nn.LogSoftmax(-1)),
    ]
    for k, (name, args, make) in enumerate(activations):
        # Inputs in (-4, 4): both sides of every kink, above Softplus(2, 1.5)'s threshold too.
        layer_case(f"{name}({', '.join(map(str, args))})", name, args, make,
                   lambda d: [rounded(d.randn(2, 3, 4) * 2)], seed=100 + k, repr_=True)

    # --- containers: init order across children, qualified names
    layer_case("Sequential", "Sequential",
               [module_spec("Linear", 4, 6), module_spec("BatchNorm1d", 6), module_spec("ReLU"),
                module_spec("Dropout", 0.1), module_spec("Linear", 6, 2, {"bias": False})],
               lambda: nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Dropout(0.1),
                                     nn.Linear(6, 2, bias=False)),
               lambda d: [d.randn(5, 4)], seed=130, train=False, repr_=True)


# ---------------------------------------------------------------------------------------------
# Loss cases

LOSS_CASES = []


def sigmoid_focal_loss(inputs, targets, alpha=0.25, gamma=2.0, reduction="none"):
    """torchvision.ops.sigmoid_focal_loss (torchvision 0.14), op for op."""
    p = torch.sigmoid(inputs)
    ce_loss = F.binary_cross_entropy_with_logits(inputs, targets, reduction="none")
    p_t = p * targets + (1 - p) * (1 - targets)
    loss = ce_loss * ((1 - p_t) ** gamma)
    if alpha >= 0:
        alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
        loss = alpha_t * loss
    if reduction == "mean":
        loss = loss.mean()
    elif reduction == "sum":
        loss = loss.sum()
    return loss


class FocalLossReference(nn.Module):
    def __init__(self, alpha=0.25, gamma=2.0, reduction="none"):
        super().__init__()
        self.alpha, self.gamma, self.reduction = alpha, gamma, reduction

    def forward(self, inputs, targets):
        return sigmoid_focal_loss(inputs, targets, self.alpha, self.gamma, self.reduction)


def loss_case(name, loss, options, make, inputs, seed, state_keys=None):
    """`options` as the TypeScript constructor takes them (tensors encoded); `make()` in float64."""
    data = Data(2000 + seed)
    module = make()
    case_inputs = inputs(data)
    arguments, leaves = materialize(case_inputs)
    output = module(*arguments)
    weights = backward_from({"": output}, data)
    LOSS_CASES.append({
        "name": name,
        "loss": loss,
        "options": encode_value(options) if options is not None else None,
        "stateKeys": list(module.state_dict().keys()),
        "repr": None if isinstance(module, FocalLossReference) else repr(module),
        "inputs": [encode_value(value) for value in case_inputs],
        "output": encode(output),
        "R": weights[""],
        "inputGrads": [[path, encode(leaf.grad)] for path, leaf in leaves],
    })


def add_loss_cases():
    def regression(d, *shape):
        return [d.randn(*shape), Const(d.randn(*shape))]

    loss_case("MSELoss", "MSELoss", None, lambda: nn.MSELoss(), lambda d: regression(d, 3, 4), seed=1)
    loss_case("MSELoss sum", "MSELoss", {"reduction": "sum"}, lambda: nn.MSELoss(reduction="sum"),
              lambda d: regression(d, 3, 4), seed=2)
    loss_case("L1Loss none", "L1Loss", {"reduction": "none"}, lambda: nn.L1Loss(reduction="none"),
              lambda d: regression(d, 2, 5), seed=3)
    loss_case("SmoothL1Loss beta", "SmoothL1Loss", {"beta": 0.5}, lambda: nn.SmoothL1Loss(beta=0.5),
              lambda d: regression(d, 4, 5), seed=4)
    loss_case("HuberLoss delta sum", "HuberLoss", {"delta": 0.7, "reduction": "sum"},
              lambda: nn.HuberLoss(delta=0.7, reduction="sum"), lambda d: regression(d, 4, 5), seed=5)

    weight = torch.tensor([0.5, 1.0, 2.0, 1.5], dtype=F64)
    loss_case("CrossEntropyLoss weight ignore smoothing", "CrossEntropyLoss",
              {"weight": Const(weight), "ignoreIndex": 1, "labelSmoothing": 0.1},
              lambda: nn.CrossEntropyLoss(weight=weight, ignore_index=1, label_smoothing=0.1),
              lambda d: [d.randn(6, 4), torch.tensor([0, 1, 3, 2, 1, 3])], seed=6)
    loss_case("CrossEntropyLoss probabilities", "CrossEntropyLoss", {"reduction": "sum"},
              lambda: nn.CrossEntropyLoss(reduction="sum"),
              lambda d: [d.randn(3, 4), Const(torch.softmax(d.randn(3, 4), 1))], seed=7)
    loss_case("CrossEntropyLoss spatial none", "CrossEntropyLoss", {"reduction": "none"},
              lambda: nn.CrossEntropyLoss(reduction="none"),
              lambda d: [d.randn(2, 3, 4), d.randint(3, 2, 4)], seed=8)
    loss_case("NLLLoss weight ignore", "NLLLoss", {"weight": Const(weight[:3]), "ignoreIndex": 0},
              lambda: nn.NLLLoss(weight=weight[:3], ignore_index=0),
              lambda d: [torch.log_softmax(d.randn(5, 3), 1), torch.tensor([0, 1, 2, 2, 1])], seed=9)
    loss_case("BCELoss weight", "BCELoss", {"weight": Const(torch.tensor([1.0, 2.0, 0.5], dtype=F64))},
              lambda: nn.BCELoss(weight=torch.tensor([1.0, 2.0, 0.5], dtype=F64)),
              lambda d: [rounded(d.rand(4, 3) * 0.9 + 0.05), Const(d.rand(4, 3))], seed=10)
    pos_weight = torch.tensor([2.0, 0.5, 1.0], dtype=F64)
    loss_case("BCEWithLogitsLoss pos_weight", "BCEWithLogitsLoss",
              {"posWeight": Const(pos_weight), "weight": Const(torch.tensor([1.5], dtype=F64))},
              lambda: nn.BCEWithLogitsLoss(pos_weight=pos_weight, weight=torch.tensor([1.5], dtype=F64)),
              lambda d: [d.randn(4, 3), Const(d.rand(4, 3))], seed=11)
    loss_case("KLDivLoss batchmean", "KLDivLoss", {"reduction": "batchmean"},
              lambda: nn.KLDivLoss(reduction="batchmean"),
              lambda d: [torch.log_softmax(d.randn(3, 5), 1), Const(torch.softmax(d.randn(3, 5), 1))], seed=12)
    loss_case("KLDivLoss log target", "KLDivLoss", {"logTarget": True, "reduction": "sum"},
              lambda: nn.KLDivLoss(log_target=True, reduction="sum"),
              lambda d: [torch.log_softmax(d.randn(3, 5), 1), Const(torch.log_softmax(d.randn(3, 5), 1))],
              seed=13)
    loss_case("CosineEmbeddingLoss margin", "CosineEmbeddingLoss", {"margin": 0.2},
              lambda: nn.CosineEmbeddingLoss(margin=0.2),
              lambda d: [d.randn(5, 4), d.randn(5, 4), torch.tensor([1, -1, -1, 1, -1])], seed=14)
    loss_case("MarginRankingLoss margin", "MarginRankingLoss", {"margin": 0.1, "reduction": "sum"},
              lambda: nn.MarginRankingLoss(margin=0.1, reduction="sum"),
              lambda d: [d.randn(6), d.randn(6), Const(torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0], dtype=F64))],
              seed=15)
    loss_case("TripletMarginLoss p1 swap", "TripletMarginLoss", {"margin": 0.5, "p": 1, "swap": True},
              lambda: nn.TripletMarginLoss(margin=0.5, p=1, swap=True),
              lambda d: [d.randn(4, 3), d.randn(4, 3), d.randn(4, 3)], seed=16)
    loss_case("TripletMarginLoss", "TripletMarginLoss", None, lambda: nn.TripletMarginLoss(),
              lambda d: [d.randn(4, 3), d.randn(4, 3), d.randn(4, 3)], seed=17)
    loss_case("CTCLoss mean", "CTCLoss", None, lambda: nn.CTCLoss(),
              lambda d: [torch.log_softmax(d.randn(6, 2, 4), 2), torch.tensor([[1, 2, 2], [3, 1, 0]]),
                         torch.tensor([6, 5]), torch.tensor([3, 2])], seed=18)
    loss_case("CTCLoss blank sum zero infinity", "CTCLoss",
              {"blank": 3, "reduction": "sum", "zeroInfinity": True},
              lambda: nn.CTCLoss(blank=3, reduction="sum", zero_infinity=True),
              lambda d: [torch.log_softmax(d.randn(5, 2, 4), 2), torch.tensor([0, 1, 1, 2, 0, 2, 1]),
                         [5, 3], [3, 4]], seed=19)
    loss_case("PoissonNLLLoss", "PoissonNLLLoss", None, lambda: nn.PoissonNLLLoss(),
              lambda d: [d.randn(3, 4), Const(rounded(d.rand(3, 4) * 4))], seed=20)
    loss_case("PoissonNLLLoss rates full", "PoissonNLLLoss", {"logInput": False, "full": True, "eps": 1e-6},
              lambda: nn.PoissonNLLLoss(log_input=False, full=True, eps=1e-6),
              lambda d: [rounded(d.rand(3, 4) * 3 + 0.1), Const(rounded(d.rand(3, 4) * 4))], seed=21)
    loss_case("FocalLoss", "FocalLoss", None, lambda: FocalLossReference(),
              lambda d: [d.randn(4, 3), Const(d.randint(2, 4, 3).double())], seed=22)
    loss_case("FocalLoss alpha off mean", "FocalLoss", {"alpha": -1, "gamma": 1.5, "reduction": "mean"},
              lambda: FocalLossReference(alpha=-1, gamma=1.5, reduction="mean"),
              lambda d: [d.randn(5, 2), Const(d.rand(5, 2))], seed=23)
    loss_case("FocalLoss gamma 0 sum", "FocalLoss", {"alpha": 0.4, "gamma": 0, "reduction": "sum"},
              lambda: FocalLossReference(alpha=0.4, gamma=0, reduction="sum"),
              lambda d: [d.randn(6), Const(d.randint(2, 6).double())], seed=24)


def write(name, payload):
    path = os.path.join(FIXTURES, name)
    write_json(path, encode_data(payload), compact=True)
    print(f"wrote {os.path.normpath(path)} ({os.path.getsize(path) / 1024:.0f} KiB, {len(payload['cases'])} cases)")


def main():
    torch.set_default_dtype(torch.float32)
    add_layer_cases()
    add_loss_cases()
    write("layers.json", {"torch": torch.__version__, "cases": LAYER_CASES})
    write("losses.json", {"torch": torch.__version__, "cases": LOSS_CASES})


if __name__ == "__main__":
    main()
