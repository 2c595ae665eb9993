#!/usr/bin/python3
"""Golden fixtures for the neural-network ops of @flodl/autograd's functional layer: linear
maps, convolutions, pooling, normalisation, embeddings, activations, padding and vision ops.

Writes test/fixtures/nn.json, which test/functional-nn.test.ts replays against our functional
API (the test needs no Python).

Regenerate from the repository root with

    pnpm --filter @flodl/autograd run goldens

which runs every scripts/make-*.py of the package; this one alone, in packages/autograd:

    /usr/bin/python3 scripts/make-goldens-nn.py

Use Debian's PyTorch at /usr/bin/python3 (python3-torch 1.13.1, CPU): the same libtorch the
addon links against, so seeded dropout draws the same masks. Plain `python3` may have no torch.
Inputs come from a fixed seed, so reruns give the same file.

Each case calls one function of our API, described once here: `op` and `args` as our TS API
takes them (tensors positional, options in one trailing camelCase object). REFERENCE below
computes the same thing with PyTorch's torch.nn.functional (rms_norm, absent from 1.13, with
PyTorch 2.4's documented math).

The fixture format (JSON, one case per line):

  meta: {torch, seed, regenerate}
  cases: [{group, name, op, tensors, args, grad, outputs, probes, grads, mutated, atol, rtol}]
    tensors: {name: T}, the leaves as they are before the call; args refer to them as
      {"$ref": name}. null stands for an omitted argument (undefined); arrays and option
      objects are decoded element by element.
    outputs: {name: T}: {"result": T} for a Tensor result, {"values", "indices"} for ops
      called with returnIndices.
    probes: {name: T}: a fixed random R per floating output; the scalar whose gradients are
      recorded is the sum over outputs of (output * R).sum().
    grad: the names of the leaves that require grad; grads: {name: T}, their gradients.
    mutated: {name: T}: leaves the op changes in place (running statistics, embedding tables
      renormalised by maxNorm), as they are after the call.
    T (a tensor): {data, shape, dtype}: data flat in row-major order, non-finite floats as
      "nan", "inf", "-inf"; float32 values in their shortest round-trip form.
    atol, rtol: |actual - expected| <= atol + rtol * |expected| for floating values; integer
      values must match exactly.
  random: [{name, op, seed, input: T, options, expected: T}]: torch.manual_seed(seed), then
    the dropout op on input; the masks come from libtorch's CPU generator.
"""

import json
import math
import os
import sys
import warnings

import numpy
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'testing', 'python'))
from flodl_goldens import encode_number  # noqa: E402

SEED = 0
HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, '..', 'test', 'fixtures', 'nn.json')

DTYPES = {'float32': torch.float32, 'float64': torch.float64, 'int32': torch.int32, 'int64': torch.int64}
DTYPE_NAMES = {dtype: name for name, dtype in DTYPES.items()}
TOLERANCES = {torch.float64: (1e-10, 1e-9), torch.float32: (1e-5, 1e-4)}

generator = torch.Generator().manual_seed(SEED)


# ---------------------------------------------------------------------------------------
# Tensors in JSON and the inputs of cases

def encode_value(value, dtype):
    if isinstance(value, float):
        if not math.isfinite(value):
            return encode_number(value)
        if dtype == torch.float32:
            return float(repr(numpy.float32(value)))
    return value


def encode_tensor(tensor):
    tensor = tensor.detach().contiguous()
    return {'data': [encode_value(value, tensor.dtype) for value in tensor.flatten().tolist()],
            'shape': list(tensor.shape), 'dtype': DTYPE_NAMES[tensor.dtype]}


def randn(*shape, dtype=torch.float64, scale=1.0):
    """Normal values rounded to 3 decimals (short in JSON, exact in float64)."""
    values = torch.randn(tuple(shape), generator=generator, dtype=torch.float64) * scale
    return values.mul(1000).round().div(1000).to(dtype)


def rand(*shape, dtype=torch.float64, low=0.0, high=1.0):
    values = low + (high - low) * torch.rand(tuple(shape), generator=generator, dtype=torch.float64)
    return values.mul(1000).round().div(1000).to(dtype)


def indices(high, *shape, dtype=torch.int64):
    return torch.randint(0, high, shape, generator=generator).to(dtype)


def long(values, dtype=torch.int64):
    return torch.tensor(values, dtype=dtype)


class Ref:
    """A tensor argument: a leaf of the case, by name."""

    def __init__(self, name):
        self.name = name


def encode_argument(argument):
    if isinstance(argument, Ref):
        return {'$ref': argument.name}
    if isinstance(argument, (list, tuple)):
        return [encode_argument(item) for item in argument]
    if isinstance(argument, dict):
        return {key: encode_argument(item) for key, item in argument.items()}
    return argument


def materialize(argument, leaves):
    if isinstance(argument, Ref):
        return leaves[argument.name]
    if isinstance(argument, (list, tuple)):
        return [materialize(item, leaves) for item in argument]
    if isinstance(argument, dict):
        return {key: materialize(item, leaves) for key, item in argument.items()}
    return argument


# ---------------------------------------------------------------------------------------
# Our API, computed with PyTorch

def with_indices(result, options):
    if options.get('returnIndices', False):
        values, positions = result
        return {'values': values, 'indices': positions}
    return result


def max_pool(function):
    return lambda x, kernel, o={}: with_indices(function(
        x, kernel, stride=o.get('stride'), padding=o.get('padding', 0), dilation=o.get('dilation', 1),
        ceil_mode=o.get('ceilMode', False), return_indices=o.get('returnIndices', False)), o)


