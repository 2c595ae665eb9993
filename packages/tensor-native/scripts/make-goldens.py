#!/usr/bin/python3
"""Golden fixtures for @flodl/tensor-native: PyTorch's results for the Tensor API.

Writes test/fixtures/goldens.json, which test/goldens.test.ts replays against our Tensor
API (the test needs no Python).

Regenerate from the repository root with

    pnpm --filter @flodl/tensor-native run goldens

which runs, in packages/tensor-native,

    /usr/bin/python3 scripts/make-goldens.py

Use Debian's PyTorch at /usr/bin/python3 (python3-torch 1.13.1, CPU): the same libtorch
the addon links against. Plain `python3` may have no torch. Inputs come from fixed
literals and a fixed seed, so reruns give the same file.

The fixture format (JSON, one case per line):

  cases: [{group, name, kind, op, self?, args, expected, atol, rtol}]
    kind 'method':   self.op(...args)
    kind 'function': a package export called as op(...args); dotted paths such as
                     'linalg.solve' reach into namespaces
    kind 'inplace':  self.op(...args) must return self; expected is self afterwards
    args: as our TS API takes them, positionally. null stands for an omitted argument.
      A tensor is {"$tensor": T}; a non-finite number argument is {"$number": "inf"}.
    T (a tensor): {data, shape, dtype, view?}: data flat in row-major order, non-finite
      floats as "nan", "inf", "-inf", bools as true/false, float16/bfloat16 as their exact
      float values. view: steps applied after creation that make a non-contiguous input,
      e.g. [["transpose", 0, 1]] or [["slice", 1, 0, null, 2]].
    expected: {"tensor": T} | {"fields": {name: T}} (values/indices, Q/R)
      | {"list": [T, ...]} | {"scalar": number or boolean}
    atol, rtol: |actual - expected| <= atol + rtol * |expected| for floating values;
      integer and bool values must match exactly.
  strings: [{group, name, input: T, expected: str(tensor)}]
  random: [{name, seed, op, args, expected: T}]: torch.manual_seed(seed) then the op.
"""

import json
import math
import os
import sys
import warnings

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'testing', 'python'))
from flodl_goldens import encode_number  # noqa: E402

SEED = 0
HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, '..', 'test', 'fixtures', 'goldens.json')

DTYPE_NAMES = {
    torch.float16: 'float16',
    torch.bfloat16: 'bfloat16',
    torch.float32: 'float32',
    torch.float64: 'float64',
    torch.int32: 'int32',
    torch.int64: 'int64',
    torch.uint8: 'uint8',
    torch.bool: 'bool',
}
DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}

# Default tolerances by the (widest) floating dtype of a result: (atol, rtol).
TOLERANCES = {
    'float16': (1e-3, 1e-2),
    'bfloat16': (1e-2, 2e-2),
    'float32': (1e-6, 1e-5),
    'float64': (1e-12, 1e-10),
}
EXACT = (0, 0)
LINALG64 = (1e-10, 1e-9)
LINALG32 = (1e-5, 1e-4)

generator = torch.Generator().manual_seed(SEED)


# ---------------------------------------------------------------------------------------
# Values and tensors in JSON

def encode_value(value):
    """One element (or scalar) as JSON: non-finite floats become strings."""
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return encode_number(value)
        if value.is_integer() and abs(value) < 2 ** 53:
            return int(value) if value != 0 or math.copysign(1, value) > 0 else value
    return value


def flat_values(tensor):
    tensor = tensor.detach().contiguous()
    if tensor.dtype in (torch.float16, torch.bfloat16):
        tensor = tensor.float()
    return [encode_value(value) for value in tensor.flatten().tolist()]


def encode_tensor(tensor):
    return {'data': flat_values(tensor), 'shape': list(tensor.shape), 'dtype': DTYPE_NAMES[tensor.dtype]}


class Input:
    """A case input: a tensor made from literal data, then optional view steps."""

    def __init__(self, base, view=()):
        self.base = base.detach().contiguous()
        self.view = [list(step) for step in view]

    def then(self, *step):
        return Input(self.base, self.view + [list(step)])

    def torch(self):
        tensor = self.base.clone()
        for step in self.view:
            tensor = apply_view(tensor, step)
        return tensor

    def encode(self):
        spec = encode_tensor(self.base)
        if self.view:
            spec['view'] = self.view
        return {'$tensor': spec}


def apply_view(tensor, step):
    name, *args = step
    if name == 'transpose':
        return tensor.transpose(args[0], args[1])
    if name == 'permute':
        return tensor.permute(*args[0])
    if name == 'expand':
        return tensor.expand(*args[0])
    if name == 'select':
        return tensor.select(args[0], args[1])
    if name == 'slice':
        dim, start, end, step_size = args
        return tensor[(slice(None),) * dim + (slice(start, end, step_size),)]
    raise ValueError(f'unknown view step {name}')


class Number:
    """A number argument JSON cannot hold (Infinity, NaN)."""

    def __init__(self, value):
        self.value = value

    def encode(self):
        return {'$number': encode_value(self.value)}


def encode_argument(argument):
    if isinstance(argument, (Input, Number)):
        return argument.encode()
    if isinstance(argument, (list, tuple)):
        return [encode_argument(item) for item in argument]
    if isinstance(argument, dict):
        return {key: encode_argument(item) for key, item in argument.items()}
    if isinstance(argument, float) and not math.isfinite(argument):
        raise ValueError('wrap non-finite number arguments in Number(...)')
    return encode_value(argument) if isinstance(argument, float) else argument


def materialize(argument):
    """The argument as the PyTorch reference sees it."""
    if isinstance(argument, Input):
        return argument.torch()
    if isinstance(argument, Number):
        return argument.value
    if isinstance(argument, list):
        return [materialize(item) for item in argument]
    if isinstance(argument, dict):
        return {key: materialize(item) for key, item in argument.items()}
    if isinstance(argument, float) and argument.is_integer():
        # JS cannot tell 2.0 from 2: our API treats integral numbers like Python ints.
        return int(argument)
    return argument


def encode_result(result):
    if isinstance(result, torch.Tensor):
        return {'tensor': encode_tensor(result)}
    if hasattr(result, 'values') and hasattr(result, 'indices'):
        return {'fields': {'values': encode_tensor(result.values), 'indices': encode_tensor(result.indices)}}
    if isinstance(result, dict):
        return {'fields': {key: encode_tensor(value) for key, value in result.items()}}
    if isinstance(result, (list, tuple)):
        return {'list': [encode_tensor(item) for item in result]}
    if isinstance(result, (bool, int, float)):
        return {'scalar': encode_value(result)}
    raise TypeError(f'cannot encode result {type(result)}')


def result_tensors(result):
    if isinstance(result, torch.Tensor):
        return [result]
    if hasattr(result, 'values') and hasattr(result, 'indices'):
        return [result.values, result.indices]
    if isinstance(result, dict):
        return list(result.values())
    if isinstance(result, (list, tuple)):
        return list(result)
    return []


def default_tolerance(result):
    if isinstance(result, float):
        return TOLERANCES['float32']
    names = [DTYPE_NAMES[tensor.dtype] for tensor in result_tensors(result)]
    for name in ('bfloat16', 'float16', 'float32', 'float64'):
        if name in names:
            return TOLERANCES[name]
    return EXACT


# ---------------------------------------------------------------------------------------
# Inputs

def literal(data, dtype=None, shape=None):
    """A tensor from literal data; the dtype is inferred like torch.tensor unless given."""
    tensor = torch.tensor(data, dtype=None if dtype is None else DTYPES[dtype])
    return Input(tensor if shape is None else tensor.reshape(shape))


def uniform(shape, low=-3.0, high=3.0, dtype='float32', decimals=3):
    """Uniform values rounded to a few decimals (short in JSON, exact after rounding)."""
    values = torch.rand(shape, generator=generator, dtype=torch.float64) * (high - low) + low
    values = torch.round(values * 10 ** decimals) / 10 ** decimals
    return Input(values.to(DTYPES[dtype]))


def normal(shape, dtype='float32', decimals=3):
    values = torch.randn(shape, generator=generator, dtype=torch.float64)
    values = torch.round(values * 10 ** decimals) / 10 ** decimals
    return Input(values.to(DTYPES[dtype]))


def eighths(shape, dtype, low=-4.0, high=4.0):
    """Multiples of 1/8: exact in float16 and bfloat16 (no double rounding on either side)."""
    values = torch.randint(int(low * 8), int(high * 8) + 1, shape, generator=generator).double() / 8
    return Input(values.to(DTYPES[dtype]))


def integers(shape, low=-9, high=10, dtype='int64'):
    return Input(torch.randint(low, high, shape, generator=generator).to(DTYPES[dtype]))


def booleans(shape):
    return Input(torch.rand(shape, generator=generator) < 0.5)


def transposed(shape, maker=normal, **options):
    """A non-contiguous input: made with the last two dims swapped, then transposed back."""
    swapped = list(shape)
    swapped[-1], swapped[-2] = swapped[-2], swapped[-1]
    return maker(swapped, **options).then('transpose', len(shape) - 2, len(shape) - 1)


def stepped(shape, dim=-1, maker=normal, **options):
    """A non-contiguous input: every other element along `dim` of a larger tensor."""
    dim = dim % len(shape)
    larger = list(shape)
    larger[dim] = shape[dim] * 2
    return maker(larger, **options).then('slice', dim, 0, None, 2)


def options_dtype(options):
    return None if options is None or 'dtype' not in options else DTYPES[options['dtype']]


# ---------------------------------------------------------------------------------------
# Case registry

CASES = []
STRINGS = []
RANDOM = []
SKIPPED = []
current_group = ['']


def group(name):
    current_group[0] = name


def record(kind, name, op, self_input, args, result, tolerance):
    atol, rtol = default_tolerance(result) if tolerance is None else tolerance
    case = {'group': current_group[0], 'name': name, 'kind': kind, 'op': op}
    if self_input is not None:
        case['self'] = self_input.encode()
    case['args'] = encode_argument(list(args))
    case['expected'] = encode_result(result)
    case['atol'] = atol
    case['rtol'] = rtol
    if any(existing['group'] == case['group'] and existing['name'] == name for existing in CASES):
        raise ValueError(f'duplicate case name {case["group"]}/{name}')
    CASES.append(case)


def method(name, op, self_input, args, reference, tolerance=None):
    """self.op(*args) in our API; reference(self, *args) computes it with PyTorch."""
    result = reference(self_input.torch(), *[materialize(argument) for argument in args])
    record('method', name, op, self_input, args, result, tolerance)


def same(name, op, self_input, args=(), torch_name=None, tolerance=None):
    """A method whose PyTorch twin takes the same positional arguments."""
    method(name, op, self_input, list(args), lambda tensor, *rest: getattr(tensor, torch_name or op)(*rest), tolerance)


def function(name, op, args, reference, tolerance=None):
    """op(*args) of our package; reference(*args) computes it with PyTorch."""
    result = reference(*[materialize(argument) for argument in args])
    record('function', name, op, None, args, result, tolerance)


def inplace(name, op, self_input, args, reference, tolerance=None):
    """self.op(*args) mutates self; reference(self, *args) does the same in PyTorch."""
    target = self_input.torch()
    reference(target, *[materialize(argument) for argument in args])
    record('inplace', name, op, self_input, args, target, tolerance)


def when_supported(make_case):
    """Adds the case unless PyTorch itself has no CPU kernel for it."""
    try:
        make_case()
    except RuntimeError as error:
        if 'not implemented for' not in str(error):
            raise
        SKIPPED.append(f'{current_group[0]}: {error}')


def string(name, self_input):
    STRINGS.append({'group': current_group[0], 'name': name, 'input': self_input.encode()['$tensor'], 'expected': str(self_input.torch())})


# ---------------------------------------------------------------------------------------
# Creation

