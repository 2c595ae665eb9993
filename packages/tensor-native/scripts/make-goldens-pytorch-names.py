#!/usr/bin/python3
"""Golden fixtures for the PyTorch names of @flodl/tensor-native: `T`, `mT`, `tolist()` and the
options forms of the reductions (`x.mean(dim=1, keepdim=True)` as `x.mean({ dim: 1, keepdim: true })`).

Writes test/fixtures/pytorch-names.json, which test/pytorch-names.test.ts replays (the test needs
no Python). Regenerate with `pnpm --filter @flodl/tensor-native run goldens` (it runs every
scripts/make-goldens*.py with Debian's /usr/bin/python3), or from packages/tensor-native:

    /usr/bin/python3 scripts/make-goldens-pytorch-names.py

The cases share make-goldens.py's builders and format (read its docstring), in these sections:

  cases: as goldens.json's cases; an options object is a JSON object argument.
  views: [{name, op, self, expected, gradOutput, grad}]: `self.op` read as a property of a
    float64 leaf, then backward(gradOutput); grad is the leaf's gradient.
  lists: [{name, self, expected}]: expected is PyTorch's `self.tolist()` (non-finite numbers
    encoded as 'nan', 'inf', '-inf').
"""

import importlib.util
import json
import math
import os
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUT = os.path.join(HERE, '..', 'test', 'fixtures', 'pytorch-names.json')

# The builders and case registry of the main script, loaded as a module (its name has a dash).
spec = importlib.util.spec_from_file_location('make_goldens', os.path.join(HERE, 'make-goldens.py'))
goldens = importlib.util.module_from_spec(spec)
spec.loader.exec_module(goldens)
Input, Number, literal, normal, integers, booleans, eighths, transposed, stepped = (
    goldens.Input, goldens.Number, goldens.literal, goldens.normal, goldens.integers, goldens.booleans,
    goldens.eighths, goldens.transposed, goldens.stepped)
group, method, encode_tensor, encode_value = goldens.group, goldens.method, goldens.encode_tensor, goldens.encode_value

VIEWS = []
LISTS = []


def torch_keywords(options):
    """An options object as PyTorch's keywords: dtype names become torch dtypes, lists tuples."""
    out = {}
    for key, value in options.items():
        if key == 'dtype':
            out[key] = goldens.DTYPES[value]
        elif isinstance(value, list):
            out[key] = tuple(value)
        else:
            out[key] = value
    return out


def keyword(name, op, self_input, options, torch_name=None, tolerance=None, call=None):
    """self.op(options) in our API; PyTorch's self.op(**options)."""
    def reference(tensor, given):
        keywords = torch_keywords(given)
        if call is not None:
            return call(tensor, **keywords)
        return getattr(tensor, torch_name or op)(**keywords)
    method(name, op, self_input, [options], reference, tolerance)


# ---------------------------------------------------------------------------------------
# The options forms of the reductions