def avg_pool(function, divisor=True):
    def run(x, kernel, o={}):
        extra = {'divisor_override': o.get('divisorOverride')} if divisor else {}
        return function(x, kernel, stride=o.get('stride'), padding=o.get('padding', 0),
                        ceil_mode=o.get('ceilMode', False), count_include_pad=o.get('countIncludePad', True), **extra)
    return run


def convolution(function):
    return lambda x, w, b=None, o={}: function(
        x, w, b, stride=o.get('stride', 1), padding=o.get('padding', 0), dilation=o.get('dilation', 1),
        groups=o.get('groups', 1))


def transposed(function):
    return lambda x, w, b=None, o={}: function(
        x, w, b, stride=o.get('stride', 1), padding=o.get('padding', 0), output_padding=o.get('outputPadding', 0),
        groups=o.get('groups', 1), dilation=o.get('dilation', 1))


def rms_norm(x, shape, weight=None, o={}):
    """PyTorch 2.4's rms_norm: x * rsqrt(mean(x^2) + eps) * weight, eps the dtype's epsilon."""
    shape = [shape] if isinstance(shape, int) else shape
    eps = o.get('eps', torch.finfo(x.dtype).eps)
    dims = [-k for k in range(1, len(shape) + 1)]
    out = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
    return out if weight is None else out * weight


def pad(x, sizes, o={}):
    mode = o.get('mode', 'constant')
    # PyTorch 2.x pads unbatched inputs circularly; 1.13 needs the batch dim.
    if mode == 'circular' and x.dim() == len(sizes) // 2 + 1:
        return F.pad(x.unsqueeze(0), sizes, mode=mode).squeeze(0)
    return F.pad(x, sizes, mode=mode, value=o.get('value'))


def interpolate(x, o={}):
    mode = o.get('mode', 'nearest')
    interpolating = mode in ('linear', 'bilinear', 'bicubic', 'trilinear')
    return F.interpolate(x, size=o.get('size'), scale_factor=o.get('scaleFactor'), mode=mode,
                         align_corners=o.get('alignCorners', False) if interpolating else None,
                         recompute_scale_factor=o.get('recomputeScaleFactor'))


def embedding_bag(x, weight, offsets=None, o={}):
    return F.embedding_bag(x, weight, offsets, max_norm=o.get('maxNorm'), norm_type=o.get('normType', 2),
                           scale_grad_by_freq=o.get('scaleGradByFreq', False), mode=o.get('mode', 'mean'),
                           per_sample_weights=o.get('perSampleWeights'),
                           include_last_offset=o.get('includeLastOffset', False), padding_idx=o.get('paddingIdx'))


def softmax_reference(function):
    return lambda x, dim, o={}: function(x, dim, dtype=DTYPES[o['dtype']] if 'dtype' in o else None)


REFERENCE = {
    'linear': lambda x, w, b=None: F.linear(x, w, b),
    'bilinear': lambda x1, x2, w, b=None: F.bilinear(x1, x2, w, b),
    'flatten': lambda x, start=0, end=-1: torch.flatten(x, start, end),
    'conv1d': convolution(F.conv1d),
    'conv2d': convolution(F.conv2d),
    'conv3d': convolution(F.conv3d),
    'convTranspose1d': transposed(F.conv_transpose1d),
    'convTranspose2d': transposed(F.conv_transpose2d),
    'convTranspose3d': transposed(F.conv_transpose3d),
    'maxPool1d': max_pool(F.max_pool1d),
    'maxPool2d': max_pool(F.max_pool2d),
    'maxPool3d': max_pool(F.max_pool3d),
    'avgPool1d': avg_pool(F.avg_pool1d, divisor=False),
    'avgPool2d': avg_pool(F.avg_pool2d),
    'avgPool3d': avg_pool(F.avg_pool3d),
    'adaptiveAvgPool1d': F.adaptive_avg_pool1d,
    'adaptiveAvgPool2d': F.adaptive_avg_pool2d,
    'adaptiveAvgPool3d': F.adaptive_avg_pool3d,
    'adaptiveMaxPool1d': lambda x, size, o={}: with_indices(F.adaptive_max_pool1d(x, size, o.get('returnIndices', False)), o),
    'adaptiveMaxPool2d': lambda x, size, o={}: with_indices(F.adaptive_max_pool2d(x, size, o.get('returnIndices', False)), o),
    'adaptiveMaxPool3d': lambda x, size, o={}: with_indices(F.adaptive_max_pool3d(x, size, o.get('returnIndices', False)), o),
    'batchNorm': lambda x, mean, var, w=None, b=None, o={}: F.batch_norm(
        x, mean, var, w, b, training=o.get('training', False), momentum=o.get('momentum', 0.1), eps=o.get('eps', 1e-5)),
    'instanceNorm': lambda x, mean=None, var=None, w=None, b=None, o={}: F.instance_norm(
        x, mean, var, w, b, use_input_stats=o.get('useInputStats', True), momentum=o.get('momentum', 0.1),
        eps=o.get('eps', 1e-5)),
    'layerNorm': lambda x, shape, w=None, b=None, o={}: F.layer_norm(
        x, [shape] if isinstance(shape, int) else shape, w, b, eps=o.get('eps', 1e-5)),
    'groupNorm': lambda x, groups, w=None, b=None, o={}: F.group_norm(x, groups, w, b, eps=o.get('eps', 1e-5)),
    'rmsNorm': rms_norm,
    'embedding': lambda x, w, o={}: F.embedding(
        x, w, padding_idx=o.get('paddingIdx'), max_norm=o.get('maxNorm'), norm_type=o.get('normType', 2),
        scale_grad_by_freq=o.get('scaleGradByFreq', False)),
    'embeddingBag': embedding_bag,
    'relu': F.relu,
    'leakyRelu': lambda x, o={}: F.leaky_relu(x, o.get('negativeSlope', 0.01)),
    'elu': lambda x, o={}: F.elu(x, o.get('alpha', 1.0)),
    'selu': F.selu,
    'gelu': lambda x, o={}: F.gelu(x, approximate=o.get('approximate', 'none')),
    'silu': F.silu,
    'mish': F.mish,
    'softplus': lambda x, o={}: F.softplus(x, o.get('beta', 1), o.get('threshold', 20)),
    'tanh': torch.tanh,
    'sigmoid': torch.sigmoid,
    'hardswish': F.hardswish,
    'hardsigmoid': F.hardsigmoid,
    'prelu': F.prelu,
    'softmax': softmax_reference(F.softmax),
    'logSoftmax': softmax_reference(F.log_softmax),
    'pad': pad,
    'interpolate': interpolate,
    'pixelShuffle': F.pixel_shuffle,
    'pixelUnshuffle': F.pixel_unshuffle,
    'unfold': lambda x, kernel, o={}: F.unfold(
        x, kernel, dilation=o.get('dilation', 1), padding=o.get('padding', 0), stride=o.get('stride', 1)),
    'fold': lambda x, size, kernel, o={}: F.fold(
        x, size, kernel, dilation=o.get('dilation', 1), padding=o.get('padding', 0), stride=o.get('stride', 1)),
}