def creation_cases():
    group('creation')

    def make(name, op, args, reference):
        function(name, op, args, reference)

    make('arange end', 'arange', [5], lambda end: torch.arange(end))
    make('arange start end step', 'arange', [2, 11, 3], lambda start, end, step: torch.arange(start, end, step))
    make('arange negative step', 'arange', [5, -3, -2], lambda start, end, step: torch.arange(start, end, step))
    make('arange float step', 'arange', [1, 4, 0.5], lambda start, end, step: torch.arange(start, end, step))
    make('arange 0 to 1 by 0.1', 'arange', [0, 1, 0.1], lambda start, end, step: torch.arange(start, end, step))
    make('arange float bounds', 'arange', [-1.5, 2.25, 0.75], lambda start, end, step: torch.arange(start, end, step))
    make('arange float64 option', 'arange', [6, {'dtype': 'float64'}], lambda end, options: torch.arange(end, dtype=options_dtype(options)))
    make('arange int32 with step', 'arange', [0, 10, 4, {'dtype': 'int32'}],
         lambda start, end, step, options: torch.arange(start, end, step, dtype=options_dtype(options)))
    make('linspace 0..1 x5', 'linspace', [0, 1, 5], lambda start, end, steps: torch.linspace(start, end, steps))
    make('linspace -1..1 x7 float64', 'linspace', [-1, 1, 7, {'dtype': 'float64'}],
         lambda start, end, steps, options: torch.linspace(start, end, steps, dtype=options_dtype(options)))
    make('linspace descending', 'linspace', [3.5, -2.5, 4], lambda start, end, steps: torch.linspace(start, end, steps))
    make('linspace one step', 'linspace', [2, 9, 1], lambda start, end, steps: torch.linspace(start, end, steps))
    make('eye 3', 'eye', [3], lambda n: torch.eye(n))
    make('eye 2x4', 'eye', [2, 4], lambda n, m: torch.eye(n, m))
    make('eye 3 int32', 'eye', [3, None, {'dtype': 'int32'}], lambda n, m, options: torch.eye(n, dtype=options_dtype(options)))
    make('eye 4x2 float64', 'eye', [4, 2, {'dtype': 'float64'}], lambda n, m, options: torch.eye(n, m, dtype=options_dtype(options)))
    make('full int value infers int64', 'full', [[2, 3], 7], lambda shape, value: torch.full(shape, value))
    make('full float value infers float32', 'full', [[2], 2.5], lambda shape, value: torch.full(shape, value))
    make('full bool value infers bool', 'full', [[3], True], lambda shape, value: torch.full(shape, value))
    make('full negative float', 'full', [[2, 2], -0.125], lambda shape, value: torch.full(shape, value))
    make('full with dtype float64', 'full', [[2, 2], 3, {'dtype': 'float64'}], lambda shape, value, options: torch.full(shape, value, dtype=options_dtype(options)))
    make('full number shape', 'full', [4, 1.5], lambda size, value: torch.full([size], value))
    make('full nan', 'full', [[2], Number(math.nan)], lambda shape, value: torch.full(shape, value))
    make('zeros float32', 'zeros', [[2, 3]], lambda shape: torch.zeros(shape))
    make('zeros int32', 'zeros', [[2, 3], {'dtype': 'int32'}], lambda shape, options: torch.zeros(shape, dtype=options_dtype(options)))
    make('zeros bool', 'zeros', [[3], {'dtype': 'bool'}], lambda shape, options: torch.zeros(shape, dtype=options_dtype(options)))
    make('zeros empty dim', 'zeros', [[2, 0]], lambda shape: torch.zeros(shape))
    make('zeros 0-dim', 'zeros', [[]], lambda shape: torch.zeros(shape))
    make('ones float64', 'ones', [[2, 2], {'dtype': 'float64'}], lambda shape, options: torch.ones(shape, dtype=options_dtype(options)))
    make('ones uint8 number shape', 'ones', [4, {'dtype': 'uint8'}], lambda size, options: torch.ones([size], dtype=options_dtype(options)))
    make('ones bool', 'ones', [[2, 2], {'dtype': 'bool'}], lambda shape, options: torch.ones(shape, dtype=options_dtype(options)))
    make('ones int64', 'ones', [[3], {'dtype': 'int64'}], lambda shape, options: torch.ones(shape, dtype=options_dtype(options)))
    make('ones float16', 'ones', [[3], {'dtype': 'float16'}], lambda shape, options: torch.ones(shape, dtype=options_dtype(options)))

    source = integers([2, 3], dtype='int32')
    make('zerosLike keeps int32', 'zerosLike', [source], lambda tensor: torch.zeros_like(tensor))
    make('onesLike float64 option', 'onesLike', [source, {'dtype': 'float64'}], lambda tensor, options: torch.ones_like(tensor, dtype=options_dtype(options)))
    make('fullLike float value on int32', 'fullLike', [source, 2.5], lambda tensor, value: torch.full_like(tensor, value))
    make('fullLike float32', 'fullLike', [normal([3]), -1.5], lambda tensor, value: torch.full_like(tensor, value))

    make('Tensor.from nested ints infer int64', 'Tensor.from', [[[1, 2], [3, 4]]], lambda data: torch.tensor(data))
    make('Tensor.from floats infer float32', 'Tensor.from', [[1.5, -2.25, 3.125]], lambda data: torch.tensor(data))
    make('Tensor.from bools infer bool', 'Tensor.from', [[True, False, True]], lambda data: torch.tensor(data))
    make('Tensor.from flat with shape', 'Tensor.from', [[1, 2, 3, 4, 5, 6], [3, 2]], lambda data, shape: torch.tensor(data).reshape(shape))
    make('Tensor.from scalar', 'Tensor.from', [2.5], lambda data: torch.tensor(data))
    make('Tensor.from float64 option', 'Tensor.from', [[0.1, 0.2], None, {'dtype': 'float64'}], lambda data, shape, options: torch.tensor(data, dtype=options_dtype(options)))
    make('Tensor.from uint8 option', 'Tensor.from', [[0, 7, 255], None, {'dtype': 'uint8'}], lambda data, shape, options: torch.tensor(data, dtype=options_dtype(options)))

    group('conversion')
    floats = literal([-2.7, -0.5, 0.0, 0.4, 1.5, 3.9])
    method('to int32 truncates', 'to', floats, ['int32'], lambda tensor, dtype: tensor.to(DTYPES[dtype]))
    method('to int64', 'to', floats, ['int64'], lambda tensor, dtype: tensor.to(DTYPES[dtype]))
    method('to bool', 'to', floats, ['bool'], lambda tensor, dtype: tensor.to(DTYPES[dtype]))
    method('to float16 rounds', 'to', literal([0.1, 1.0 / 3, 1000.7, -2.5e-5]), ['float16'], lambda tensor, dtype: tensor.to(DTYPES[dtype]))
    method('to bfloat16 rounds', 'to', literal([0.1, 1.0 / 3, 1000.7, -2.5e-5]), ['bfloat16'], lambda tensor, dtype: tensor.to(DTYPES[dtype]))
    method('to options float64', 'to', floats, [{'dtype': 'float64'}], lambda tensor, options: tensor.to(options_dtype(options)))
    method('to alias long', 'to', floats, ['long'], lambda tensor, dtype: tensor.long())
    method('bool to float', 'float', booleans([5]), [], lambda tensor: tensor.float())
    method('int to double', 'double', integers([4]), [], lambda tensor: tensor.double())
    method('float to half', 'half', eighths([4], 'float32'), [], lambda tensor: tensor.half())
    method('float to bfloat16', 'bfloat16', eighths([4], 'float32'), [], lambda tensor: tensor.bfloat16())
    method('float to int', 'int', floats, [], lambda tensor: tensor.int())
    method('float to long', 'long', floats, [], lambda tensor: tensor.long())
    method('int to bool', 'bool', literal([0, 3, -1, 0]), [], lambda tensor: tensor.bool())
    method('uint8 to float32', 'to', literal([0, 128, 255], 'uint8'), ['float32'], lambda tensor, dtype: tensor.to(DTYPES[dtype]))
    method('clone of transposed', 'clone', transposed([3, 4]), [], lambda tensor: tensor.clone())
    method('detach', 'detach', normal([2, 2]), [], lambda tensor: tensor.detach())
    method('item float32 0-dim', 'item', literal(3.25), [], lambda tensor: tensor.item())
    method('item int64 one element', 'item', literal([[-7]]), [], lambda tensor: tensor.item())
    method('item bool', 'item', literal(True, 'bool'), [], lambda tensor: tensor.item())
    method('size negative dim', 'size', normal([2, 3, 4]), [-1], lambda tensor, dim: tensor.size(dim))


# ---------------------------------------------------------------------------------------
# Element-wise math

UNARY_GENERAL = ['neg', 'abs', 'sign', 'exp', 'expm1', 'square', 'sin', 'cos', 'tan', 'atan', 'sinh', 'cosh', 'tanh',
                 'erf', 'sigmoid', 'relu', 'floor', 'ceil', 'trunc', 'frac']
UNARY_POSITIVE = ['log', 'log1p', 'log2', 'log10', 'sqrt', 'rsqrt', 'reciprocal']
UNARY_UNIT = ['asin', 'acos']