def reduction_keyword_cases():
    group('reduction keywords')
    x = normal([3, 4])
    x3 = normal([2, 3, 4])
    x64 = normal([3, 4], dtype='float64', decimals=6)
    ints = integers([3, 4])
    flags = booleans([3, 4])
    small = goldens.uniform([3, 4], 0.5, 1.5)

    for op in ['sum', 'mean']:
        keyword(f'{op} dim 1 keepdim', op, x, {'dim': 1, 'keepdim': True})
        keyword(f'{op} dims [0,2]', op, x3, {'dim': [0, 2]})
        keyword(f'{op} dim -1', op, x3, {'dim': -1})
        keyword(f'{op} dtype float64', op, x, {'dtype': 'float64'})
        keyword(f'{op} dim 0 dtype float64', op, x, {'dim': 0, 'dtype': 'float64'})
        # PyTorch 1.13 takes keepdim only with a dim: every dim, listed, is what dim=None means.
        keyword(f'{op} keepdim without dim keeps every dim', op, x3, {'keepdim': True},
                call=lambda tensor, op=op, **rest: getattr(tensor, op)(dim=tuple(range(tensor.ndim)), **rest))
        keyword(f'{op} empty options', op, x, {})
        keyword(f'{op} transposed input', op, transposed([3, 4]), {'dim': 1, 'keepdim': True})
    keyword('sum int64', 'sum', ints, {'dim': 0})
    keyword('sum bool dtype int32', 'sum', flags, {'dim': 1, 'dtype': 'int32'})
    keyword('mean int64 dtype float32', 'mean', ints, {'dim': 1, 'dtype': 'float32'})

    keyword('prod dim 1 keepdim', 'prod', small, {'dim': 1, 'keepdim': True})
    keyword('prod all dtype float64', 'prod', small, {'dtype': 'float64'})
    keyword('prod int64 dim 0', 'prod', literal([[1, 2, 3], [-4, 5, 6]]), {'dim': 0})

    for op in ['max', 'min']:
        keyword(f'{op} dim 1', op, x, {'dim': 1})
        keyword(f'{op} dim 0 keepdim', op, x, {'dim': 0, 'keepdim': True})
        keyword(f'{op} dim -1 3-d', op, x3, {'dim': -1})
    for op in ['amax', 'amin']:
        keyword(f'{op} dims [0,2] keepdim', op, x3, {'dim': [0, 2], 'keepdim': True})
        keyword(f'{op} dim 1', op, x, {'dim': 1})
        keyword(f'{op} every dim by default', op, x3, {})
        keyword(f'{op} every dim keepdim', op, x3, {'keepdim': True})
    for op in ['argmax', 'argmin']:
        keyword(f'{op} dim 1', op, x, {'dim': 1})
        keyword(f'{op} dim 0 keepdim', op, x, {'dim': 0, 'keepdim': True})
        keyword(f'{op} flat', op, x, {})
        keyword(f'{op} flat keepdim', op, x, {'keepdim': True})

    for op in ['std', 'var']:
        keyword(f'{op} dim 1', op, x, {'dim': 1})
        keyword(f'{op} correction 0', op, x, {'dim': 0, 'correction': 0})
        keyword(f'{op} correction 2 dims [0,2] keepdim', op, x3, {'dim': [0, 2], 'correction': 2, 'keepdim': True})
        keyword(f'{op} unbiased false', op, x, {'dim': 1, 'unbiased': False})
        # PyTorch 1.13's parser wants dim given, as None, beside correction or keepdim.
        every = (lambda tensor, op=op, **rest: getattr(tensor, op)(dim=None, **rest))
        keyword(f'{op} all', op, x, {}, call=every)
        keyword(f'{op} all keepdim', op, x3, {'keepdim': True}, call=every)
        keyword(f'{op} all correction 0', op, x, {'correction': 0}, call=every)
        keyword(f'{op} float64 unbiased true', op, x64, {'dim': -1, 'unbiased': True})

    def vector_norm(tensor, p=2, dim=None, keepdim=False, dtype=None):
        return torch.linalg.vector_norm(tensor, p, dim, keepdim, dtype=dtype)

    keyword('norm default', 'norm', x, {}, call=vector_norm)
    keyword('norm p 1 dim 1', 'norm', x, {'p': 1, 'dim': 1}, call=vector_norm)
    keyword('norm p Infinity dims [1,2] keepdim', 'norm', x3, {'p': Number(math.inf), 'dim': [1, 2], 'keepdim': True},
            call=lambda tensor, p, **rest: vector_norm(tensor, p, **rest))
    keyword('norm keepdim without dim', 'norm', x3, {'keepdim': True}, call=vector_norm)
    keyword('norm dtype float64', 'norm', x, {'dim': 0, 'dtype': 'float64'}, call=vector_norm)
    keyword('norm p 3 float64', 'norm', x64, {'p': 3, 'dim': 1}, call=vector_norm)

    keyword('logsumexp dim 1', 'logsumexp', x, {'dim': 1})
    keyword('logsumexp dims [0,1] keepdim', 'logsumexp', x3, {'dim': [0, 1], 'keepdim': True})

    keyword('softmax dim 1', 'softmax', x, {'dim': 1})
    keyword('softmax dim 0 dtype float64', 'softmax', x, {'dim': 0, 'dtype': 'float64'})
    keyword('logSoftmax dim -1', 'logSoftmax', x3, {'dim': -1}, torch_name='log_softmax')
    keyword('cumsum dim 1', 'cumsum', x, {'dim': 1})
    keyword('cumsum int64 dtype float64', 'cumsum', ints, {'dim': 0, 'dtype': 'float64'})
    keyword('cumprod dim 0', 'cumprod', small, {'dim': 0})

    for op in ['all', 'any']:
        keyword(f'{op} dim 1', op, flags, {'dim': 1})
        keyword(f'{op} dim 0 keepdim', op, flags, {'dim': 0, 'keepdim': True})
        keyword(f'{op} everything', op, flags, {}, call=lambda tensor, op=op: getattr(tensor, op)())

    count = literal([[0.0, 1.0, 2.0], [0.0, 0.0, -3.0]])
    keyword('countNonzero dim 0', 'countNonzero', count, {'dim': 0}, call=torch.count_nonzero)
    keyword('countNonzero dims [0,1]', 'countNonzero', count, {'dim': [0, 1]}, call=torch.count_nonzero)
    keyword('countNonzero everything', 'countNonzero', count, {}, call=torch.count_nonzero)