# ---------------------------------------------------------------------------------------
# Cases

cases = []


def case(group, name, op, tensors, args, grad=None, mutated=()):
    """Runs REFERENCE[op] on the leaves and records outputs, probes, gradients and mutations.

    grad defaults to every floating leaf except running statistics (buffers, not parameters).
    """
    if grad is None:
        grad = [key for key, tensor in tensors.items() if tensor.is_floating_point() and not key.startswith('running')]
    before = {key: encode_tensor(tensor) for key, tensor in tensors.items()}
    leaves = {key: tensor.clone().requires_grad_(key in grad) for key, tensor in tensors.items()}
    result = REFERENCE[op](*materialize(args, leaves))
    outputs = result if isinstance(result, dict) else {'result': result}
    probes = {key: randn(*out.shape).to(out.dtype) for key, out in outputs.items() if out.is_floating_point()}
    grads = {}
    if grad:
        loss = sum((outputs[key] * probe).sum() for key, probe in probes.items())
        found = torch.autograd.grad(loss, [leaves[key] for key in grad], allow_unused=True)
        grads = {key: encode_tensor(value if value is not None else torch.zeros_like(leaves[key]))
                 for key, value in zip(grad, found)}
    floating = [tensor.dtype for tensor in list(tensors.values()) + list(outputs.values()) if tensor.is_floating_point()]
    atol, rtol = TOLERANCES[torch.float32 if torch.float32 in floating else torch.float64]
    cases.append({
        'group': group, 'name': name, 'op': op, 'tensors': before, 'args': encode_argument(args), 'grad': grad,
        'outputs': {key: encode_tensor(value) for key, value in outputs.items()},
        'probes': {key: encode_tensor(value) for key, value in probes.items()}, 'grads': grads,
        'mutated': {key: encode_tensor(leaves[key]) for key in mutated}, 'atol': atol, 'rtol': rtol,
    })


X, W, B = Ref('input'), Ref('weight'), Ref('bias')


def linear_cases():
    case('linear', 'with bias', 'linear', {'input': randn(3, 4), 'weight': randn(5, 4), 'bias': randn(5)}, [X, W, B])
    case('linear', 'no bias, 3-d input', 'linear', {'input': randn(2, 3, 4), 'weight': randn(2, 4)}, [X, W])
    case('linear', 'float32', 'linear',
         {'input': randn(2, 4, dtype=torch.float32), 'weight': randn(3, 4, dtype=torch.float32),
          'bias': randn(3, dtype=torch.float32)}, [X, W, B])
    case('linear', 'bilinear with bias', 'bilinear',
         {'input1': randn(3, 2), 'input2': randn(3, 4), 'weight': randn(5, 2, 4), 'bias': randn(5)},
         [Ref('input1'), Ref('input2'), W, B])
    case('linear', 'bilinear no bias, 3-d', 'bilinear',
         {'input1': randn(2, 2, 3), 'input2': randn(2, 2, 2), 'weight': randn(2, 3, 2)}, [Ref('input1'), Ref('input2'), W])
    case('linear', 'flatten all', 'flatten', {'input': randn(2, 3, 2)}, [X])
    case('linear', 'flatten from 1', 'flatten', {'input': randn(2, 3, 2)}, [X, 1])
    case('linear', 'flatten 1..2', 'flatten', {'input': randn(2, 3, 2, 2)}, [X, 1, 2])