def elementwise_cases():
    group('elementwise')
    general = normal([3, 4])
    positive = uniform([3, 4], 0.05, 5.0)
    unit = uniform([2, 5], -0.99, 0.99)
    special = literal([math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -2.5, 1e-30])
    general64 = normal([2, 3], dtype='float64', decimals=6)

    for name in UNARY_GENERAL:
        same(f'{name} float32', name, general)
    for name in UNARY_POSITIVE:
        same(f'{name} float32', name, positive)
    for name in UNARY_UNIT:
        same(f'{name} float32', name, unit)
    for name in ['exp', 'log', 'sqrt', 'sigmoid', 'tanh', 'erf', 'sign', 'abs', 'relu', 'floor', 'reciprocal', 'expm1', 'log1p']:
        same(f'{name} special values', name, special)
    for name in ['exp', 'log1p', 'sin', 'tanh', 'sigmoid', 'erf', 'sqrt', 'square']:
        source = general64 if name not in ('log1p', 'sqrt') else uniform([2, 3], 0.1, 4.0, dtype='float64', decimals=6)
        same(f'{name} float64', name, source)
    same('exp on transposed input', 'exp', transposed([3, 4]))
    same('sin on stepped input', 'sin', stepped([2, 3]))
    same('neg int64', 'neg', integers([5]))
    same('abs int32', 'abs', integers([5], dtype='int32'))
    same('sign int64', 'sign', literal([-3, 0, 4]))
    same('square int64', 'square', integers([4]))
    same('sqrt of int64 promotes to float', 'sqrt', literal([0, 1, 4, 10]))
    same('exp of bool promotes to float', 'exp', literal([True, False], 'bool'))
    same('relu int64', 'relu', literal([-2, 0, 3]))

    method('silu', 'silu', general, [], lambda tensor: F.silu(tensor))
    method('gelu exact default', 'gelu', general, [], lambda tensor: F.gelu(tensor))
    method('gelu none', 'gelu', general, ['none'], lambda tensor, mode: F.gelu(tensor, approximate=mode))
    method('gelu tanh', 'gelu', general, ['tanh'], lambda tensor, mode: F.gelu(tensor, approximate=mode))
    method('leakyRelu default slope', 'leakyRelu', general, [], lambda tensor: F.leaky_relu(tensor))
    method('leakyRelu 0.2', 'leakyRelu', general, [0.2], lambda tensor, slope: F.leaky_relu(tensor, slope))
    method('elu default', 'elu', general, [], lambda tensor: F.elu(tensor))
    method('elu alpha 1.5', 'elu', general, [1.5], lambda tensor, alpha: F.elu(tensor, alpha))
    method('softplus default', 'softplus', general, [], lambda tensor: F.softplus(tensor))
    method('softplus beta 2 threshold 1', 'softplus', general, [2, 1], lambda tensor, beta, threshold: F.softplus(tensor, beta, threshold))
    method('softplus large inputs', 'softplus', literal([-30.0, 5.0, 19.9, 20.1, 50.0]), [], lambda tensor: F.softplus(tensor))
    method('gelu float64', 'gelu', general64, [], lambda tensor: F.gelu(tensor))
    method('silu float64', 'silu', general64, [], lambda tensor: F.silu(tensor))

    halves = literal([0.5, 1.5, 2.5, 3.5, -0.5, -1.5, -2.5, 2.4, 2.6, -2.6])
    same('round half to even', 'round', halves)
    method('round decimals 2', 'round', literal([1.2345, 2.675, -0.125, 0.005, 123.456]), [2], lambda tensor, decimals: torch.round(tensor, decimals=decimals))
    method('round decimals -1', 'round', literal([15.0, 25.0, -35.0, 123.4]), [-1], lambda tensor, decimals: torch.round(tensor, decimals=decimals))
    method('round float64 decimals 3', 'round', literal([0.12345, -9.87654, 2.0005], 'float64'), [3], lambda tensor, decimals: torch.round(tensor, decimals=decimals))
    same('floor float64', 'floor', literal([-1.5, -0.5, 0.5, 1.5], 'float64'))
    same('trunc negatives', 'trunc', literal([-2.7, -0.2, 0.2, 2.7]))
    same('frac negatives', 'frac', literal([-2.75, -0.25, 0.25, 2.75]))

    method('clamp min and max', 'clamp', general, [-0.5, 0.5], lambda tensor, low, high: torch.clamp(tensor, low, high))
    method('clamp min only', 'clamp', general, [0], lambda tensor, low: torch.clamp(tensor, min=low))
    method('clamp max only', 'clamp', general, [None, 0.25], lambda tensor, low, high: torch.clamp(tensor, max=high))
    method('clamp int64 with ints', 'clamp', integers([6]), [-2, 3], lambda tensor, low, high: torch.clamp(tensor, low, high))
    method('clamp int64 with float bound', 'clamp', integers([6]), [-2.5, 3.5], lambda tensor, low, high: torch.clamp(tensor, low, high))
    method('clamp tensors broadcast', 'clamp', normal([3, 4]), [uniform([4], -1.0, -0.1), uniform([3, 1], 0.1, 1.0)],
           lambda tensor, low, high: torch.clamp(tensor, low, high))
    method('clamp tensor min only', 'clamp', normal([2, 3]), [normal([2, 3])], lambda tensor, low: torch.clamp(tensor, min=low))
    method('clamp tensor max only', 'clamp', normal([2, 3]), [None, normal([3])], lambda tensor, low, high: torch.clamp(tensor, max=high))
    method('clamp nan passes through', 'clamp', special, [-1, 1], lambda tensor, low, high: torch.clamp(tensor, low, high))

    for name in ['isnan', 'isinf', 'isfinite']:
        same(f'{name}', name, special)
    same('isnan int64', 'isnan', integers([3]))
    same('isfinite float64', 'isfinite', literal([1.0, math.inf, math.nan], 'float64'))

    group('binary')
    a = normal([3, 4])
    b = normal([3, 4])
    nonzero = uniform([3, 4], 0.5, 3.0)
    ints_a = integers([6], -20, 21)
    ints_b = literal([3, -3, 4, -4, 7, 5])

    same('add tensor', 'add', a, [b])
    same('add scalar', 'add', a, [2.5])
    method('add tensor alpha 2', 'add', a, [b, 2], lambda x, y, alpha: torch.add(x, y, alpha=alpha))
    method('add tensor alpha -0.5', 'add', a, [b, -0.5], lambda x, y, alpha: torch.add(x, y, alpha=alpha))
    method('add scalar alpha 3', 'add', a, [1.5, 3], lambda x, y, alpha: torch.add(x, y, alpha=alpha))
    same('sub tensor', 'sub', a, [b])
    same('sub scalar', 'sub', a, [0.75])
    method('sub tensor alpha 2', 'sub', a, [b, 2], lambda x, y, alpha: torch.sub(x, y, alpha=alpha))
    method('sub int64 alpha 3', 'sub', ints_a, [ints_b, 3], lambda x, y, alpha: torch.sub(x, y, alpha=alpha))
    same('mul tensor', 'mul', a, [b])
    same('mul scalar', 'mul', a, [-1.5])
    same('div tensor', 'div', a, [nonzero])
    same('div scalar', 'div', a, [4])
    same('div by zero gives inf and nan', 'div', literal([1.0, -1.0, 0.0]), [literal([0.0, 0.0, 0.0])])
    same('div int64 is true division', 'div', ints_a, [ints_b])
    same('div int64 by int scalar', 'div', ints_a, [4])
    for mode in ['trunc', 'floor']:
        method(f'div int64 roundingMode {mode}', 'div', ints_a, [ints_b, {'roundingMode': mode}], lambda x, y, options: torch.div(x, y, rounding_mode=options['roundingMode']))
        method(f'div float32 roundingMode {mode}', 'div', a, [nonzero, {'roundingMode': mode}], lambda x, y, options: torch.div(x, y, rounding_mode=options['roundingMode']))
        method(f'div int64 by scalar roundingMode {mode}', 'div', ints_a, [-3, {'roundingMode': mode}], lambda x, y, options: torch.div(x, y, rounding_mode=options['roundingMode']))
        method(f'div float32 by scalar roundingMode {mode}', 'div', a, [0.7, {'roundingMode': mode}], lambda x, y, options: torch.div(x, y, rounding_mode=options['roundingMode']))
    method('div empty options', 'div', a, [nonzero, {}], lambda x, y, options: torch.div(x, y))

    same('pow tensor exponent', 'pow', uniform([3, 4], 0.1, 3.0), [uniform([3, 4], -2.0, 2.0)])
    same('pow scalar 2', 'pow', a, [2])
    same('pow scalar 0.5', 'pow', uniform([5], 0.0, 4.0), [0.5])
    same('pow scalar -1', 'pow', nonzero, [-1])
    same('pow scalar 3 on negatives', 'pow', literal([-2.0, -0.5, 0.0, 1.5]), [3])
    same('pow int64 by int', 'pow', literal([-3, -1, 0, 2, 5]), [3])
    same('pow int64 by float promotes', 'pow', literal([1, 2, 3, 4]), [0.5])
    same('pow float64 tensor', 'pow', uniform([4], 0.5, 2.0, dtype='float64', decimals=6), [uniform([4], -3.0, 3.0, dtype='float64', decimals=6)])
    same('pow broadcast exponent row', 'pow', uniform([2, 3], 0.5, 2.0), [literal([1.0, 2.0, 3.0])])

    mixed_signs = literal([5.5, -5.5, 5.5, -5.5, 3.0, -0.0])
    divisors = literal([2.0, 2.0, -2.0, -2.0, 1.5, 2.0])
    same('remainder float', 'remainder', mixed_signs, [divisors])
    same('remainder float scalar', 'remainder', mixed_signs, [1.5])
    same('remainder int64', 'remainder', ints_a, [ints_b])
    same('remainder int64 negative scalar', 'remainder', ints_a, [-4])
    same('fmod float', 'fmod', mixed_signs, [divisors])
    same('fmod float scalar', 'fmod', mixed_signs, [-1.5])
    same('fmod int64', 'fmod', ints_a, [ints_b])
    same('atan2', 'atan2', a, [b])
    same('atan2 quadrants', 'atan2', literal([1.0, 1.0, -1.0, -1.0, 0.0, 0.0]), [literal([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])])
    same('maximum', 'maximum', a, [b])
    same('minimum', 'minimum', a, [b])
    same('maximum propagates nan', 'maximum', literal([math.nan, 1.0, 2.0]), [literal([0.0, math.nan, 1.0])])
    same('minimum int64 broadcast', 'minimum', integers([2, 3]), [integers([3])])
    method('lerp weight 0.3', 'lerp', a, [b, 0.3], lambda x, y, weight: torch.lerp(x, y, weight))
    method('lerp weight 1.5', 'lerp', a, [b, 1.5], lambda x, y, weight: torch.lerp(x, y, weight))
    method('lerp broadcast end', 'lerp', a, [normal([4]), 0.75], lambda x, y, weight: torch.lerp(x, y, weight))
    same('add float64', 'add', general64, [normal([2, 3], dtype='float64', decimals=6)])
    same('mul float64 by scalar', 'mul', general64, [0.1])
    same('div float64', 'div', general64, [uniform([2, 3], 0.5, 2.0, dtype='float64', decimals=6)])
    same('add int32', 'add', integers([4], dtype='int32'), [integers([4], dtype='int32')])
    same('mul uint8 wraps', 'mul', literal([100, 200, 3], 'uint8'), [literal([3, 2, 5], 'uint8')])
    same('add uint8 scalar wraps', 'add', literal([250, 5, 128], 'uint8'), [10])
    same('sub on transposed inputs', 'sub', transposed([3, 4]), [transposed([3, 4])])
    same('mul on stepped input', 'mul', stepped([3, 2], 0), [normal([3, 2])])

    group('broadcasting')
    same('add [2,3] + [3]', 'add', normal([2, 3]), [normal([3])])
    same('mul [4,1] * [1,5]', 'mul', normal([4, 1]), [normal([1, 5])])
    same('sub [3,1,2] - [2,1]', 'sub', normal([3, 1, 2]), [normal([2, 1])])
    same('add [2,3] + 0-dim tensor', 'add', normal([2, 3]), [literal(1.5)])
    same('mul 0-dim * 0-dim', 'mul', literal(2.5), [literal(-4.0)])
    same('div 0-dim by [3]', 'div', literal(1.0), [uniform([3], 0.5, 2.0)])
    same('add [1] + [2,2]', 'add', literal([10.0]), [normal([2, 2])])
    same('maximum [2,1,3] vs [4,1]', 'maximum', normal([2, 1, 3]), [normal([4, 1])])
    same('atan2 [3,1] vs [1,4]', 'atan2', normal([3, 1]), [normal([1, 4])])
    same('pow [2,1] ** [3]', 'pow', uniform([2, 1], 0.5, 2.0), [literal([0.0, 1.0, 2.0])])
    same('add expanded input', 'add', normal([1, 3]).then('expand', [2, 3]), [normal([2, 3])])

    group('promotion')
    same('int64 tensor + float scalar', 'add', integers([4]), [2.5])
    same('int64 tensor * int scalar stays int64', 'mul', integers([4]), [3])
    same('int32 tensor + int scalar stays int32', 'add', integers([4], dtype='int32'), [100])
    same('int32 tensor * float scalar', 'mul', integers([4], dtype='int32'), [0.5])
    same('int32 + int64 tensors', 'add', integers([4], dtype='int32'), [integers([4])])
    same('int64 + float32 tensors', 'add', integers([4]), [normal([4])])
    same('float32 + float64 tensors', 'add', normal([3]), [normal([3], dtype='float64', decimals=6)])
    same('float32 + 0-dim float64 keeps float32', 'add', normal([3]), [literal(0.5, 'float64')])
    same('int64 + 0-dim float64 gives float32', 'add', integers([3]), [literal(0.5, 'float64')])
    same('uint8 + int64 scalar stays uint8', 'add', literal([1, 2, 3], 'uint8'), [4])
    same('uint8 + int32 tensor', 'add', literal([1, 2, 3], 'uint8'), [literal([-1, -2, -3], 'int32')])
    same('bool + bool is bool', 'add', literal([True, False, True, False], 'bool'), [literal([True, True, False, False], 'bool')])
    same('bool * bool is bool', 'mul', literal([True, False, True, False], 'bool'), [literal([True, True, False, False], 'bool')])
    same('bool + int scalar gives int64', 'add', literal([True, False], 'bool'), [3])
    same('bool + float scalar gives float32', 'add', literal([True, False], 'bool'), [0.5])
    same('bool + bool scalar', 'add', literal([True, False], 'bool'), [True])
    same('bool tensor + float32 tensor', 'add', literal([True, False, True], 'bool'), [normal([3])])
    same('int64 + bool tensor', 'add', integers([3]), [literal([True, False, True], 'bool')])
    same('float16 + float32 tensors', 'add', eighths([3], 'float16'), [normal([3])])
    same('int32 + float16 tensor', 'add', integers([3], dtype='int32'), [eighths([3], 'float16')])
    same('float16 + int scalar stays float16', 'add', eighths([3], 'float16'), [2])
    same('bfloat16 * float scalar stays bfloat16', 'mul', eighths([3], 'bfloat16'), [0.5])

    group('reduced precision')
    # libtorch 1.13 lacks CPU kernels for some float16 ops (exp, log, sigmoid, ...): those
    # raise in PyTorch too, so only the ops PyTorch runs become cases.
    for dtype in ['float16', 'bfloat16']:
        x = eighths([2, 4], dtype, -3.0, 3.0)
        y = eighths([2, 4], dtype, -3.0, 3.0)
        positive_half = eighths([2, 4], dtype, 0.125, 4.0)
        when_supported(lambda: same(f'add {dtype}', 'add', x, [y]))
        when_supported(lambda: same(f'mul {dtype}', 'mul', x, [y]))
        when_supported(lambda: same(f'div {dtype}', 'div', x, [positive_half]))
        for name in ['exp', 'sigmoid', 'tanh', 'relu', 'neg', 'abs', 'sin']:
            when_supported(lambda: same(f'{name} {dtype}', name, x))
        for name in ['log', 'sqrt', 'rsqrt']:
            when_supported(lambda: same(f'{name} {dtype}', name, positive_half))
        when_supported(lambda: method(f'gelu {dtype}', 'gelu', x, [], lambda tensor: F.gelu(tensor)))
        when_supported(lambda: method(f'clamp {dtype}', 'clamp', x, [-1, 1], lambda tensor, low, high: torch.clamp(tensor, low, high)))
        when_supported(lambda: same(f'gt {dtype}', 'gt', x, [y]))

    group('comparison')
    left = literal([[1.0, 2.0, 3.0], [4.0, math.nan, 6.0]])
    right = literal([[1.0, 3.0, 2.0], [4.0, math.nan, 7.0]])
    for name in ['eq', 'ne', 'lt', 'le', 'gt', 'ge']:
        same(f'{name} tensor', name, left, [right])
        same(f'{name} scalar', name, left, [3])
        same(f'{name} int64 vs float scalar', name, literal([1, 2, 3]), [2.5])
    same('eq broadcast [2,3] vs [3]', 'eq', left, [literal([1.0, 5.0, 6.0])])
    same('lt int64 vs float32 tensor', 'lt', literal([1, 2, 3]), [literal([1.5, 2.0, 2.5])])
    same('ge int32 vs int64', 'ge', literal([1, 5, 3], 'int32'), [literal([2, 5, 1])])
    same('eq bool tensors', 'eq', literal([True, False, True], 'bool'), [literal([True, True, False], 'bool')])
    same('gt on transposed', 'gt', transposed([3, 4]), [0])
    same('ne uint8 scalar', 'ne', literal([0, 1, 2], 'uint8'), [1])
    method('allclose true', 'allclose', literal([1.0, 2.0]), [literal([1.0, 2.000001])], lambda x, y: torch.allclose(x, y))
    method('allclose false', 'allclose', literal([1.0, 2.0]), [literal([1.0, 2.1])], lambda x, y: torch.allclose(x, y))
    method('allclose with atol', 'allclose', literal([1.0, 2.0]), [literal([1.0, 2.1]), {'atol': 0.2}], lambda x, y, options: torch.allclose(x, y, atol=options['atol']))
    method('allclose nan not equal', 'allclose', literal([math.nan, 1.0]), [literal([math.nan, 1.0])], lambda x, y: torch.allclose(x, y))
    method('allclose equalNan', 'allclose', literal([math.nan, 1.0]), [literal([math.nan, 1.0]), {'equalNan': True}], lambda x, y, options: torch.allclose(x, y, equal_nan=True))
    method('allclose broadcast', 'allclose', literal([[1.0, 2.0], [1.0, 2.0]]), [literal([1.0, 2.0])], lambda x, y: torch.allclose(x, y))

    group('logical')
    p = literal([True, True, False, False], 'bool')
    q = literal([True, False, True, False], 'bool')
    same('logicalAnd bool', 'logicalAnd', p, [q], torch_name='logical_and')
    same('logicalOr bool', 'logicalOr', p, [q], torch_name='logical_or')
    same('logicalXor bool', 'logicalXor', p, [q], torch_name='logical_xor')
    same('logicalNot bool', 'logicalNot', p, torch_name='logical_not')
    numbers = literal([0.0, 1.5, -2.0, 0.0])
    same('logicalAnd float', 'logicalAnd', numbers, [literal([1.0, 0.0, 3.0, 0.0])], torch_name='logical_and')
    same('logicalOr int64 and bool', 'logicalOr', literal([0, 2, 0, 0]), [q], torch_name='logical_or')
    same('logicalNot float', 'logicalNot', numbers, torch_name='logical_not')
    same('logicalNot int64', 'logicalNot', literal([0, 3, -1]), torch_name='logical_not')
    same('logicalXor broadcast', 'logicalXor', literal([[True], [False]], 'bool'), [q], torch_name='logical_xor')
    same('bitwiseNot bool', 'bitwiseNot', p, torch_name='bitwise_not')
    same('bitwiseNot int32', 'bitwiseNot', literal([0, 1, -1, 7], 'int32'), torch_name='bitwise_not')
    same('bitwiseNot int64', 'bitwiseNot', literal([0, 5, -6]), torch_name='bitwise_not')
    same('bitwiseNot uint8', 'bitwiseNot', literal([0, 1, 255], 'uint8'), torch_name='bitwise_not')

    group('where')
    condition = literal([[True, False, True], [False, False, True]], 'bool')
    x = normal([2, 3])
    y = normal([2, 3])
    method('method form', 'where', x, [condition, y], lambda tensor, cond, other: torch.where(cond, tensor, other))
    method('method form scalar other', 'where', x, [condition, 0], lambda tensor, cond, other: torch.where(cond, tensor, other))
    method('method form broadcast condition', 'where', x, [literal([True, False, True], 'bool'), y], lambda tensor, cond, other: torch.where(cond, tensor, other))
    function('function tensors', 'where', [condition, x, y], lambda cond, a, b: torch.where(cond, a, b))
    function('function broadcast operands', 'where', [condition, normal([3]), normal([2, 1])], lambda cond, a, b: torch.where(cond, a, b))
    function('function scalar input', 'where', [condition, -1.5, y], lambda cond, a, b: torch.where(cond, a, b))
    function('function scalar other', 'where', [condition, x, 0], lambda cond, a, b: torch.where(cond, a, b))
    function('function int64 tensors', 'where', [condition, integers([2, 3]), integers([2, 3])], lambda cond, a, b: torch.where(cond, a, b))
    function('function int64 with int scalar', 'where', [condition, integers([2, 3]), 0], lambda cond, a, b: torch.where(cond, a, b))
    function('function two float scalars', 'where', [condition, 1.5, -0.5], lambda cond, a, b: torch.where(cond, a, b))
    function('function two int scalars', 'where', [condition, 1, 0], lambda cond, a, b: torch.where(cond, a, b))
    function('function int32 and float32 promote', 'where', [condition, integers([2, 3], dtype='int32'), normal([2, 3])], lambda cond, a, b: torch.where(cond, a, b))

    group('free functions')
    function('add number + tensor', 'add', [2, a], lambda left_value, right_value: torch.add(right_value, left_value))
    function('add tensor + tensor alpha', 'add', [a, b, 3], lambda x, y, alpha: torch.add(x, y, alpha=alpha))
    function('add number + tensor alpha', 'add', [2, a, 3], lambda x, y, alpha: x + alpha * y)
    function('sub number - tensor', 'sub', [10, a], lambda x, y: torch.rsub(y, x))
    function('sub number - int64 tensor', 'sub', [10, integers([4])], lambda x, y: torch.rsub(y, x))
    function('sub tensor - tensor alpha', 'sub', [a, b, 0.5], lambda x, y, alpha: torch.sub(x, y, alpha=alpha))
    function('mul number * tensor', 'mul', [3, a], lambda x, y: torch.mul(y, x))
    function('div number / tensor', 'div', [1, nonzero], lambda x, y: x / y)
    function('div number / int64 tensor', 'div', [7, literal([2, -4, 5])], lambda x, y: x / y)
    function('div tensor / tensor', 'div', [a, nonzero], lambda x, y: torch.div(x, y))
    function('pow number ** tensor', 'pow', [2, literal([0.0, 0.5, 1.0, 3.0, -1.0])], lambda x, y: torch.pow(x, y))
    function('pow number ** int64 tensor', 'pow', [3, literal([0, 1, 2, 5])], lambda x, y: torch.pow(x, y))
    function('pow tensor ** number', 'pow', [a, 2], lambda x, y: torch.pow(x, y))
    function('maximum', 'maximum', [a, b], lambda x, y: torch.maximum(x, y))
    function('minimum', 'minimum', [a, b], lambda x, y: torch.minimum(x, y))
    function('matmul', 'matmul', [normal([2, 3]), normal([3, 2])], lambda x, y: torch.matmul(x, y))


# ---------------------------------------------------------------------------------------
# Reductions