# ---------------------------------------------------------------------------------------
# T and mT, with their gradients

def view(name, op, self_input):
    leaf = self_input.torch().double().detach().requires_grad_(True)
    result = getattr(leaf, op)
    grad_output = torch.arange(result.numel(), dtype=torch.float64).reshape(result.shape) - 1.5
    result.backward(grad_output)
    VIEWS.append({'name': name, 'op': op, 'self': Input(leaf.detach()).encode(), 'expected': encode_tensor(result),
                  'gradOutput': encode_tensor(grad_output), 'grad': encode_tensor(leaf.grad)})


def view_cases():
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')  # T on neither 0-d nor 2-d: PyTorch's deprecation warning
        view('T 2-d', 'T', normal([2, 3]))
        view('T 0-d', 'T', literal(1.5))
        view('T 1-d', 'T', normal([4]))
        view('T 3-d reverses every dim', 'T', normal([2, 3, 4]))
        view('T 4-d', 'T', normal([2, 1, 3, 2]))
        view('mT 2-d', 'mT', normal([2, 3]))
        view('mT 3-d batch', 'mT', normal([4, 2, 3]))
        view('mT 4-d', 'mT', normal([2, 2, 3, 1]))
    # Values and dtypes of non-float inputs (no gradient): T and mT as cases through a method twin.
    for name, tensor in [('int64', integers([2, 3])), ('bool', booleans([3, 2])), ('float16', eighths([2, 3], 'float16'))]:
        VIEWS.append({'name': f'T {name}', 'op': 'T', 'self': tensor.encode(), 'expected': encode_tensor(tensor.torch().T)})
        VIEWS.append({'name': f'mT {name} transposed input', 'op': 'mT', 'self': tensor.then('transpose', 0, 1).encode(),
                      'expected': encode_tensor(tensor.then('transpose', 0, 1).torch().mT)})


# ---------------------------------------------------------------------------------------
# tolist()

def encode_list(value):
    if isinstance(value, list):
        return [encode_list(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return goldens.encode_number(value)
    return value


def listed(name, self_input):
    LISTS.append({'name': name, 'self': self_input.encode(), 'expected': encode_list(self_input.torch().tolist())})


def list_cases():
    listed('float32 2-d', normal([2, 3]))
    listed('float64 3-d', normal([2, 2, 3], dtype='float64', decimals=6))
    listed('float16', eighths([2, 3], 'float16'))
    listed('bfloat16', eighths([3], 'bfloat16'))
    listed('int64', integers([2, 4]))
    listed('int64 large (exact below 2^53)', literal([2 ** 53, -(2 ** 53), 123456789012345]))
    listed('int32', integers([3], dtype='int32'))
    listed('uint8', literal([0, 7, 255], 'uint8'))
    listed('bool 2-d', booleans([2, 3]))
    listed('0-d float', literal(2.5))
    listed('0-d int64', literal(7))
    listed('0-d bool', literal(True, 'bool'))
    listed('empty 1-d', literal([], 'float32'))
    listed('empty 2-d', Input(torch.zeros(2, 0)))
    listed('non-finite', literal([math.nan, math.inf, -math.inf, 0.5]))
    listed('transposed view', transposed([3, 4]))
    listed('stepped view', stepped([2, 3], 1))
    listed('expanded view', normal([1, 3]).then('expand', [2, 3]))
    listed('selected row', normal([3, 4]).then('select', 0, 1))


def write_fixtures():
    reduction_keyword_cases()
    view_cases()
    list_cases()

    def dump(value):
        return json.dumps(value, allow_nan=False, separators=(',', ':'))

    def section(name, items):
        return f'"{name}":[\n' + ',\n'.join(dump(item) for item in items) + '\n]'

    meta = {'torch': torch.__version__, 'seed': goldens.SEED, 'generator': 'scripts/make-goldens-pytorch-names.py',
            'regenerate': 'pnpm --filter @flodl/tensor-native run goldens'}
    text = '{"meta":' + dump(meta) + ',\n' + ',\n'.join(
        [section('cases', goldens.CASES), section('views', VIEWS), section('lists', LISTS)]) + '}\n'
    with open(OUTPUT, 'w', encoding='utf-8') as file:
        file.write(text)
    print(f'wrote {os.path.relpath(OUTPUT)}: {len(goldens.CASES)} cases, {len(VIEWS)} views, {len(LISTS)} lists, {len(text) / 1024:.0f} KiB')


if __name__ == '__main__':
    torch.set_num_threads(1)
    write_fixtures()