def conv_cases():
    def conv(name, op, input, weight, bias, options=None):
        tensors = {'input': input, 'weight': weight}
        args = [X, W, B if bias is not None else None]
        if bias is not None:
            tensors['bias'] = bias
        if options is not None:
            args.append(options)
        case('conv', name, op, tensors, args)

    conv('conv1d default', 'conv1d', randn(2, 3, 7), randn(4, 3, 3), randn(4))
    conv('conv1d stride 2 padding 1', 'conv1d', randn(2, 3, 7), randn(4, 3, 3), randn(4), {'stride': 2, 'padding': 1})
    conv('conv1d dilation 2', 'conv1d', randn(1, 2, 8), randn(3, 2, 3), None, {'dilation': 2})
    conv('conv1d groups 2', 'conv1d', randn(2, 4, 6), randn(6, 2, 3), randn(6), {'groups': 2})
    conv('conv1d same, dilation 2', 'conv1d', randn(1, 2, 7), randn(3, 2, 3), randn(3), {'padding': 'same', 'dilation': 2})
    conv('conv1d valid', 'conv1d', randn(1, 2, 6), randn(2, 2, 4), None, {'padding': 'valid'})
    conv('conv1d unbatched', 'conv1d', randn(3, 6), randn(2, 3, 2), randn(2), {'stride': [2]})
    conv('conv2d default', 'conv2d', randn(2, 3, 5, 5), randn(4, 3, 3, 3), randn(4))
    conv('conv2d stride [2, 1] padding [1, 0]', 'conv2d', randn(1, 2, 5, 6), randn(3, 2, 3, 2), randn(3),
         {'stride': [2, 1], 'padding': [1, 0]})
    conv('conv2d dilation 2 padding 2', 'conv2d', randn(1, 2, 6, 6), randn(2, 2, 3, 3), None, {'dilation': 2, 'padding': 2})
    conv('conv2d groups 3', 'conv2d', randn(1, 6, 4, 4), randn(3, 2, 3, 3), randn(3), {'groups': 3})
    conv('conv2d same, even kernel', 'conv2d', randn(1, 2, 5, 4), randn(2, 2, 2, 3), randn(2), {'padding': 'same'})
    conv('conv2d unbatched', 'conv2d', randn(2, 4, 4), randn(3, 2, 2, 2), randn(3), {'stride': 2})
    conv('conv2d float32', 'conv2d', randn(2, 3, 5, 5, dtype=torch.float32), randn(4, 3, 3, 3, dtype=torch.float32),
         randn(4, dtype=torch.float32), {'padding': 1})
    conv('conv3d default', 'conv3d', randn(1, 2, 4, 4, 4), randn(3, 2, 2, 2, 2), randn(3))
    conv('conv3d stride 2 padding 1', 'conv3d', randn(1, 2, 4, 4, 3), randn(2, 2, 3, 3, 3), None, {'stride': 2, 'padding': 1})
    conv('conv3d float32 groups 2', 'conv3d', randn(1, 4, 3, 3, 3, dtype=torch.float32),
         randn(2, 2, 2, 2, 2, dtype=torch.float32), randn(2, dtype=torch.float32), {'groups': 2})
    conv('convTranspose1d default', 'convTranspose1d', randn(2, 3, 5), randn(3, 4, 3), randn(4))
    conv('convTranspose1d stride 2 padding 1 outputPadding 1', 'convTranspose1d', randn(1, 3, 4), randn(3, 2, 3),
         randn(2), {'stride': 2, 'padding': 1, 'outputPadding': 1})
    conv('convTranspose1d groups 3 dilation 2', 'convTranspose1d', randn(1, 3, 4), randn(3, 1, 3), None,
         {'groups': 3, 'dilation': 2})
    conv('convTranspose2d default', 'convTranspose2d', randn(1, 4, 3, 3), randn(4, 2, 3, 3), randn(2))
    conv('convTranspose2d stride 2 padding 1 outputPadding 1', 'convTranspose2d', randn(1, 2, 3, 3), randn(2, 3, 3, 3),
         randn(3), {'stride': 2, 'padding': 1, 'outputPadding': 1})
    conv('convTranspose2d groups 2 dilation [2, 1]', 'convTranspose2d', randn(2, 4, 3, 2), randn(4, 1, 2, 2), randn(2),
         {'groups': 2, 'dilation': [2, 1]})
    conv('convTranspose2d unbatched float32', 'convTranspose2d', randn(2, 3, 3, dtype=torch.float32),
         randn(2, 2, 2, 2, dtype=torch.float32), None, {'stride': [1, 2]})
    conv('convTranspose3d stride 2', 'convTranspose3d', randn(1, 2, 2, 2, 2), randn(2, 2, 2, 2, 2), randn(2), {'stride': 2})