def reduction_cases():
    group('reduction')
    x = normal([3, 4])
    x3 = normal([2, 3, 4])
    x64 = normal([3, 4], dtype='float64', decimals=6)
    ints = integers([3, 4])
    ints32 = integers([3, 4], dtype='int32')
    flags = booleans([3, 4])
    ties = literal([[3, 1, 3, 0], [2, 2, 1, 2], [-1, -5, -5, 4]])

    method('sum all', 'sum', x, [], lambda tensor: tensor.sum())
    method('sum dim 1', 'sum', x, [1], lambda tensor, dim: tensor.sum(dim))
    method('sum dim -1 keepdim', 'sum', x, [-1, True], lambda tensor, dim, keep: tensor.sum(dim, keep))
    method('sum dims [0,2]', 'sum', x3, [[0, 2]], lambda tensor, dims: tensor.sum(dims))
    method('sum dims [0,2] keepdim', 'sum', x3, [[0, 2], True], lambda tensor, dims, keep: tensor.sum(dims, keep))
    method('sum dims [-1,-2]', 'sum', x3, [[-1, -2]], lambda tensor, dims: tensor.sum(dims))
    method('sum dim 0 dtype float64', 'sum', x, [0, False, {'dtype': 'float64'}], lambda tensor, dim, keep, options: tensor.sum(dim, keep, dtype=options_dtype(options)))
    method('sum all dtype float64', 'sum', x, [None, False, {'dtype': 'float64'}], lambda tensor, dim, keep, options: tensor.sum(dtype=options_dtype(options)))
    method('sum int32 gives int64', 'sum', ints32, [], lambda tensor: tensor.sum())
    method('sum int32 dim dtype int32', 'sum', ints32, [1, False, {'dtype': 'int32'}], lambda tensor, dim, keep, options: tensor.sum(dim, keep, dtype=options_dtype(options)))
    method('sum bool gives int64', 'sum', flags, [], lambda tensor: tensor.sum())
    method('sum bool dim 0', 'sum', flags, [0], lambda tensor, dim: tensor.sum(dim))
    method('sum uint8 gives int64', 'sum', literal([200, 100, 50], 'uint8'), [], lambda tensor: tensor.sum())
    method('sum float64', 'sum', x64, [1], lambda tensor, dim: tensor.sum(dim))
    method('sum transposed', 'sum', transposed([3, 4]), [1], lambda tensor, dim: tensor.sum(dim))
    method('sum empty', 'sum', literal([], 'float32'), [], lambda tensor: tensor.sum())
    method('sum float16', 'sum', eighths([8], 'float16'), [], lambda tensor: tensor.sum())

    method('mean all', 'mean', x, [], lambda tensor: tensor.mean())
    method('mean dim 0', 'mean', x, [0], lambda tensor, dim: tensor.mean(dim))
    method('mean dims [0,1] keepdim', 'mean', x3, [[0, 1], True], lambda tensor, dims, keep: tensor.mean(dims, keep))
    method('mean float64 dim -1', 'mean', x64, [-1], lambda tensor, dim: tensor.mean(dim))
    method('mean int64 with dtype float32', 'mean', ints, [None, False, {'dtype': 'float32'}], lambda tensor, dim, keep, options: tensor.mean(dtype=options_dtype(options)))
    method('mean dim 1 dtype float64', 'mean', x, [1, False, {'dtype': 'float64'}], lambda tensor, dim, keep, options: tensor.mean(dim, keep, dtype=options_dtype(options)))

    small = uniform([3, 4], 0.5, 1.5)
    method('prod all', 'prod', small, [], lambda tensor: tensor.prod())
    method('prod dim 1 keepdim', 'prod', small, [1, True], lambda tensor, dim, keep: tensor.prod(dim, keep))
    method('prod int64', 'prod', literal([[1, 2, 3], [-4, 5, 6]]), [1], lambda tensor, dim: tensor.prod(dim))
    method('prod int32 gives int64', 'prod', literal([1, 2, -3], 'int32'), [], lambda tensor: tensor.prod())
    method('prod dtype float64', 'prod', small, [0, False, {'dtype': 'float64'}], lambda tensor, dim, keep, options: tensor.prod(dim, keep, dtype=options_dtype(options)))
    method('prod bool', 'prod', literal([True, True, False], 'bool'), [], lambda tensor: tensor.prod())

    method('max all', 'max', x, [], lambda tensor: tensor.max())
    method('max dim 1', 'max', x, [1], lambda tensor, dim: tensor.max(dim))
    method('max dim 0 keepdim', 'max', x, [0, True], lambda tensor, dim, keep: tensor.max(dim, keep))
    method('max dim -1 on 3-d', 'max', x3, [-1], lambda tensor, dim: tensor.max(dim))
    method('max int64 ties first index', 'max', ties, [1], lambda tensor, dim: tensor.max(dim))
    method('max with nan', 'max', literal([[1.0, math.nan, 3.0], [2.0, 0.0, -1.0]]), [1], lambda tensor, dim: tensor.max(dim))
    method('max all with nan', 'max', literal([1.0, math.nan, 3.0]), [], lambda tensor: tensor.max())
    method('max pairwise', 'max', x, [normal([3, 4])], lambda tensor, other: torch.max(tensor, other))
    method('max bool dim', 'max', flags, [0], lambda tensor, dim: tensor.max(dim))
    method('min all', 'min', x, [], lambda tensor: tensor.min())
    method('min dim 1', 'min', x, [1], lambda tensor, dim: tensor.min(dim))
    method('min dim 0 keepdim', 'min', x, [0, True], lambda tensor, dim, keep: tensor.min(dim, keep))
    method('min int64 ties', 'min', ties, [1], lambda tensor, dim: tensor.min(dim))
    method('min int32 all', 'min', ints32, [], lambda tensor: tensor.min())
    method('min pairwise broadcast', 'min', x, [normal([4])], lambda tensor, other: torch.min(tensor, other))
    method('max transposed dim 1', 'max', transposed([3, 4]), [1], lambda tensor, dim: tensor.max(dim))

    method('amax dim 0', 'amax', x, [0], lambda tensor, dim: tensor.amax(dim))
    method('amax dims [0,2]', 'amax', x3, [[0, 2]], lambda tensor, dims: tensor.amax(dims))
    method('amax dim -1 keepdim', 'amax', x3, [-1, True], lambda tensor, dim, keep: tensor.amax(dim, keep))
    method('amin dim 1', 'amin', x, [1], lambda tensor, dim: tensor.amin(dim))
    method('amin dims [1,2] keepdim', 'amin', x3, [[1, 2], True], lambda tensor, dims, keep: tensor.amin(dims, keep))
    method('amin int64', 'amin', ties, [0], lambda tensor, dim: tensor.amin(dim))

    method('argmax flat', 'argmax', x, [], lambda tensor: tensor.argmax())
    method('argmax dim 1', 'argmax', x, [1], lambda tensor, dim: tensor.argmax(dim))
    method('argmax dim 0 keepdim', 'argmax', x, [0, True], lambda tensor, dim, keep: tensor.argmax(dim, keep))
    method('argmax ties first', 'argmax', ties, [1], lambda tensor, dim: tensor.argmax(dim))
    method('argmin flat', 'argmin', x, [], lambda tensor: tensor.argmin())
    method('argmin dim -1', 'argmin', x3, [-1], lambda tensor, dim: tensor.argmin(dim))
    method('argmin ties first', 'argmin', ties, [1], lambda tensor, dim: tensor.argmin(dim))

    for name in ['std', 'var']:
        method(f'{name} all unbiased', name, x, [], lambda tensor, name=name: getattr(tensor, name)())
        method(f'{name} all biased', name, x, [None, False], lambda tensor, dim, unbiased, name=name: getattr(tensor, name)(unbiased=unbiased))
        method(f'{name} dim 1', name, x, [1], lambda tensor, dim, name=name: getattr(tensor, name)(dim))
        method(f'{name} dim 0 biased keepdim', name, x, [0, False, True],
               lambda tensor, dim, unbiased, keep, name=name: getattr(tensor, name)(dim, unbiased=unbiased, keepdim=keep))
        method(f'{name} dims [0,2]', name, x3, [[0, 2]], lambda tensor, dims, name=name: getattr(tensor, name)(dims))
        method(f'{name} float64 dim -1', name, x64, [-1, True], lambda tensor, dim, unbiased, name=name: getattr(tensor, name)(dim, unbiased=unbiased))
        method(f'{name} single element unbiased is nan', name, literal([2.0]), [], lambda tensor, name=name: getattr(tensor, name)())

    def vector_norm(tensor, p=2, dim=None, keep=False):
        return torch.linalg.vector_norm(tensor, p, dim, keep)

    method('norm default', 'norm', x, [], lambda tensor: vector_norm(tensor))
    method('norm p=1', 'norm', x, [1], lambda tensor, p: vector_norm(tensor, p))
    method('norm p=2', 'norm', x, [2], lambda tensor, p: vector_norm(tensor, p))
    method('norm p=Infinity', 'norm', x, [Number(math.inf)], lambda tensor, p: vector_norm(tensor, p))
    method('norm p=-Infinity', 'norm', x, [Number(-math.inf)], lambda tensor, p: vector_norm(tensor, p))
    method('norm p=3', 'norm', x, [3], lambda tensor, p: vector_norm(tensor, p))
    method('norm p=0 counts non-zeros', 'norm', literal([0.0, 1.5, 0.0, -2.0]), [0], lambda tensor, p: vector_norm(tensor, p))
    method('norm p=2 dim 1', 'norm', x, [2, 1], lambda tensor, p, dim: vector_norm(tensor, p, dim))
    method('norm p=1 dim 0 keepdim', 'norm', x, [1, 0, True], lambda tensor, p, dim, keep: vector_norm(tensor, p, dim, keep))
    method('norm p=Infinity dim -1', 'norm', x, [Number(math.inf), -1], lambda tensor, p, dim: vector_norm(tensor, p, dim))
    method('norm p=2 dims [0,2]', 'norm', x3, [2, [0, 2]], lambda tensor, p, dims: vector_norm(tensor, p, dims))
    method('norm p=Infinity dims [1,2] keepdim', 'norm', x3, [Number(math.inf), [1, 2], True], lambda tensor, p, dims, keep: vector_norm(tensor, p, dims, keep))
    method('norm float64 p=2', 'norm', x64, [2, 1], lambda tensor, p, dim: vector_norm(tensor, p, dim))

    method('logsumexp dim 1', 'logsumexp', x, [1], lambda tensor, dim: tensor.logsumexp(dim))
    method('logsumexp dims [0,1] keepdim', 'logsumexp', x, [[0, 1], True], lambda tensor, dims, keep: tensor.logsumexp(dims, keep))
    method('logsumexp large values', 'logsumexp', literal([[1000.0, 1000.0], [-1000.0, 0.0]]), [1], lambda tensor, dim: tensor.logsumexp(dim))
    method('logsumexp float64', 'logsumexp', x64, [0], lambda tensor, dim: tensor.logsumexp(dim))

    method('softmax dim 1', 'softmax', x, [1], lambda tensor, dim: torch.softmax(tensor, dim))
    method('softmax dim 0', 'softmax', x, [0], lambda tensor, dim: torch.softmax(tensor, dim))
    method('softmax dim -1 3-d', 'softmax', x3, [-1], lambda tensor, dim: torch.softmax(tensor, dim))
    method('softmax dtype float64', 'softmax', x, [1, {'dtype': 'float64'}], lambda tensor, dim, options: torch.softmax(tensor, dim, dtype=options_dtype(options)))
    method('softmax large values', 'softmax', literal([[1000.0, 1001.0, 999.0]]), [1], lambda tensor, dim: torch.softmax(tensor, dim))
    method('softmax with -inf', 'softmax', literal([[0.0, -math.inf, 1.0]]), [1], lambda tensor, dim: torch.softmax(tensor, dim))
    method('softmax transposed', 'softmax', transposed([3, 4]), [1], lambda tensor, dim: torch.softmax(tensor, dim))
    method('logSoftmax dim 1', 'logSoftmax', x, [1], lambda tensor, dim: torch.log_softmax(tensor, dim))
    method('logSoftmax dim 0 3-d', 'logSoftmax', x3, [0], lambda tensor, dim: torch.log_softmax(tensor, dim))
    method('logSoftmax float64', 'logSoftmax', x64, [-1], lambda tensor, dim: torch.log_softmax(tensor, dim))
    method('logSoftmax dtype float64', 'logSoftmax', x, [1, {'dtype': 'float64'}], lambda tensor, dim, options: torch.log_softmax(tensor, dim, dtype=options_dtype(options)))

    method('cumsum dim 0', 'cumsum', x, [0], lambda tensor, dim: tensor.cumsum(dim))
    method('cumsum dim 1', 'cumsum', x, [1], lambda tensor, dim: tensor.cumsum(dim))
    method('cumsum dim -1 3-d', 'cumsum', x3, [-1], lambda tensor, dim: tensor.cumsum(dim))
    method('cumsum int32 gives int64', 'cumsum', ints32, [1], lambda tensor, dim: tensor.cumsum(dim))
    method('cumsum bool gives int64', 'cumsum', flags, [0], lambda tensor, dim: tensor.cumsum(dim))
    method('cumsum dtype float64', 'cumsum', x, [1, {'dtype': 'float64'}], lambda tensor, dim, options: tensor.cumsum(dim, dtype=options_dtype(options)))
    method('cumprod dim 1', 'cumprod', small, [1], lambda tensor, dim: tensor.cumprod(dim))
    method('cumprod int64', 'cumprod', literal([[1, 2, 3], [-1, 4, 0]]), [1], lambda tensor, dim: tensor.cumprod(dim))
    method('cumprod float64 dim 0', 'cumprod', x64, [0], lambda tensor, dim: tensor.cumprod(dim))

    method('all bool', 'all', flags, [], lambda tensor: tensor.all())
    method('all bool dim 1', 'all', flags, [1], lambda tensor, dim: tensor.all(dim))
    method('all bool dim 0 keepdim', 'all', flags, [0, True], lambda tensor, dim, keep: tensor.all(dim, keep))
    method('all true', 'all', literal([True, True], 'bool'), [], lambda tensor: tensor.all())
    method('all float', 'all', literal([[1.0, 0.0], [2.0, 3.0]]), [1], lambda tensor, dim: tensor.all(dim))
    method('all uint8 keeps uint8', 'all', literal([1, 2, 0], 'uint8'), [], lambda tensor: tensor.all())
    method('all empty is true', 'all', literal([], 'bool'), [], lambda tensor: tensor.all())
    method('any bool', 'any', flags, [], lambda tensor: tensor.any())
    method('any bool dim 1', 'any', flags, [1], lambda tensor, dim: tensor.any(dim))
    method('any int64 dim 0 keepdim', 'any', literal([[0, 0], [0, 4]]), [0, True], lambda tensor, dim, keep: tensor.any(dim, keep))
    method('any float all zero', 'any', literal([0.0, -0.0]), [], lambda tensor: tensor.any())
    method('any nan counts as true', 'any', literal([0.0, math.nan]), [], lambda tensor: tensor.any())

    method('countNonzero all', 'countNonzero', literal([[0.0, 1.0, 2.0], [0.0, 0.0, -3.0]]), [], lambda tensor: torch.count_nonzero(tensor))
    method('countNonzero dim 0', 'countNonzero', literal([[0.0, 1.0, 2.0], [0.0, 0.0, -3.0]]), [0], lambda tensor, dim: torch.count_nonzero(tensor, dim))
    method('countNonzero dims [0,1]', 'countNonzero', ints, [[0, 1]], lambda tensor, dims: torch.count_nonzero(tensor, dims))
    method('countNonzero bool dim -1', 'countNonzero', flags, [-1], lambda tensor, dim: torch.count_nonzero(tensor, dim))