def pooling_cases():
    def pool(name, op, input, *args):
        case('pooling', name, op, {'input': input}, [X, *args])

    pool('maxPool1d kernel 2', 'maxPool1d', randn(2, 3, 8), 2)
    pool('maxPool1d stride 2 padding 1', 'maxPool1d', randn(2, 3, 7), 3, {'stride': 2, 'padding': 1})
    pool('maxPool1d dilation 2', 'maxPool1d', randn(1, 2, 9), 3, {'dilation': 2, 'stride': 1})
    pool('maxPool1d ceilMode', 'maxPool1d', randn(1, 2, 8), 3, {'stride': 2, 'ceilMode': True})
    pool('maxPool1d returnIndices, unbatched', 'maxPool1d', randn(3, 8), 2, {'returnIndices': True})
    pool('maxPool2d kernel 2', 'maxPool2d', randn(2, 2, 6, 6), 2)
    pool('maxPool2d kernel 3 stride 2 padding 1', 'maxPool2d', randn(1, 2, 7, 7), 3, {'stride': 2, 'padding': 1})
    pool('maxPool2d dilation 2', 'maxPool2d', randn(1, 2, 7, 7), 2, {'dilation': 2})
    pool('maxPool2d ceilMode', 'maxPool2d', randn(1, 2, 7, 6), 2, {'ceilMode': True})
    pool('maxPool2d returnIndices', 'maxPool2d', randn(2, 2, 4, 6), [2, 3], {'stride': [1, 2], 'returnIndices': True})
    pool('maxPool2d unbatched float32', 'maxPool2d', randn(2, 5, 5, dtype=torch.float32), 3, {'stride': 1})
    pool('maxPool3d kernel 2 returnIndices', 'maxPool3d', randn(1, 2, 4, 4, 4), 2, {'returnIndices': True})
    pool('avgPool1d kernel 2', 'avgPool1d', randn(2, 3, 8), 2)
    pool('avgPool1d stride 2 padding 1 countIncludePad false', 'avgPool1d', randn(1, 2, 7), 3,
         {'stride': 2, 'padding': 1, 'countIncludePad': False})
    pool('avgPool1d ceilMode, unbatched', 'avgPool1d', randn(2, 8), 3, {'stride': 2, 'ceilMode': True})
    pool('avgPool2d kernel 2', 'avgPool2d', randn(2, 2, 6, 6), 2)
    pool('avgPool2d kernel 3 stride 2 padding 1', 'avgPool2d', randn(1, 2, 7, 7), 3, {'stride': 2, 'padding': 1})
    pool('avgPool2d countIncludePad false', 'avgPool2d', randn(1, 2, 5, 5), 3,
         {'stride': 2, 'padding': 1, 'countIncludePad': False})
    pool('avgPool2d ceilMode', 'avgPool2d', randn(1, 2, 7, 6), [3, 2], {'stride': 2, 'ceilMode': True})
    pool('avgPool2d divisorOverride 3', 'avgPool2d', randn(1, 2, 4, 4), 2, {'divisorOverride': 3})
    pool('avgPool2d unbatched float32', 'avgPool2d', randn(2, 6, 6, dtype=torch.float32), 2, {'padding': 1})
    pool('avgPool3d kernel 2', 'avgPool3d', randn(1, 2, 4, 4, 4), 2, {'padding': 1, 'countIncludePad': False})
    pool('adaptiveAvgPool1d 3', 'adaptiveAvgPool1d', randn(2, 3, 7), 3)
    pool('adaptiveAvgPool1d 1, unbatched', 'adaptiveAvgPool1d', randn(3, 7), 1)
    pool('adaptiveAvgPool2d [3, 2]', 'adaptiveAvgPool2d', randn(2, 2, 7, 5), [3, 2])
    pool('adaptiveAvgPool2d 1', 'adaptiveAvgPool2d', randn(2, 3, 4, 4), 1)
    pool('adaptiveAvgPool2d [null, 2]', 'adaptiveAvgPool2d', randn(1, 2, 3, 5), [None, 2])
    pool('adaptiveAvgPool3d [1, 2, 3]', 'adaptiveAvgPool3d', randn(1, 2, 3, 4, 5), [1, 2, 3])
    pool('adaptiveMaxPool1d 3 returnIndices', 'adaptiveMaxPool1d', randn(2, 3, 8), 3, {'returnIndices': True})
    pool('adaptiveMaxPool2d [3, 2]', 'adaptiveMaxPool2d', randn(2, 2, 7, 5), [3, 2])
    pool('adaptiveMaxPool2d returnIndices, unbatched', 'adaptiveMaxPool2d', randn(2, 6, 6), 4, {'returnIndices': True})
    pool('adaptiveMaxPool3d 2', 'adaptiveMaxPool3d', randn(1, 2, 4, 4, 3), 2)


def normalization_cases():
    mean, var, gamma, beta = Ref('runningMean'), Ref('runningVar'), Ref('weight'), Ref('bias')
    stats = lambda c: {'runningMean': randn(c), 'runningVar': rand(c, low=0.5, high=1.5)}
    affine = lambda c: {'weight': randn(c), 'bias': randn(c)}
    both = ('runningMean', 'runningVar')
    case('normalization', 'batchNorm training, 4-d', 'batchNorm', {'input': randn(4, 3, 2, 2), **stats(3), **affine(3)},
         [X, mean, var, gamma, beta, {'training': True}], mutated=both)
    case('normalization', 'batchNorm evaluation', 'batchNorm', {'input': randn(4, 3, 2, 2), **stats(3), **affine(3)},
         [X, mean, var, gamma, beta], mutated=both)
    case('normalization', 'batchNorm training 2-d, momentum 0.3, eps 1e-3, no affine', 'batchNorm',
         {'input': randn(5, 3), **stats(3)}, [X, mean, var, None, None, {'training': True, 'momentum': 0.3, 'eps': 1e-3}],
         mutated=both)
    case('normalization', 'batchNorm training without running stats', 'batchNorm', {'input': randn(3, 2, 4), **affine(2)},
         [X, None, None, gamma, beta, {'training': True}])
    case('normalization', 'batchNorm evaluation 3-d float32', 'batchNorm',
         {'input': randn(2, 3, 4, dtype=torch.float32), 'runningMean': randn(3, dtype=torch.float32),
          'runningVar': rand(3, dtype=torch.float32, low=0.5, high=1.5), 'weight': randn(3, dtype=torch.float32)},
         [X, mean, var, gamma, None, {'eps': 1e-3}])
    case('normalization', 'layerNorm last dim', 'layerNorm', {'input': randn(2, 3, 4), **affine(4)}, [X, 4, gamma, beta])
    case('normalization', 'layerNorm [3, 4] eps 1e-3', 'layerNorm',
         {'input': randn(2, 3, 4), 'weight': randn(3, 4), 'bias': randn(3, 4)}, [X, [3, 4], gamma, beta, {'eps': 1e-3}])
    case('normalization', 'layerNorm no affine', 'layerNorm', {'input': randn(3, 5)}, [X, [5]])
    case('normalization', 'layerNorm float32', 'layerNorm',
         {'input': randn(2, 6, dtype=torch.float32), 'weight': randn(6, dtype=torch.float32)}, [X, 6, gamma])
    case('normalization', 'groupNorm 3 groups', 'groupNorm', {'input': randn(2, 6, 3), **affine(6)}, [X, 3, gamma, beta])
    case('normalization', 'groupNorm 2 groups 4-d eps 1e-3, no affine', 'groupNorm', {'input': randn(2, 4, 2, 2)},
         [X, 2, None, None, {'eps': 1e-3}])
    case('normalization', 'groupNorm 1 group', 'groupNorm', {'input': randn(2, 3, 4), **affine(3)}, [X, 1, gamma, beta])
    case('normalization', 'groupNorm one group per channel', 'groupNorm', {'input': randn(2, 3, 4)}, [X, 3])
    case('normalization', 'instanceNorm plain', 'instanceNorm', {'input': randn(2, 3, 5)}, [X])
    case('normalization', 'instanceNorm running stats and affine, momentum 0.2', 'instanceNorm',
         {'input': randn(2, 3, 5), **stats(3), **affine(3)}, [X, mean, var, gamma, beta, {'momentum': 0.2}], mutated=both)
    case('normalization', 'instanceNorm with running stats only (useInputStats false)', 'instanceNorm',
         {'input': randn(2, 2, 3, 3), **stats(2)}, [X, mean, var, None, None, {'useInputStats': False}], mutated=both)
    case('normalization', 'instanceNorm 4-d eps 1e-3', 'instanceNorm', {'input': randn(2, 2, 3, 3), **affine(2)},
         [X, None, None, gamma, beta, {'eps': 1e-3}])
    case('normalization', 'rmsNorm last dim eps 1e-6', 'rmsNorm', {'input': randn(2, 3, 4), 'weight': randn(4)},
         [X, 4, gamma, {'eps': 1e-6}])
    case('normalization', 'rmsNorm [3, 4] default eps, no weight', 'rmsNorm', {'input': randn(2, 3, 4)}, [X, [3, 4]])
    case('normalization', 'rmsNorm float32', 'rmsNorm',
         {'input': randn(3, 5, dtype=torch.float32), 'weight': randn(5, dtype=torch.float32)}, [X, [5], gamma])


def embedding_cases():
    table = lambda rows, dim, scale=1.0: randn(rows, dim, scale=scale)
    case('embedding', 'lookup 2-d', 'embedding', {'input': indices(10, 2, 4), 'weight': table(10, 3)}, [X, W])
    case('embedding', 'paddingIdx 0', 'embedding', {'input': long([[0, 2, 0], [1, 0, 3]]), 'weight': table(4, 3)},
         [X, W, {'paddingIdx': 0}])
    case('embedding', 'paddingIdx -1', 'embedding', {'input': long([3, 1, 3, 2]), 'weight': table(4, 2)},
         [X, W, {'paddingIdx': -1}])
    case('embedding', 'maxNorm 1', 'embedding', {'input': long([[0, 2], [2, 4]]), 'weight': table(5, 3, scale=2.0)},
         [X, W, {'maxNorm': 1.0}], mutated=('weight',))
    case('embedding', 'maxNorm 1.5 normType 1', 'embedding', {'input': long([1, 3, 1]), 'weight': table(4, 3, scale=2.0)},
         [X, W, {'maxNorm': 1.5, 'normType': 1}], mutated=('weight',))
    case('embedding', 'scaleGradByFreq', 'embedding', {'input': long([[1, 1, 2], [1, 3, 2]]), 'weight': table(4, 2)},
         [X, W, {'scaleGradByFreq': True}])
    case('embedding', 'int32 indices, 1-d', 'embedding', {'input': long([2, 0, 1], torch.int32), 'weight': table(3, 4)}, [X, W])

    offsets = Ref('offsets')
    bag = lambda name, tensors, args: case('embedding', name, 'embeddingBag', tensors, args)
    bag('embeddingBag mean, 1-d with offsets', {'input': long([1, 2, 4, 5, 4, 3, 2, 9]), 'weight': table(10, 3),
                                              'offsets': long([0, 4])}, [X, W, offsets])
    bag('embeddingBag sum, 2-d', {'input': long([[1, 2, 4], [4, 3, 2]]), 'weight': table(6, 3)}, [X, W, None, {'mode': 'sum'}])
    bag('embeddingBag max', {'input': long([1, 2, 4, 5, 4, 3]), 'weight': table(6, 2), 'offsets': long([0, 2, 3])},
        [X, W, offsets, {'mode': 'max'}])
    bag('embeddingBag perSampleWeights', {'input': long([1, 2, 4, 5, 3]), 'weight': table(6, 3), 'offsets': long([0, 3]),
                                          'samples': randn(5)},
        [X, W, offsets, {'mode': 'sum', 'perSampleWeights': Ref('samples')}])
    bag('embeddingBag perSampleWeights, 2-d', {'input': long([[0, 2], [3, 1]]), 'weight': table(4, 2),
                                               'samples': randn(2, 2)},
        [X, W, None, {'mode': 'sum', 'perSampleWeights': Ref('samples')}])
    bag('embeddingBag includeLastOffset', {'input': long([1, 2, 4, 5, 3]), 'weight': table(6, 2),
                                           'offsets': long([0, 2, 5])}, [X, W, offsets, {'includeLastOffset': True}])
    bag('embeddingBag paddingIdx 2, sum', {'input': long([[1, 2, 2], [2, 3, 0]]), 'weight': table(4, 2)},
        [X, W, None, {'mode': 'sum', 'paddingIdx': 2}])
    bag('embeddingBag paddingIdx 2, mean', {'input': long([1, 2, 2, 2, 3, 0]), 'weight': table(4, 2),
                                            'offsets': long([0, 3, 4])}, [X, W, offsets, {'paddingIdx': 2}])
    bag('embeddingBag empty bag, mean', {'input': long([1, 2, 3]), 'weight': table(4, 2), 'offsets': long([0, 2, 2])},
        [X, W, offsets])
    bag('embeddingBag int32, scaleGradByFreq', {'input': long([1, 1, 2, 1], torch.int32), 'weight': table(3, 2),
                                                'offsets': long([0, 2], torch.int32)},
        [X, W, offsets, {'mode': 'sum', 'scaleGradByFreq': True}])