# ---------------------------------------------------------------------------------------
# Linear algebra

def linalg_cases():
    group('linalg')
    same('matmul 1-d . 1-d', 'matmul', normal([4]), [normal([4])])
    same('matmul 2-d @ 1-d', 'matmul', normal([3, 4]), [normal([4])])
    same('matmul 1-d @ 2-d', 'matmul', normal([3]), [normal([3, 4])])
    same('matmul 2-d @ 2-d', 'matmul', normal([2, 3]), [normal([3, 4])])
    same('matmul batched @ 2-d', 'matmul', normal([2, 3, 4]), [normal([4, 2])])
    same('matmul broadcast batch dims', 'matmul', normal([2, 1, 3, 4]), [normal([3, 4, 2])])
    same('matmul batched @ 1-d', 'matmul', normal([2, 3, 4]), [normal([4])])
    same('matmul transposed operand', 'matmul', transposed([3, 4]), [normal([4, 2])])
    same('matmul float64', 'matmul', normal([3, 3], dtype='float64', decimals=6), [normal([3, 2], dtype='float64', decimals=6)])
    same('matmul int64', 'matmul', integers([2, 3]), [integers([3, 2])])
    same('mm', 'mm', normal([3, 4]), [normal([4, 2])])
    same('mm transposed operands', 'mm', transposed([3, 4]), [transposed([4, 2])])
    same('bmm', 'bmm', normal([2, 3, 4]), [normal([2, 4, 3])])
    same('mv', 'mv', normal([3, 4]), [normal([4])])
    same('mv float64', 'mv', normal([2, 3], dtype='float64', decimals=6), [normal([3], dtype='float64', decimals=6)])
    same('dot', 'dot', normal([5]), [normal([5])])
    same('dot int64', 'dot', integers([4]), [integers([4])])
    same('outer', 'outer', normal([3]), [normal([4])])
    same('outer int64', 'outer', integers([2]), [integers([3])])
    same('t 2-d', 't', normal([2, 3]))
    same('t 1-d', 't', normal([3]))
    same('trace', 'trace', normal([3, 3]))
    same('trace non-square', 'trace', normal([2, 4]))
    same('trace int64', 'trace', integers([3, 3]))
    method('addmm default', 'addmm', normal([2, 3]), [normal([2, 4]), normal([4, 3])], lambda tensor, m1, m2: torch.addmm(tensor, m1, m2))
    method('addmm beta 0.5 alpha 2', 'addmm', normal([2, 3]), [normal([2, 4]), normal([4, 3]), {'beta': 0.5, 'alpha': 2}],
           lambda tensor, m1, m2, options: torch.addmm(tensor, m1, m2, beta=options['beta'], alpha=options['alpha']))
    method('addmm broadcast bias', 'addmm', normal([3]), [normal([2, 4]), normal([4, 3]), {'beta': 2}],
           lambda tensor, m1, m2, options: torch.addmm(tensor, m1, m2, beta=options['beta']))

    well_conditioned = Input(torch.tensor([[4.0, 1.0, 0.5], [1.0, 3.0, -0.5], [0.5, -0.5, 2.0]], dtype=torch.float64))
    rhs = normal([3, 2], dtype='float64', decimals=6)
    function('solve float64', 'linalg.solve', [well_conditioned, rhs], lambda a, b: torch.linalg.solve(a, b), LINALG64)
    function('solve vector rhs', 'linalg.solve', [well_conditioned, normal([3], dtype='float64', decimals=6)], lambda a, b: torch.linalg.solve(a, b), LINALG64)
    function('solve float32', 'linalg.solve', [literal([[2.0, 1.0], [1.0, 3.0]]), literal([[1.0], [2.0]])], lambda a, b: torch.linalg.solve(a, b), LINALG32)
    function('solve batched', 'linalg.solve', [literal([[[2.0, 0.0], [0.0, 4.0]], [[1.0, 2.0], [3.0, 5.0]]], 'float64'), normal([2, 2, 1], dtype='float64', decimals=6)],
             lambda a, b: torch.linalg.solve(a, b), LINALG64)
    function('inv float64', 'linalg.inv', [well_conditioned], lambda a: torch.linalg.inv(a), LINALG64)
    function('inv float32', 'linalg.inv', [literal([[4.0, 7.0], [2.0, 6.0]])], lambda a: torch.linalg.inv(a), LINALG32)
    function('inv transposed', 'linalg.inv', [Input(well_conditioned.base.T.contiguous()).then('transpose', 0, 1)], lambda a: torch.linalg.inv(a), LINALG64)
    function('det float64', 'linalg.det', [well_conditioned], lambda a: torch.linalg.det(a), LINALG64)
    function('det float32', 'linalg.det', [literal([[1.0, 2.0], [3.0, 4.0]])], lambda a: torch.linalg.det(a), LINALG32)
    function('det singular', 'linalg.det', [literal([[1.0, 2.0], [2.0, 4.0]], 'float64')], lambda a: torch.linalg.det(a), LINALG64)
    function('det batched', 'linalg.det', [normal([2, 3, 3], dtype='float64', decimals=6)], lambda a: torch.linalg.det(a), LINALG64)
    function('cholesky lower', 'linalg.cholesky', [well_conditioned], lambda a: torch.linalg.cholesky(a), LINALG64)
    function('cholesky upper', 'linalg.cholesky', [well_conditioned, {'upper': True}], lambda a, options: torch.linalg.cholesky(a, upper=True), LINALG64)
    function('pinv non-square', 'linalg.pinv', [literal([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], 'float64')], lambda a: torch.linalg.pinv(a), LINALG64)

    def qr(a, mode='reduced'):
        q, r = torch.linalg.qr(a, mode)
        return {'Q': q, 'R': r}

    tall = literal([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]], 'float64')
    function('qr reduced', 'linalg.qr', [tall], lambda a: qr(a), LINALG64)
    function('qr complete', 'linalg.qr', [tall, 'complete'], lambda a, mode: qr(a, mode), LINALG64)

    group('einsum')
    function('einsum matrix product', 'einsum', ['ij,jk->ik', normal([2, 3]), normal([3, 2])], lambda equation, *operands: torch.einsum(equation, *operands))
    function('einsum batch transpose', 'einsum', ['bij->bji', normal([2, 2, 3])], lambda equation, *operands: torch.einsum(equation, *operands))
    function('einsum trace', 'einsum', ['ii->', normal([3, 3])], lambda equation, *operands: torch.einsum(equation, *operands))
    function('einsum outer', 'einsum', ['i,j->ij', normal([2]), normal([3])], lambda equation, *operands: torch.einsum(equation, *operands))
    function('einsum batched bilinear', 'einsum', ['bi,bij,bj->b', normal([2, 3]), normal([2, 3, 4]), normal([2, 4])], lambda equation, *operands: torch.einsum(equation, *operands))


# ---------------------------------------------------------------------------------------
# Shapes, views and indexing