def activation_cases():
    def act(name, op, input, *args):
        case('activation', name, op, {'input': input}, [X, *args])

    wide = lambda *shape: randn(*shape, scale=3.0)
    act('relu', 'relu', randn(3, 4))
    act('leakyRelu default', 'leakyRelu', randn(3, 4))
    act('leakyRelu negativeSlope 0.2', 'leakyRelu', randn(3, 4), {'negativeSlope': 0.2})
    act('elu default', 'elu', randn(3, 4))
    act('elu alpha 0.5', 'elu', randn(3, 4), {'alpha': 0.5})
    act('selu', 'selu', randn(3, 4))
    act('gelu exact', 'gelu', randn(3, 4))
    act('gelu tanh', 'gelu', randn(3, 4), {'approximate': 'tanh'})
    act('silu', 'silu', randn(3, 4))
    act('mish', 'mish', randn(3, 4))
    act('softplus default', 'softplus', randn(3, 4))
    act('softplus beta 2 threshold 1', 'softplus', randn(3, 4), {'beta': 2, 'threshold': 1})
    act('tanh', 'tanh', randn(3, 4))
    act('sigmoid', 'sigmoid', randn(3, 4))
    act('hardswish', 'hardswish', wide(3, 4))
    act('hardsigmoid', 'hardsigmoid', wide(3, 4))
    act('relu float32', 'relu', randn(2, 5, dtype=torch.float32))
    act('gelu float32', 'gelu', randn(2, 5, dtype=torch.float32))
    act('softmax dim 1', 'softmax', randn(3, 4), 1)
    act('softmax dim 0, 3-d', 'softmax', randn(2, 3, 2), 0)
    act('softmax dtype float64 from float32', 'softmax', randn(2, 4, dtype=torch.float32), -1, {'dtype': 'float64'})
    act('logSoftmax dim -1', 'logSoftmax', randn(3, 4), -1)
    act('logSoftmax dtype float32 from float64', 'logSoftmax', randn(2, 3), 0, {'dtype': 'float32'})
    case('activation', 'prelu one slope', 'prelu', {'input': randn(2, 3, 4), 'weight': torch.tensor([0.25], dtype=torch.float64)}, [X, W])
    case('activation', 'prelu per channel', 'prelu', {'input': randn(2, 3, 4), 'weight': randn(3)}, [X, W])
    case('activation', 'prelu per channel 4-d', 'prelu', {'input': randn(1, 2, 2, 3), 'weight': randn(2)}, [X, W])


def padding_cases():
    def padded(name, input, sizes, options=None):
        case('padding', name, 'pad', {'input': input}, [X, sizes] + ([options] if options is not None else []))

    padded('constant [1, 2]', randn(2, 3, 4), [1, 2])
    padded('constant [1, 1, 2, 0] value 0.5', randn(2, 3, 4), [1, 1, 2, 0], {'value': 0.5})
    padded('constant negative crops', randn(2, 3, 4), [-1, 1, 0, -1], {'mode': 'constant'})
    padded('constant 3 dims', randn(2, 2, 2), [1, 0, 0, 1, 1, 1])
    padded('reflect [2, 1]', randn(2, 3, 4), [2, 1], {'mode': 'reflect'})
    padded('reflect 4-d [1, 1, 2, 1]', randn(1, 2, 3, 4), [1, 1, 2, 1], {'mode': 'reflect'})
    padded('reflect unbatched 2-d', randn(3, 4), [1, 2], {'mode': 'reflect'})
    padded('reflect 5-d', randn(1, 1, 3, 3, 3), [1, 1, 1, 1, 1, 1], {'mode': 'reflect'})
    padded('replicate [2, 1]', randn(2, 3, 4), [2, 1], {'mode': 'replicate'})
    padded('replicate 4-d [1, 2, 0, 1]', randn(1, 2, 3, 3), [1, 2, 0, 1], {'mode': 'replicate'})
    padded('replicate 5-d', randn(1, 1, 2, 2, 2), [1, 1, 1, 0, 0, 1], {'mode': 'replicate'})
    padded('circular [1, 2]', randn(2, 3, 4), [1, 2], {'mode': 'circular'})
    padded('circular 4-d', randn(1, 2, 3, 3), [1, 1, 2, 1], {'mode': 'circular'})
    padded('circular unbatched', randn(2, 3, 4), [1, 1, 1, 2], {'mode': 'circular'})
    padded('reflect float32', randn(1, 2, 5, dtype=torch.float32), [3, 2], {'mode': 'reflect'})