def shape_cases():
    group('shape')
    x = normal([3, 4])
    x3 = normal([2, 3, 4])
    ints = integers([2, 3, 4])

    method('reshape with -1 spread', 'reshape', x, [-1, 2], lambda tensor, *shape: tensor.reshape(*shape))
    method('reshape list with -1', 'reshape', x3, [[4, -1]], lambda tensor, shape: tensor.reshape(shape))
    method('reshape to 1-d', 'reshape', x, [-1], lambda tensor, *shape: tensor.reshape(*shape))
    method('reshape to 0-dim', 'reshape', literal([5.0]), [[]], lambda tensor, shape: tensor.reshape(shape))
    method('reshape transposed input copies', 'reshape', transposed([3, 4]), [2, 6], lambda tensor, *shape: tensor.reshape(*shape))
    method('reshape int64', 'reshape', ints, [6, 4], lambda tensor, *shape: tensor.reshape(*shape))
    method('view', 'view', x, [4, 3], lambda tensor, *shape: tensor.view(*shape))
    method('view list with -1', 'view', x3, [[-1, 4]], lambda tensor, shape: tensor.view(shape))
    method('flatten all', 'flatten', x3, [], lambda tensor: tensor.flatten())
    method('flatten start 1', 'flatten', x3, [1], lambda tensor, start: tensor.flatten(start))
    method('flatten start 0 end 1', 'flatten', x3, [0, 1], lambda tensor, start, end: tensor.flatten(start, end))
    method('flatten negative dims', 'flatten', normal([2, 2, 2, 2]), [-3, -2], lambda tensor, start, end: tensor.flatten(start, end))
    method('flatten 0-dim', 'flatten', literal(3.0), [], lambda tensor: tensor.flatten())
    method('flatten transposed', 'flatten', transposed([3, 4]), [], lambda tensor: tensor.flatten())
    method('unflatten dim 1', 'unflatten', normal([2, 6]), [1, [2, 3]], lambda tensor, dim, sizes: tensor.unflatten(dim, sizes))
    method('unflatten with -1', 'unflatten', normal([2, 6]), [-1, [3, -1]], lambda tensor, dim, sizes: tensor.unflatten(dim, sizes))
    padded = normal([1, 3, 1, 2])
    method('squeeze all', 'squeeze', padded, [], lambda tensor: tensor.squeeze())
    method('squeeze dim 2', 'squeeze', padded, [2], lambda tensor, dim: tensor.squeeze(dim))
    method('squeeze dim -4', 'squeeze', padded, [-4], lambda tensor, dim: tensor.squeeze(dim))
    method('squeeze non-1 dim is a no-op', 'squeeze', padded, [1], lambda tensor, dim: tensor.squeeze(dim))
    method('unsqueeze 0', 'unsqueeze', x, [0], lambda tensor, dim: tensor.unsqueeze(dim))
    method('unsqueeze -1', 'unsqueeze', x, [-1], lambda tensor, dim: tensor.unsqueeze(dim))
    method('unsqueeze -2', 'unsqueeze', x, [-2], lambda tensor, dim: tensor.unsqueeze(dim))
    method('unsqueeze 0-dim', 'unsqueeze', literal(2.0), [0], lambda tensor, dim: tensor.unsqueeze(dim))
    method('transpose 0 1', 'transpose', x, [0, 1], lambda tensor, a, b: tensor.transpose(a, b))
    method('transpose 0 2 3-d', 'transpose', x3, [0, 2], lambda tensor, a, b: tensor.transpose(a, b))
    method('transpose negative dims', 'transpose', x3, [-1, -2], lambda tensor, a, b: tensor.transpose(a, b))
    method('permute spread', 'permute', x3, [2, 0, 1], lambda tensor, *dims: tensor.permute(*dims))
    method('permute list', 'permute', x3, [[1, 2, 0]], lambda tensor, dims: tensor.permute(dims))
    method('permute negative dims', 'permute', x3, [-1, 0, -2], lambda tensor, *dims: tensor.permute(*dims))
    method('movedim 0 to -1', 'movedim', x3, [0, -1], lambda tensor, source, destination: tensor.movedim(source, destination))
    method('movedim lists', 'movedim', x3, [[0, 1], [2, 0]], lambda tensor, source, destination: tensor.movedim(source, destination))
    row = normal([1, 4])
    method('expand with -1', 'expand', row, [3, -1], lambda tensor, *sizes: tensor.expand(*sizes))
    method('expand list adds dims', 'expand', normal([3, 1]), [[2, 3, 4]], lambda tensor, sizes: tensor.expand(sizes))
    method('expand 0-dim', 'expand', literal(7), [2, 2], lambda tensor, *sizes: tensor.expand(*sizes))
    method('expandAs', 'expandAs', row, [normal([2, 4])], lambda tensor, other: tensor.expand_as(other))
    method('broadcastTo', 'broadcastTo', normal([3, 1]), [[2, 3, 4]], lambda tensor, shape: torch.broadcast_to(tensor, shape))
    method('broadcastTo same rank', 'broadcastTo', row, [[3, 4]], lambda tensor, shape: torch.broadcast_to(tensor, shape))
    method('contiguous of transposed', 'contiguous', transposed([3, 4]), [], lambda tensor: tensor.contiguous())
    method('contiguous of stepped', 'contiguous', stepped([3, 4], 1), [], lambda tensor: tensor.contiguous())
    method('contiguous of expanded', 'contiguous', row.then('expand', [3, 4]), [], lambda tensor: tensor.contiguous())

    group('slicing')
    y = normal([5, 6])
    method('narrow', 'narrow', y, [1, 1, 3], lambda tensor, dim, start, length: tensor.narrow(dim, start, length))
    method('narrow negative start', 'narrow', y, [1, -3, 2], lambda tensor, dim, start, length: tensor.narrow(dim, start, length))
    method('narrow negative dim', 'narrow', y, [-2, 2, 3], lambda tensor, dim, start, length: tensor.narrow(dim, start, length))
    method('narrow zero length', 'narrow', y, [0, 5, 0], lambda tensor, dim, start, length: tensor.narrow(dim, start, length))

    def python_slice(tensor, dim, start=None, end=None, step=1):
        return tensor[(slice(None),) * (dim % tensor.dim()) + (slice(start, end, step),)]

    method('slice start end', 'slice', y, [1, 1, 4], python_slice)
    method('slice step 2', 'slice', y, [1, None, None, 2], python_slice)
    method('slice start with step 3', 'slice', y, [1, 1, None, 3], python_slice)
    method('slice negative bounds', 'slice', y, [0, -4, -1], python_slice)
    method('slice negative start with step', 'slice', y, [0, -5, None, 2], python_slice)
    method('slice out-of-range bounds clamp', 'slice', y, [1, -100, 100], python_slice)
    method('slice empty range', 'slice', y, [0, 3, 1], python_slice)
    method('slice negative dim', 'slice', y, [-1, 2], python_slice)
    method('slice of transposed', 'slice', transposed([4, 5]), [1, 1, None, 2], python_slice)
    method('slice int64 3-d', 'slice', ints, [2, 0, 4, 3], python_slice)
    method('select dim 0', 'select', y, [0, 2], lambda tensor, dim, index: tensor.select(dim, index))
    method('select negative index', 'select', y, [0, -1], lambda tensor, dim, index: tensor.select(dim, index))
    method('select dim -1 negative index', 'select', y, [-1, -2], lambda tensor, dim, index: tensor.select(dim, index))
    method('select 1-d gives 0-dim', 'select', normal([4]), [0, 3], lambda tensor, dim, index: tensor.select(dim, index))

    group('indexing')
    z = normal([4, 5])
    method('indexSelect dim 0', 'indexSelect', z, [0, literal([3, 0, 3])], lambda tensor, dim, index: tensor.index_select(dim, index))
    method('indexSelect dim 1', 'indexSelect', z, [1, literal([4, 1])], lambda tensor, dim, index: tensor.index_select(dim, index))
    method('indexSelect int64 source', 'indexSelect', ints, [2, literal([0, 0, 3])], lambda tensor, dim, index: tensor.index_select(dim, index))
    method('indexSelect transposed source', 'indexSelect', transposed([4, 5]), [0, literal([1, 2])], lambda tensor, dim, index: tensor.index_select(dim, index))

    def advanced(tensor, indices):
        return tensor[tuple(indices)]

    method('index rows', 'index', z, [[literal([2, 0, -1])]], advanced)
    method('index pairs', 'index', z, [[literal([0, 1, 3]), literal([4, 0, 2])]], advanced)
    method('index broadcast index tensors', 'index', z, [[literal([[0], [3]]), literal([1, 2, 4])]], advanced)
    method('index bool mask full', 'index', z, [[Input(z.torch() > 0)]], advanced)
    method('index bool mask rows', 'index', z, [[literal([True, False, True, False], 'bool')]], advanced)
    method('index 3-d by pairs', 'index', x3, [[literal([1, 0]), literal([2, 2])]], advanced)
    method('index int64 source', 'index', ints, [[literal([1]), literal([0, 2])]], advanced)

    gather_index = literal([[0, 0, 3], [1, 2, 2], [4, 4, 0], [1, 3, 2]])
    method('gather dim 1', 'gather', z, [1, gather_index], lambda tensor, dim, index: tensor.gather(dim, index))
    method('gather dim 0', 'gather', z, [0, literal([[3, 2, 1, 0, 0], [0, 0, 0, 1, 2]])], lambda tensor, dim, index: tensor.gather(dim, index))
    method('gather int32 source', 'gather', integers([3, 3], dtype='int32'), [1, literal([[2], [0], [1]])], lambda tensor, dim, index: tensor.gather(dim, index))
    method('gather negative dim', 'gather', z, [-1, gather_index], lambda tensor, dim, index: tensor.gather(dim, index))

    base = torch.zeros(3, 5)
    scatter_index = literal([[0, 1, 2, 0, 1], [2, 0, 1, 1, 2]])
    source = normal([2, 5])
    method('scatter tensor src dim 0', 'scatter', Input(base), [0, scatter_index, source], lambda tensor, dim, index, src: tensor.scatter(dim, index, src))
    method('scatter tensor src dim 1', 'scatter', Input(torch.zeros(2, 4)), [1, literal([[3, 0], [1, 2]]), normal([2, 2])], lambda tensor, dim, index, src: tensor.scatter(dim, index, src))
    method('scatter value', 'scatter', Input(base), [0, scatter_index, 5.5], lambda tensor, dim, index, value: tensor.scatter(dim, index, value))
    method('scatter int value into int64', 'scatter', integers([3, 4]), [1, literal([[0], [2], [3]]), -1], lambda tensor, dim, index, value: tensor.scatter(dim, index, value))
    duplicates = literal([[0, 1, 0, 1], [0, 0, 2, 2]])
    values = literal([[1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 30.0, 40.0]])
    method('scatterAdd with duplicates', 'scatterAdd', Input(torch.ones(3, 4)), [0, duplicates, values], lambda tensor, dim, index, src: tensor.scatter_add(dim, index, src))
    method('scatterAdd dim 1', 'scatterAdd', Input(torch.zeros(2, 3)), [1, literal([[0, 0, 2, 2], [1, 1, 1, 0]]), values], lambda tensor, dim, index, src: tensor.scatter_add(dim, index, src))
    method('scatterAdd int64', 'scatterAdd', Input(torch.zeros(3, dtype=torch.long)), [0, literal([0, 2, 0, 2, 2]), literal([1, 2, 3, 4, 5])], lambda tensor, dim, index, src: tensor.scatter_add(dim, index, src))
    reduce_base = literal([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [-1.0, -2.0, -3.0, -4.0]])
    for reduce in ['sum', 'prod', 'mean', 'amax', 'amin']:
        for include_self in [True, False]:
            options = {} if include_self else {'includeSelf': False}
            label = 'includeSelf' if include_self else 'excluding self'
            method(f'scatterReduce {reduce} {label}', 'scatterReduce', reduce_base, [0, duplicates, values, reduce, options],
                   lambda tensor, dim, index, src, mode, options, include_self=include_self: tensor.scatter_reduce(dim, index, src, mode, include_self=include_self))
    method('scatterReduce amax dim 1 int64', 'scatterReduce', Input(torch.zeros(2, 3, dtype=torch.long)), [1, literal([[0, 0, 2], [1, 1, 1]]), literal([[5, -7, 2], [3, 9, 1]]), 'amax'],
           lambda tensor, dim, index, src, mode: tensor.scatter_reduce(dim, index, src, mode))

    mask = literal([[True, False, False, True, False], [False, False, True, False, False], [True, True, True, True, True], [False] * 5], 'bool')
    method('maskedFill scalar', 'maskedFill', z, [mask, -1], lambda tensor, mask, value: tensor.masked_fill(mask, value))
    method('maskedFill float value', 'maskedFill', z, [mask, 2.5], lambda tensor, mask, value: tensor.masked_fill(mask, value))
    method('maskedFill broadcast mask', 'maskedFill', z, [literal([[True, False, True, False, False]], 'bool'), 0], lambda tensor, mask, value: tensor.masked_fill(mask, value))
    method('maskedFill -inf', 'maskedFill', z, [mask, Number(-math.inf)], lambda tensor, mask, value: tensor.masked_fill(mask, value))
    method('maskedFill 0-dim tensor value', 'maskedFill', z, [mask, literal(9.0)], lambda tensor, mask, value: tensor.masked_fill(mask, value))
    method('maskedFill int64', 'maskedFill', integers([4, 5]), [mask, 100], lambda tensor, mask, value: tensor.masked_fill(mask, value))
    method('maskedFill bool', 'maskedFill', booleans([4, 5]), [mask, True], lambda tensor, mask, value: tensor.masked_fill(mask, value))
    method('maskedSelect', 'maskedSelect', z, [mask], lambda tensor, mask: tensor.masked_select(mask))
    method('maskedSelect broadcast mask', 'maskedSelect', z, [literal([False, True, True, False, True], 'bool')], lambda tensor, mask: tensor.masked_select(mask))
    method('maskedSelect int64', 'maskedSelect', integers([4, 5]), [mask], lambda tensor, mask: tensor.masked_select(mask))
    method('nonzero 2-d', 'nonzero', literal([[0.0, 1.0, 0.0], [2.0, 0.0, -3.0]]), [], lambda tensor: tensor.nonzero())
    method('nonzero 1-d bool', 'nonzero', literal([False, True, True, False], 'bool'), [], lambda tensor: tensor.nonzero())
    method('nonzero 3-d int', 'nonzero', literal([[[0, 1], [0, 0]], [[2, 0], [0, 3]]]), [], lambda tensor: tensor.nonzero())
    method('nonzero none', 'nonzero', literal([0.0, 0.0]), [], lambda tensor: tensor.nonzero())

    group('joining')
    a = normal([2, 3])
    b = normal([2, 3])
    c = normal([1, 3])
    function('cat dim 0', 'cat', [[a, b, c]], lambda tensors: torch.cat(tensors))
    function('cat dim 1', 'cat', [[a, normal([2, 1]), b], 1], lambda tensors, dim: torch.cat(tensors, dim))
    function('cat dim -1', 'cat', [[a, b], -1], lambda tensors, dim: torch.cat(tensors, dim))
    function('cat 3-d dim 1', 'cat', [[normal([2, 1, 2]), normal([2, 2, 2])], 1], lambda tensors, dim: torch.cat(tensors, dim))
    function('cat int64', 'cat', [[integers([2]), integers([3])]], lambda tensors: torch.cat(tensors))
    function('cat promotes int64 and float32', 'cat', [[integers([2]), normal([2])]], lambda tensors: torch.cat(tensors))
    function('cat transposed inputs', 'cat', [[transposed([2, 3]), a]], lambda tensors: torch.cat(tensors))
    function('cat single tensor', 'cat', [[a]], lambda tensors: torch.cat(tensors))
    function('stack dim 0', 'stack', [[a, b]], lambda tensors: torch.stack(tensors))
    function('stack dim 1', 'stack', [[a, b, normal([2, 3])], 1], lambda tensors, dim: torch.stack(tensors, dim))
    function('stack dim -1', 'stack', [[a, b], -1], lambda tensors, dim: torch.stack(tensors, dim))
    function('stack 0-dim tensors', 'stack', [[literal(1.0), literal(2.0)]], lambda tensors: torch.stack(tensors))
    function('stack bool', 'stack', [[booleans([3]), booleans([3])]], lambda tensors: torch.stack(tensors))

    group('splitting')
    five = normal([5, 4])
    method('chunk uneven 3 of 5', 'chunk', five, [3], lambda tensor, chunks: tensor.chunk(chunks))
    method('chunk 2 along dim 1', 'chunk', five, [2, 1], lambda tensor, chunks, dim: tensor.chunk(chunks, dim))
    method('chunk more chunks than rows', 'chunk', normal([3, 2]), [5], lambda tensor, chunks: tensor.chunk(chunks))
    method('chunk 4 of 6 gives 3', 'chunk', normal([6]), [4], lambda tensor, chunks: tensor.chunk(chunks))
    method('split size 2', 'split', five, [2], lambda tensor, size: tensor.split(size))
    method('split size 3 dim 1', 'split', five, [3, 1], lambda tensor, size, dim: tensor.split(size, dim))
    method('split sizes', 'split', five, [[1, 3, 1]], lambda tensor, sizes: tensor.split(sizes))
    method('split sizes dim -1', 'split', five, [[2, 0, 2], -1], lambda tensor, sizes, dim: tensor.split(sizes, dim))
    method('unbind dim 0', 'unbind', normal([3, 2]), [], lambda tensor: tensor.unbind())
    method('unbind dim 1', 'unbind', normal([3, 2]), [1], lambda tensor, dim: tensor.unbind(dim))
    method('unbind int64 3-d dim -1', 'unbind', integers([2, 2, 3]), [-1], lambda tensor, dim: tensor.unbind(dim))

    group('tiling')
    small = normal([2, 3])
    method('repeat 2x3', 'repeat', small, [2, 3], lambda tensor, *sizes: tensor.repeat(*sizes))
    method('repeat list adds a dim', 'repeat', small, [[2, 1, 1]], lambda tensor, sizes: tensor.repeat(sizes))
    method('repeat 1-d', 'repeat', literal([1, 2, 3]), [3], lambda tensor, *sizes: tensor.repeat(*sizes))
    method('repeat transposed', 'repeat', transposed([2, 3]), [1, 2], lambda tensor, *sizes: tensor.repeat(*sizes))
    method('repeatInterleave flattened', 'repeatInterleave', small, [2], lambda tensor, repeats: tensor.repeat_interleave(repeats))
    method('repeatInterleave dim 0', 'repeatInterleave', small, [3, 0], lambda tensor, repeats, dim: tensor.repeat_interleave(repeats, dim))
    method('repeatInterleave dim -1', 'repeatInterleave', small, [2, -1], lambda tensor, repeats, dim: tensor.repeat_interleave(repeats, dim))
    method('flip dim 0', 'flip', small, [0], lambda tensor, dim: tensor.flip([dim]))
    method('flip dims [0,1]', 'flip', small, [[0, 1]], lambda tensor, dims: tensor.flip(dims))
    method('flip dim -1 3-d', 'flip', x3, [-1], lambda tensor, dim: tensor.flip([dim]))
    method('roll 1 along 0', 'roll', normal([4, 3]), [1, 0], lambda tensor, shifts, dims: tensor.roll(shifts, dims))
    method('roll two dims', 'roll', normal([4, 3]), [[1, -2], [0, 1]], lambda tensor, shifts, dims: tensor.roll(shifts, dims))
    method('roll larger than size', 'roll', literal([1, 2, 3, 4, 5]), [7, 0], lambda tensor, shifts, dims: tensor.roll(shifts, dims))
    method('roll negative', 'roll', literal([1, 2, 3, 4, 5]), [-1, -1], lambda tensor, shifts, dims: tensor.roll(shifts, dims))

    group('sorting')
    unsorted = normal([3, 5])
    with_ties = literal([[3, 1, 2, 1, 3, 0], [5, 5, 5, 1, 1, 1]])
    method('sort default last dim', 'sort', unsorted, [], lambda tensor: tensor.sort())
    method('sort dim 0', 'sort', unsorted, [0], lambda tensor, dim: tensor.sort(dim))
    method('sort descending', 'sort', unsorted, [-1, True], lambda tensor, dim, descending: tensor.sort(dim, descending))
    method('sort stable ascending with ties', 'sort', with_ties, [1, False, {'stable': True}], lambda tensor, dim, descending, options: torch.sort(tensor, dim=dim, descending=descending, stable=True))
    method('sort stable descending with ties', 'sort', with_ties, [1, True, {'stable': True}], lambda tensor, dim, descending, options: torch.sort(tensor, dim=dim, descending=descending, stable=True))
    method('sort nan last', 'sort', literal([3.0, math.nan, -1.0, 2.0]), [], lambda tensor: tensor.sort())
    method('sort transposed', 'sort', transposed([3, 4]), [1], lambda tensor, dim: tensor.sort(dim))
    method('sort bool', 'sort', literal([True, False, True, False], 'bool'), [0, False, {'stable': True}], lambda tensor, dim, descending, options: torch.sort(tensor, dim=dim, descending=descending, stable=True))
    method('argsort', 'argsort', unsorted, [], lambda tensor: tensor.argsort())
    method('argsort dim 0 descending', 'argsort', unsorted, [0, True], lambda tensor, dim, descending: tensor.argsort(dim, descending))
    method('argsort int32', 'argsort', literal([4, -2, 7, 0], 'int32'), [], lambda tensor: tensor.argsort())
    method('topk 2', 'topk', unsorted, [2], lambda tensor, k: tensor.topk(k))
    method('topk smallest 2 along dim 0', 'topk', unsorted, [2, 0, False], lambda tensor, k, dim, largest: tensor.topk(k, dim, largest))
    method('topk 3 dim 1 largest sorted', 'topk', unsorted, [3, 1, True, True], lambda tensor, k, dim, largest, ordered: tensor.topk(k, dim, largest, ordered))
    method('topk int64', 'topk', literal([5, 1, 9, 3, 7]), [3], lambda tensor, k: tensor.topk(k))
    method('topk k=0', 'topk', literal([5.0, 1.0]), [0], lambda tensor, k: tensor.topk(k))

    group('triangles')
    square = normal([4, 4])
    wide = integers([3, 5])
    same('tril', 'tril', square)
    same('tril diagonal -1', 'tril', square, [-1])
    same('tril diagonal 2 non-square', 'tril', wide, [2])
    same('triu', 'triu', square)
    same('triu diagonal 1', 'triu', square, [1])
    same('triu diagonal -1 non-square', 'triu', wide, [-1])
    same('tril batched', 'tril', normal([2, 3, 3]))
    same('diag of matrix', 'diag', square)
    same('diag of matrix offset 1', 'diag', square, [1])
    same('diag of matrix offset -2', 'diag', wide, [-2])
    same('diag of vector', 'diag', literal([1.0, 2.0, 3.0]))
    same('diag of vector offset -1', 'diag', literal([1, 2, 3]), [-1])
    same('diag of vector offset 2', 'diag', literal([1.5, -2.5]), [2])


# ---------------------------------------------------------------------------------------
# In-place ops

def inplace_cases():
    group('inplace')
    x = normal([3, 4])
    y = normal([3, 4])
    ints = integers([3, 4])
    positive = uniform([3, 4], 0.5, 2.0)

    inplace('add_ tensor', 'add_', x, [y], lambda tensor, other: tensor.add_(other))
    inplace('add_ tensor alpha 2', 'add_', x, [y, 2], lambda tensor, other, alpha: tensor.add_(other, alpha=alpha))
    inplace('add_ scalar', 'add_', x, [1.5], lambda tensor, other: tensor.add_(other))
    inplace('add_ scalar alpha -2', 'add_', x, [0.5, -2], lambda tensor, other, alpha: tensor.add_(other, alpha=alpha))
    inplace('add_ broadcast row', 'add_', x, [normal([4])], lambda tensor, other: tensor.add_(other))
    inplace('add_ int64 scalar', 'add_', ints, [3], lambda tensor, other: tensor.add_(other))
    inplace('add_ float64', 'add_', normal([3], dtype='float64', decimals=6), [normal([3], dtype='float64', decimals=6)], lambda tensor, other: tensor.add_(other))
    inplace('add_ int32 from int64 tensor', 'add_', integers([4], dtype='int32'), [integers([4])], lambda tensor, other: tensor.add_(other))
    inplace('add_ on transposed view', 'add_', transposed([3, 4]), [y], lambda tensor, other: tensor.add_(other))
    inplace('sub_ tensor', 'sub_', x, [y], lambda tensor, other: tensor.sub_(other))
    inplace('sub_ tensor alpha 0.5', 'sub_', x, [y, 0.5], lambda tensor, other, alpha: tensor.sub_(other, alpha=alpha))
    inplace('sub_ scalar', 'sub_', x, [2.25], lambda tensor, other: tensor.sub_(other))
    inplace('sub_ scalar alpha 3', 'sub_', x, [0.5, 3], lambda tensor, other, alpha: tensor.sub_(other, alpha=alpha))
    inplace('sub_ int64 scalar', 'sub_', ints, [4], lambda tensor, other: tensor.sub_(other))
    inplace('mul_ tensor', 'mul_', x, [y], lambda tensor, other: tensor.mul_(other))
    inplace('mul_ broadcast column', 'mul_', x, [normal([3, 1])], lambda tensor, other: tensor.mul_(other))
    inplace('mul_ scalar', 'mul_', x, [-3], lambda tensor, other: tensor.mul_(other))
    inplace('mul_ int64 scalar', 'mul_', ints, [-2], lambda tensor, other: tensor.mul_(other))
    inplace('div_ tensor', 'div_', x, [positive], lambda tensor, other: tensor.div_(other))
    inplace('div_ scalar', 'div_', x, [8], lambda tensor, other: tensor.div_(other))
    inplace('div_ float64 scalar', 'div_', normal([3], dtype='float64', decimals=6), [3], lambda tensor, other: tensor.div_(other))
    inplace('pow_ 2', 'pow_', x, [2], lambda tensor, exponent: tensor.pow_(exponent))
    inplace('pow_ 0.5', 'pow_', positive, [0.5], lambda tensor, exponent: tensor.pow_(exponent))
    inplace('addcmul_ default value', 'addcmul_', x, [y, positive], lambda tensor, t1, t2: tensor.addcmul_(t1, t2))
    inplace('addcmul_ value 0.5', 'addcmul_', x, [y, positive, 0.5], lambda tensor, t1, t2, value: tensor.addcmul_(t1, t2, value=value))
    inplace('addcmul_ broadcast', 'addcmul_', x, [normal([4]), normal([3, 1]), -2], lambda tensor, t1, t2, value: tensor.addcmul_(t1, t2, value=value))
    inplace('addcdiv_ default value', 'addcdiv_', x, [y, positive], lambda tensor, t1, t2: tensor.addcdiv_(t1, t2))
    inplace('addcdiv_ value 2', 'addcdiv_', x, [y, positive, 2], lambda tensor, t1, t2, value: tensor.addcdiv_(t1, t2, value=value))
    inplace('addcdiv_ value -0.1', 'addcdiv_', x, [y, positive, -0.1], lambda tensor, t1, t2, value: tensor.addcdiv_(t1, t2, value=value))
    inplace('lerp_ 0.25', 'lerp_', x, [y, 0.25], lambda tensor, end, weight: tensor.lerp_(end, weight))
    inplace('lerp_ broadcast end', 'lerp_', x, [normal([4]), 0.9], lambda tensor, end, weight: tensor.lerp_(end, weight))
    inplace('copy_ same shape', 'copy_', x, [y], lambda tensor, src: tensor.copy_(src))
    inplace('copy_ broadcast and cast int64 to float32', 'copy_', x, [integers([4])], lambda tensor, src: tensor.copy_(src))
    inplace('copy_ float32 into int32 truncates', 'copy_', integers([4], dtype='int32'), [literal([1.7, -1.7, 2.5, -0.2])], lambda tensor, src: tensor.copy_(src))
    inplace('copy_ float32 into float64', 'copy_', normal([3], dtype='float64', decimals=6), [normal([3])], lambda tensor, src: tensor.copy_(src))
    inplace('copy_ bool into float32 column broadcast', 'copy_', x, [literal([[True], [False], [True]], 'bool')], lambda tensor, src: tensor.copy_(src))
    inplace('copy_ transposed source', 'copy_', x, [transposed([3, 4])], lambda tensor, src: tensor.copy_(src))
    inplace('copy_ into transposed view', 'copy_', transposed([3, 4]), [y], lambda tensor, src: tensor.copy_(src))
    inplace('zero_ float32', 'zero_', x, [], lambda tensor: tensor.zero_())
    inplace('zero_ int64', 'zero_', ints, [], lambda tensor: tensor.zero_())
    inplace('zero_ stepped view', 'zero_', stepped([3, 2], 1), [], lambda tensor: tensor.zero_())
    inplace('fill_ float', 'fill_', x, [3.5], lambda tensor, value: tensor.fill_(value))
    inplace('fill_ int64', 'fill_', ints, [7], lambda tensor, value: tensor.fill_(value))
    inplace('fill_ int64 with float truncates', 'fill_', ints, [2.9], lambda tensor, value: tensor.fill_(value))
    inplace('fill_ bool', 'fill_', booleans([4]), [True], lambda tensor, value: tensor.fill_(value))
    inplace('fill_ nan', 'fill_', x, [Number(math.nan)], lambda tensor, value: tensor.fill_(value))
    inplace('clamp_ both', 'clamp_', x, [-0.5, 0.5], lambda tensor, low, high: tensor.clamp_(low, high))
    inplace('clamp_ min only', 'clamp_', x, [0], lambda tensor, low: tensor.clamp_(min=low))
    inplace('clamp_ max only', 'clamp_', x, [None, 0], lambda tensor, low, high: tensor.clamp_(max=high))
    inplace('clamp_ int64', 'clamp_', ints, [-3, 3], lambda tensor, low, high: tensor.clamp_(low, high))
    inplace('sqrt_', 'sqrt_', positive, [], lambda tensor: tensor.sqrt_())
    inplace('neg_', 'neg_', x, [], lambda tensor: tensor.neg_())
    inplace('exp_', 'exp_', x, [], lambda tensor: tensor.exp_())
    inplace('relu_', 'relu_', x, [], lambda tensor: tensor.relu_())
    inplace('relu_ int64', 'relu_', ints, [], lambda tensor: tensor.relu_())
    mask = literal([[True, False, False, True], [False, False, True, False], [True, True, True, True]], 'bool')
    inplace('maskedFill_ scalar', 'maskedFill_', x, [mask, 9], lambda tensor, mask, value: tensor.masked_fill_(mask, value))
    inplace('maskedFill_ broadcast mask', 'maskedFill_', x, [literal([False, True, False, True], 'bool'), -0.5], lambda tensor, mask, value: tensor.masked_fill_(mask, value))
    inplace('maskedFill_ int64', 'maskedFill_', ints, [mask, 0], lambda tensor, mask, value: tensor.masked_fill_(mask, value))


# ---------------------------------------------------------------------------------------
# Corners: dtype promotion of unary ops, odd shapes, and PyTorch's quirks