def vision_cases():
    def vision(name, op, input, *args):
        case('vision', name, op, {'input': input}, [X, *args])

    vision('interpolate nearest size [5, 7]', 'interpolate', randn(1, 2, 3, 4), {'size': [5, 7]})
    vision('interpolate nearest scaleFactor 2', 'interpolate', randn(1, 2, 3, 3), {'scaleFactor': 2})
    vision('interpolate nearest scaleFactor 1.5', 'interpolate', randn(1, 1, 4, 4), {'scaleFactor': 1.5})
    vision('interpolate nearest 3-d size 7', 'interpolate', randn(2, 2, 4), {'size': 7})
    vision('interpolate nearest 5-d scaleFactor 2', 'interpolate', randn(1, 1, 2, 2, 2), {'scaleFactor': 2})
    vision('interpolate nearest-exact scaleFactor 1.7', 'interpolate', randn(1, 1, 3, 4),
           {'scaleFactor': 1.7, 'mode': 'nearest-exact'})
    vision('interpolate bilinear size [5, 6]', 'interpolate', randn(1, 2, 3, 4), {'size': [5, 6], 'mode': 'bilinear'})
    vision('interpolate bilinear alignCorners', 'interpolate', randn(1, 2, 3, 4),
           {'size': [5, 6], 'mode': 'bilinear', 'alignCorners': True})
    vision('interpolate bilinear scaleFactor [1.5, 2]', 'interpolate', randn(2, 1, 3, 3),
           {'scaleFactor': [1.5, 2], 'mode': 'bilinear'})
    vision('interpolate bilinear downsample recomputeScaleFactor', 'interpolate', randn(1, 1, 5, 5),
           {'scaleFactor': 0.7, 'mode': 'bilinear', 'recomputeScaleFactor': True})
    vision('interpolate linear alignCorners', 'interpolate', randn(1, 2, 4),
           {'size': 7, 'mode': 'linear', 'alignCorners': True})
    vision('interpolate bicubic', 'interpolate', randn(1, 1, 3, 3), {'scaleFactor': 2, 'mode': 'bicubic'})
    vision('interpolate trilinear', 'interpolate', randn(1, 1, 2, 2, 3), {'size': [3, 3, 4], 'mode': 'trilinear'})
    vision('interpolate area', 'interpolate', randn(1, 2, 5, 6), {'size': [2, 3], 'mode': 'area'})
    vision('interpolate bilinear float32', 'interpolate', randn(1, 2, 3, 3, dtype=torch.float32),
           {'scaleFactor': 2, 'mode': 'bilinear'})
    vision('pixelShuffle 2', 'pixelShuffle', randn(1, 8, 2, 3), 2)
    vision('pixelShuffle unbatched', 'pixelShuffle', randn(9, 2, 2), 3)
    vision('pixelUnshuffle 2', 'pixelUnshuffle', randn(1, 2, 4, 6), 2)
    vision('unfold kernel 2', 'unfold', randn(2, 3, 4, 5), 2)
    vision('unfold kernel [2, 3] padding 1 stride 2', 'unfold', randn(1, 2, 4, 5), [2, 3], {'padding': 1, 'stride': 2})
    vision('unfold dilation 2, unbatched', 'unfold', randn(2, 5, 5), 2, {'dilation': 2})
    vision('fold kernel 2', 'fold', randn(2, 12, 12), [4, 5], 2)
    vision('fold kernel [2, 3] padding 1 stride 2', 'fold', randn(1, 12, 9), [4, 5], [2, 3], {'padding': 1, 'stride': 2})
    vision('fold dilation 2, unbatched', 'fold', randn(8, 9), 5, 2, {'dilation': 2})


# ---------------------------------------------------------------------------------------
# Seeded dropout

DROPOUT = {
    'dropout': lambda x, o: F.dropout(x, o.get('p', 0.5), o.get('training', True)),
    'dropout1d': lambda x, o: F.dropout1d(x, o.get('p', 0.5), o.get('training', True)),
    'dropout2d': lambda x, o: F.dropout2d(x, o.get('p', 0.5), o.get('training', True)),
    'dropout3d': lambda x, o: F.dropout3d(x, o.get('p', 0.5), o.get('training', True)),
    'alphaDropout': lambda x, o: F.alpha_dropout(x, o.get('p', 0.5), o.get('training', False)),
}


def random_cases():
    found = []

    def seeded(name, op, input, options, seed):
        torch.manual_seed(seed)
        expected = DROPOUT[op](input, options)
        found.append({'name': name, 'op': op, 'seed': seed, 'input': encode_tensor(input), 'options': options,
                      'expected': encode_tensor(expected)})

    seeded('dropout p 0.5', 'dropout', randn(4, 6), {}, 7)
    seeded('dropout p 0.2 float32', 'dropout', randn(3, 5, dtype=torch.float32), {'p': 0.2}, 11)
    seeded('dropout1d p 0.5', 'dropout1d', randn(2, 4, 3), {}, 3)
    seeded('dropout2d p 0.3', 'dropout2d', randn(2, 4, 2, 2), {'p': 0.3}, 5)
    seeded('dropout3d p 0.5, unbatched', 'dropout3d', randn(3, 2, 2, 2), {}, 9)
    seeded('alphaDropout p 0.3 training', 'alphaDropout', randn(3, 4), {'p': 0.3, 'training': True}, 13)
    return found


def main():
    torch.set_num_threads(1)
    # The even-kernel 'same' convolution is meant: libtorch warns that it pads a copy.
    warnings.filterwarnings('ignore', message="Using padding='same'")
    for make in (linear_cases, conv_cases, pooling_cases, normalization_cases, embedding_cases, activation_cases,
                 padding_cases, vision_cases):
        make()
    random = random_cases()
    meta = {'torch': torch.__version__, 'seed': SEED,
            'regenerate': 'pnpm --filter @flodl/autograd run goldens (scripts/make-goldens-nn.py)'}
    lines = ['{', f'"meta": {json.dumps(meta)},', '"cases": [']
    lines += [json.dumps(item, separators=(',', ':')) + (',' if k < len(cases) - 1 else '') for k, item in enumerate(cases)]
    lines += ['],', '"random": [']
    lines += [json.dumps(item, separators=(',', ':')) + (',' if k < len(random) - 1 else '') for k, item in enumerate(random)]
    lines += [']', '}']
    with open(OUTPUT, 'w') as output:
        output.write('\n'.join(lines) + '\n')
    print(f'wrote {len(cases)} cases and {len(random)} seeded dropout cases to {os.path.relpath(OUTPUT)} '
          f'({os.path.getsize(OUTPUT) // 1024} KiB)')


if __name__ == '__main__':
    main()