def corner_cases():
    group('creation')
    function('arange 0 to 0.3 by 0.1', 'arange', [0, 0.3, 0.1], lambda start, end, step: torch.arange(start, end, step))
    function('linspace int64', 'linspace', [0, 10, 5, {'dtype': 'int64'}], lambda start, end, steps, options: torch.linspace(start, end, steps, dtype=options_dtype(options)))
    function('linspace zero steps', 'linspace', [0, 1, 0], lambda start, end, steps: torch.linspace(start, end, steps))
    function('eye 0', 'eye', [0], lambda n: torch.eye(n))
    function('full float value with int32 dtype', 'full', [[3], 2.7, {'dtype': 'int32'}], lambda shape, value, options: torch.full(shape, value, dtype=options_dtype(options)))

    group('elementwise')
    same('sigmoid int64 promotes', 'sigmoid', literal([-2, 0, 3]))
    same('sin int32 promotes', 'sin', literal([0, 1, 2], 'int32'))
    same('reciprocal int64 promotes', 'reciprocal', literal([1, 2, 4]))
    same('log bool promotes', 'log', literal([True, False], 'bool'))
    same('floor int64 is identity', 'floor', literal([-3, 0, 4]))
    same('round int64 is identity', 'round', literal([-3, 0, 4]))
    same('trunc int64 is identity', 'trunc', literal([-3, 0, 4]))
    same('square bool gives int64', 'square', literal([True, False], 'bool'))
    same('abs uint8', 'abs', literal([1, 200], 'uint8'))
    same('neg uint8 wraps', 'neg', literal([1, 200], 'uint8'))
    same('sign bool', 'sign', literal([True, False], 'bool'))
    same('sign float64 special', 'sign', literal([math.nan, -0.0, -3.0, math.inf], 'float64'))
    method('clamp min above max gives max', 'clamp', literal([0.0, 5.0, -3.0]), [1, -1], lambda tensor, low, high: torch.clamp(tensor, low, high))
    method('clamp uint8 with negative min', 'clamp', literal([0, 5, 200], 'uint8'), [-1, 100], lambda tensor, low, high: torch.clamp(tensor, low, high))
    method('clamp float64', 'clamp', normal([5], dtype='float64', decimals=6), [-0.3, 0.4], lambda tensor, low, high: torch.clamp(tensor, low, high))
    method('softplus float64 beta 0.5', 'softplus', normal([5], dtype='float64', decimals=6), [0.5], lambda tensor, beta: F.softplus(tensor, beta))
    method('round half to even decimals 1', 'round', literal([0.25, 0.35, -0.25, 1.25], 'float64'), [1], lambda tensor, decimals: torch.round(tensor, decimals=decimals))

    group('binary')
    same('atan2 int64 promotes', 'atan2', literal([1, 2, -3]), [literal([3, -4, 5])])
    same('maximum int64 and float32 promote', 'maximum', literal([1, 5, -2]), [literal([1.5, 2.0, -2.5])])
    same('minimum bool', 'minimum', literal([True, False, True], 'bool'), [literal([True, True, False], 'bool')])
    same('pow bool gives int64', 'pow', literal([True, False], 'bool'), [2])
    same('remainder uint8 scalar', 'remainder', literal([7, 200, 9], 'uint8'), [3])
    same('fmod float by zero is nan', 'fmod', literal([1.0, -2.0]), [0])
    same('remainder float by zero is nan', 'remainder', literal([1.0, -2.0]), [literal([0.0, 0.0])])
    method('lerp float64', 'lerp', normal([4], dtype='float64', decimals=6), [normal([4], dtype='float64', decimals=6), 0.125], lambda x, y, weight: torch.lerp(x, y, weight))
    same('mul int64 by bool tensor', 'mul', integers([4]), [literal([True, False, True, False], 'bool')])
    same('div bool by bool', 'div', literal([True, True], 'bool'), [literal([True, True], 'bool')])

    group('comparison')
    same('ge bool vs int scalar', 'ge', literal([True, False], 'bool'), [1])
    same('lt float64 vs float32', 'lt', literal([0.1, 0.2], 'float64'), [literal([0.1, 0.3])])
    same('eq inf', 'eq', literal([math.inf, -math.inf, 1.0]), [literal([math.inf, math.inf, 1.0])])

    group('logical')
    same('logicalNot uint8', 'logicalNot', literal([0, 2], 'uint8'), torch_name='logical_not')
    same('logicalAnd float and bool', 'logicalAnd', literal([0.5, 0.0, 2.0]), [literal([True, True, False], 'bool')], torch_name='logical_and')

    group('where')
    function('function int64 with float scalar promotes', 'where', [literal([True, False], 'bool'), literal([1, 2]), 0.5], lambda cond, a, b: torch.where(cond, a, b))
    function('function uint8 condition', 'where', [literal([True, False, True], 'bool'), literal([1, 2, 3], 'uint8'), literal([9, 9, 9], 'uint8')], lambda cond, a, b: torch.where(cond, a, b))
    function('function float64 and float32 promote', 'where', [literal([True, False], 'bool'), literal([1.5, 2.5], 'float64'), literal([0.5, 0.25])], lambda cond, a, b: torch.where(cond, a, b))

    group('reduction')
    method('mean float16', 'mean', eighths([6], 'float16'), [], lambda tensor: tensor.mean())
    method('sum bfloat16 dim', 'sum', eighths([2, 4], 'bfloat16'), [1], lambda tensor, dim: tensor.sum(dim))
    method('max float16 dim', 'max', eighths([2, 4], 'float16'), [1], lambda tensor, dim: tensor.max(dim))
    method('amax with nan', 'amax', literal([[1.0, math.nan], [2.0, 3.0]]), [1], lambda tensor, dim: tensor.amax(dim))
    method('min bool all', 'min', literal([True, False, True], 'bool'), [], lambda tensor: tensor.min())
    method('logsumexp int64 promotes', 'logsumexp', literal([[1, 2], [3, 4]]), [1], lambda tensor, dim: tensor.logsumexp(dim))
    method('softmax int64 with dtype float32', 'softmax', literal([1, 2, 3]), [0, {'dtype': 'float32'}], lambda tensor, dim, options: torch.softmax(tensor, dim, dtype=options_dtype(options)))
    method('cumsum int64 with dtype float32', 'cumsum', literal([1, 2, 3]), [0, {'dtype': 'float32'}], lambda tensor, dim, options: tensor.cumsum(dim, dtype=options_dtype(options)))
    method('cumprod bool gives int64', 'cumprod', literal([True, True, False, True], 'bool'), [0], lambda tensor, dim: tensor.cumprod(dim))
    method('norm p=0.5', 'norm', literal([1.0, 4.0, 9.0]), [0.5], lambda tensor, p: torch.linalg.vector_norm(tensor, p))
    method('std float64 dims [0,1] biased keepdim', 'std', normal([2, 3, 2], dtype='float64', decimals=6), [[0, 1], False, True],
           lambda tensor, dims, unbiased, keep: tensor.std(dims, unbiased=unbiased, keepdim=keep))
    method('countNonzero empty', 'countNonzero', literal([], 'float32'), [], lambda tensor: torch.count_nonzero(tensor))
    method('sum of expanded input', 'sum', normal([1, 4]).then('expand', [3, 4]), [0], lambda tensor, dim: tensor.sum(dim))
    method('argmax of stepped input', 'argmax', stepped([3, 4], 1), [1], lambda tensor, dim: tensor.argmax(dim))

    group('linalg')
    same('matmul 1-d @ batched', 'matmul', normal([4]), [normal([2, 4, 3])])
    same('matmul int32', 'matmul', integers([2, 2], dtype='int32'), [integers([2, 2], dtype='int32')])
    same('mm bfloat16', 'mm', eighths([2, 3], 'bfloat16', -2.0, 2.0), [eighths([3, 2], 'bfloat16', -2.0, 2.0)])
    same('dot float64', 'dot', normal([4], dtype='float64', decimals=6), [normal([4], dtype='float64', decimals=6)])
    same('trace 1x1', 'trace', literal([[2.5]]))
    method('addmm int64 beta alpha', 'addmm', integers([2, 2]), [integers([2, 3]), integers([3, 2]), {'beta': 2, 'alpha': 3}],
           lambda tensor, m1, m2, options: torch.addmm(tensor, m1, m2, beta=options['beta'], alpha=options['alpha']))
    function('einsum ellipsis transpose', 'einsum', ['...ij->...ji', normal([2, 2, 3])], lambda equation, *operands: torch.einsum(equation, *operands))

    group('shape')
    method('broadcastTo with -1', 'broadcastTo', normal([2, 1]), [[3, -1, 4]], lambda tensor, shape: torch.broadcast_to(tensor, shape))
    method('reshape empty', 'reshape', Input(torch.zeros(0, 3)), [3, 0], lambda tensor, *shape: tensor.reshape(*shape))
    method('squeeze 0-dim', 'squeeze', literal(4.0), [], lambda tensor: tensor.squeeze())
    method('flatten start equals end', 'flatten', x3_input(), [1, 1], lambda tensor, start, end: tensor.flatten(start, end))
    method('movedim negative lists', 'movedim', x3_input(), [[-1, -3], [0, 1]], lambda tensor, source, destination: tensor.movedim(source, destination))
    method('permute 4-d', 'permute', normal([2, 1, 3, 2]), [3, 1, 0, 2], lambda tensor, *dims: tensor.permute(*dims))
    method('to same dtype', 'to', normal([3]), ['float32'], lambda tensor, dtype: tensor.to(DTYPES[dtype]))

    group('slicing')
    method('slice step beyond size', 'slice', normal([5]), [0, 1, None, 10], lambda tensor, dim, start, end, step: tensor[start:end:step])
    method('narrow full length', 'narrow', normal([3, 2]), [0, 0, 3], lambda tensor, dim, start, length: tensor.narrow(dim, start, length))

    group('indexing')
    method('maskedFill float value into int64', 'maskedFill', literal([1, 2, 3]), [literal([True, False, True], 'bool'), 2.5], lambda tensor, mask, value: tensor.masked_fill(mask, value))
    method('nonzero 0-dim', 'nonzero', literal(3.0), [], lambda tensor: tensor.nonzero())
    method('index with int64 on transposed source', 'index', transposed([4, 5]), [[literal([0, 3]), literal([1, 1])]], lambda tensor, indices: tensor[tuple(indices)])
    method('gather from transposed source', 'gather', transposed([3, 4]), [1, literal([[0, 3], [1, 1], [2, 0]])], lambda tensor, dim, index: tensor.gather(dim, index))
    method('scatter into transposed self', 'scatter', transposed([2, 3]), [1, literal([[0, 2], [1, 0]]), normal([2, 2])], lambda tensor, dim, index, src: tensor.scatter(dim, index, src))
    method('maskedSelect bool', 'maskedSelect', literal([True, False, True], 'bool'), [literal([True, True, False], 'bool')], lambda tensor, mask: tensor.masked_select(mask))

    group('joining')
    function('cat with an empty tensor', 'cat', [[Input(torch.zeros(0, 3)), normal([2, 3])]], lambda tensors: torch.cat(tensors))
    function('cat float16', 'cat', [[eighths([2], 'float16'), eighths([1], 'float16')]], lambda tensors: torch.cat(tensors))
    function('stack int32 dim 1', 'stack', [[literal([1, 2], 'int32'), literal([3, 4], 'int32')], 1], lambda tensors, dim: torch.stack(tensors, dim))

    group('splitting')
    method('chunk 1', 'chunk', normal([3]), [1], lambda tensor, chunks: tensor.chunk(chunks))
    method('split size larger than dim', 'split', normal([3, 2]), [5], lambda tensor, size: tensor.split(size))
    method('unbind 0-size dim', 'unbind', Input(torch.zeros(2, 0)), [1], lambda tensor, dim: tensor.unbind(dim))

    group('tiling')
    method('repeat zero times', 'repeat', literal([1.0, 2.0]), [0], lambda tensor, *sizes: tensor.repeat(*sizes))
    method('repeatInterleave zero', 'repeatInterleave', literal([1, 2]), [0], lambda tensor, repeats: tensor.repeat_interleave(repeats))
    method('repeatInterleave 0-dim', 'repeatInterleave', literal(5), [3], lambda tensor, repeats: tensor.repeat_interleave(repeats))
    method('flip bool', 'flip', literal([True, False, False], 'bool'), [0], lambda tensor, dim: tensor.flip([dim]))
    method('roll flattened shape kept', 'roll', normal([2, 3]), [[1], [1]], lambda tensor, shifts, dims: tensor.roll(shifts, dims))

    group('sorting')
    method('sort float16', 'sort', eighths([5], 'float16'), [], lambda tensor: tensor.sort())
    method('sort descending stable with nan', 'sort', literal([1.0, math.nan, 3.0, 1.0, math.nan]), [0, True, {'stable': True}],
           lambda tensor, dim, descending, options: torch.sort(tensor, dim=dim, descending=descending, stable=True))
    method('sort int64 stable ascending dim 0', 'sort', literal([[2, 1], [1, 1], [2, 0]]), [0, False, {'stable': True}],
           lambda tensor, dim, descending, options: torch.sort(tensor, dim=dim, descending=descending, stable=True))
    method('topk float64 smallest', 'topk', normal([6], dtype='float64', decimals=6), [2, -1, False], lambda tensor, k, dim, largest: tensor.topk(k, dim, largest))

    group('triangles')
    same('triu bool', 'triu', Input(torch.ones(3, 3, dtype=torch.bool)))
    same('tril diagonal beyond size', 'tril', normal([3, 3]), [5])
    same('diag of transposed matrix', 'diag', transposed([3, 3]))

    group('inplace')
    inplace('add_ bool into float32', 'add_', normal([2]), [literal([True, False], 'bool')], lambda tensor, other: tensor.add_(other))
    inplace('copy_ from 0-dim', 'copy_', normal([2, 2]), [literal(7.5)], lambda tensor, src: tensor.copy_(src))
    inplace('copy_ float64 into float16', 'copy_', eighths([3], 'float16'), [literal([0.1, 1000.7, -3.3], 'float64')], lambda tensor, src: tensor.copy_(src))
    inplace('mul_ float16 by scalar', 'mul_', eighths([3], 'float16'), [0.5], lambda tensor, other: tensor.mul_(other))
    inplace('div_ int64 tensor into float32', 'div_', normal([3]), [literal([2, -4, 8])], lambda tensor, other: tensor.div_(other))
    inplace('sub_ uint8 scalar wraps', 'sub_', literal([1, 5, 255], 'uint8'), [3], lambda tensor, other: tensor.sub_(other))
    inplace('sub_ float32 scalar with alpha 0.1', 'sub_', normal([3]), [0.3, 0.1], lambda tensor, other, alpha: tensor.sub_(other, alpha=alpha))
    inplace('clamp_ float64', 'clamp_', normal([4], dtype='float64', decimals=6), [-0.25, 0.25], lambda tensor, low, high: tensor.clamp_(low, high))
    inplace('fill_ float16', 'fill_', eighths([3], 'float16'), [0.1], lambda tensor, value: tensor.fill_(value))
    inplace('maskedFill_ on transposed view', 'maskedFill_', transposed([2, 3]), [literal([[True, False, True], [False, True, False]], 'bool'), 0], lambda tensor, mask, value: tensor.masked_fill_(mask, value))
    inplace('lerp_ float64 weight 0.5', 'lerp_', normal([3], dtype='float64', decimals=6), [normal([3], dtype='float64', decimals=6), 0.5], lambda tensor, end, weight: tensor.lerp_(end, weight))
    inplace('addcdiv_ float64', 'addcdiv_', normal([3], dtype='float64', decimals=6), [normal([3], dtype='float64', decimals=6), uniform([3], 0.5, 2.0, dtype='float64', decimals=6), 0.3],
            lambda tensor, t1, t2, value: tensor.addcdiv_(t1, t2, value=value))

    group('toString')
    string('integer-valued floats with a wide range', literal([1.0, 2000.0]))
    string('negative zero integer-valued', literal([-0.0, 1.0]))
    string('negative zero with decimals', literal([-0.0, 1.5]))
    string('ties round half to even', literal([0.03125, 2.5]))
    string('scientific ties round half to even', literal([1e-5, 149.625]))
    string('all zeros', literal([0.0, 0.0]))
    string('mixed signs pad to the widest', literal([2.5, -3.5, 0.125]))
    string('0-dim scientific', literal(1e-5))
    string('0-dim nan', literal(math.nan))
    string('nan only', literal([math.nan]))
    string('integer-valued 1e8 boundary', literal([1e8, 1.0]))
    string('large non-integer', literal([123456789.0, 1.0]))
    string('small value forces scientific', literal([0.00012345, 0.5]))
    string('1e-4 with 0.5 is a wide range', literal([1e-4, 0.5]))
    string('large with a fraction', literal([100000.5, 1.5]))
    string('empty bool', literal([], 'bool'))
    string('empty int32 2-d', Input(torch.zeros(0, 3, dtype=torch.int32)))
    string('empty 3-d', Input(torch.zeros(2, 0, 3)))
    string('transposed 2-d view', transposed([2, 3], decimals=4))
    string('stepped int64 view', Input(torch.arange(12).reshape(3, 4)).then('slice', 1, 0, None, 2))


def x3_input():
    return normal([2, 3, 4])

# ---------------------------------------------------------------------------------------
# Printing

def string_cases():
    group('toString')
    string('int64 1-d', literal([0, 1, 2, 3, 4]))
    string('int64 negative with padding', literal([-100, 5, 20]))
    string('float needing 4 decimals', literal([1.5, 2.25, -3.125]))
    string('float rounding at 4 decimals', literal([0.12345, 1.0 / 3, 2.0 / 3]))
    string('integer-valued floats', literal([1.0, 2.0, 3.0]))
    string('integer-valued negative floats 2-d', literal([[-1.0, 20.0], [300.0, -4.0]]))
    string('scientific wide range', literal([1e-5, 1.0, 1000.0]))
    string('scientific large values', literal([1e9, 2.0]))
    string('scientific tiny values', literal([1e-5, 2e-5, -3e-5]))
    string('scientific integer-valued large', literal([1e10, 1.0]))
    string('negative floats 2-d', literal([[-1.5, 2.25], [3.0, -4.0]]))
    string('float64 suffix', literal([1.5, 2.25], 'float64'))
    string('float64 integer-valued', literal([1.0, -2.0], 'float64'))
    string('float16 suffix', literal([0.5, -1.25, 3.0], 'float16'))
    string('bfloat16 suffix', literal([0.5, -1.25, 3.0], 'bfloat16'))
    string('bool', literal([True, False, True], 'bool'))
    string('bool 2-d', literal([[True, False], [False, True]], 'bool'))
    string('int32 suffix', literal([1, -2, 3], 'int32'))
    string('uint8 suffix', literal([0, 128, 255], 'uint8'))
    string('0-dim float', literal(3.14159))
    string('0-dim int64', literal(5))
    string('0-dim bool', literal(True, 'bool'))
    string('0-dim float64', literal(-0.5, 'float64'))
    string('empty 1-d', literal([], 'float32'))
    string('empty int64', Input(torch.zeros(0, dtype=torch.long)))
    string('empty 2-d', Input(torch.zeros(2, 0)))
    string('empty float64', Input(torch.zeros(0, dtype=torch.float64)))
    string('nan and inf', literal([math.nan, math.inf, -math.inf, 1.5]))
    string('nan and inf with integers', literal([math.nan, 1.0, -math.inf, 2.0]))
    string('float 2-d', normal([3, 4], decimals=4))
    string('float 3-d', normal([2, 3, 4], decimals=4))
    string('int64 3-d', integers([2, 3, 4], -50, 50))
    string('summarised 1-d over 1000 elements', Input(torch.arange(1200, dtype=torch.float32) / 8))
    string('summarised 2-d', Input(torch.arange(1600, dtype=torch.int64).reshape(40, 40)))
    string('summarised 3-d', Input(torch.arange(1331, dtype=torch.float32).reshape(11, 11, 11) - 600))
    string('long 1-d float wraps at 80 columns', normal([30], decimals=4))
    string('long 1-d int wraps at 80 columns', Input(torch.arange(50, dtype=torch.int64) * 7 - 100))
    string('long rows in 2-d wrap', normal([2, 20], decimals=4))
    string('long bool row wraps', booleans([24]))


# ---------------------------------------------------------------------------------------
# Random numbers

def random_cases():
    for name, op, args, reference in [
        ('rand [5] after manualSeed(7)', 'rand', [[5]], lambda: torch.rand(5)),
        ('randn [2,3] after manualSeed(7)', 'randn', [[2, 3]], lambda: torch.randn(2, 3)),
        ('randint 0..10 [6] after manualSeed(7)', 'randint', [0, 10, [6]], lambda: torch.randint(0, 10, (6,))),
    ]:
        torch.manual_seed(7)
        RANDOM.append({'name': name, 'seed': 7, 'op': op, 'args': args, 'expected': encode_tensor(reference())})


# ---------------------------------------------------------------------------------------

def write_fixtures():
    creation_cases()
    elementwise_cases()
    reduction_cases()
    linalg_cases()
    shape_cases()
    inplace_cases()
    string_cases()
    corner_cases()
    random_cases()

    def dump(value):
        return json.dumps(value, allow_nan=False, separators=(',', ':'))

    def section(name, items):
        return f'"{name}":[\n' + ',\n'.join(dump(item) for item in items) + '\n]'

    meta = {'torch': torch.__version__, 'seed': SEED, 'generator': 'scripts/make-goldens.py',
            'regenerate': 'pnpm --filter @flodl/tensor-native run goldens'}
    text = '{"meta":' + dump(meta) + ',\n' + ',\n'.join([section('cases', CASES), section('strings', STRINGS), section('random', RANDOM)]) + '}\n'
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, 'w', encoding='utf-8') as file:
        file.write(text)
    for line in SKIPPED:
        print(f'skipped (PyTorch has no kernel): {line}')
    print(f'wrote {os.path.relpath(OUTPUT)}: {len(CASES)} cases, {len(STRINGS)} strings, {len(RANDOM)} random, {len(text) / 1024:.0f} KiB')


if __name__ == '__main__':
    warnings.filterwarnings('ignore', message='scatter_reduce')
    torch.set_num_threads(1)
    write_fixtures()
