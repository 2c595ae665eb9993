#!/usr/bin/python3
"""Golden fixtures for the recurrent, attention and loss ops of @flodl/autograd's functional layer.

Writes test/fixtures/rnn-loss.json, which test/functional-rnn-loss.test.ts replays against
our functional API (the test needs no Python).

Regenerate from the repository root with

    pnpm --filter @flodl/autograd run goldens

which runs every scripts/make-*.py of the package; this one alone, in packages/autograd:

    /usr/bin/python3 scripts/make-goldens-rnn-loss.py

Use Debian's PyTorch at /usr/bin/python3 (python3-torch 1.13.1, CPU): the same libtorch the
addon links against, so seeded dropout draws the same masks. Plain `python3` may have no torch.
Inputs come from a fixed seed, so reruns give the same file.

Each case calls one function of our API, described once here: `op` and `args` as our TS API
takes them (tensors positional, options in one trailing camelCase object). REFERENCE below
computes the same thing with PyTorch (1.13 has no public scaled_dot_product_attention, so its
reference is PyTorch 2.x's documented math).

The fixture format (JSON):

  meta: {torch, seed, regenerate}
  cases: [{group, name, op, tensors, args, seed?, grad, outputs, probes, grads, atol, rtol}]
    tensors: {name: T}, the leaves; args refer to them as {"$ref": name}. null stands for an
      omitted argument (undefined), arrays and option objects are decoded element by element.
    seed: when present, torch.manual_seed(seed) / manualSeed(seed) just before the call.
    outputs: {name: T}: the fields of the result object, or {"result": T} for a Tensor result.
    probes: {name: T}: a fixed random R per floating output; the scalar whose gradients are
      recorded is the sum over outputs of (output * R).sum().
    grad: the names of the leaves that require grad; grads: {name: T}, their gradients.
    T (a tensor): {data, shape, dtype}: data flat in row-major order, non-finite floats as
      "nan", "inf", "-inf", bools as true/false.
    atol, rtol: |actual - expected| <= atol + rtol * |expected| for floating values; integer
      and bool values must match exactly.
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
OUTPUT = os.path.join(HERE, '..', 'test', 'fixtures', 'rnn-loss.json')

DTYPE_NAMES = {torch.float32: 'float32', torch.float64: 'float64', torch.int32: 'int32', torch.int64: 'int64',
               torch.bool: 'bool'}
TOLERANCES = {torch.float64: (1e-10, 1e-9), torch.float32: (1e-5, 1e-4)}

generator = torch.Generator().manual_seed(SEED)

# Cases that choose what PyTorch warns about: a broadcast target, kl_div's 'mean'.
warnings.filterwarnings('ignore', message='Using a target size')
warnings.filterwarnings('ignore', message="reduction: 'mean' divides the total loss")


# ---------------------------------------------------------------------------------------
# Tensors in JSON and the inputs of cases

def encode_tensor(tensor):
    tensor = tensor.detach().contiguous()
    return {'data': [encode_number(value) for value in tensor.flatten().tolist()], 'shape': list(tensor.shape),
            'dtype': DTYPE_NAMES[tensor.dtype]}


def randn(*shape, dtype=torch.float64):
    return torch.randn(tuple(shape), generator=generator, dtype=torch.float64).to(dtype)


def rand(*shape, dtype=torch.float64):
    return torch.rand(tuple(shape), generator=generator, dtype=torch.float64).to(dtype)


def randint(low, high, *shape, dtype=torch.int64):
    return torch.randint(low, high, shape, generator=generator).to(dtype)


class Ref:
    """A tensor argument: a leaf of the case, by name."""

    def __init__(self, name):
        self.name = name


def encode_argument(argument):
    if isinstance(argument, Ref):
        return {'$ref': argument.name}
    if argument is None:
        return None
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

def reduction_of(options, default='mean'):
    return options.get('reduction', default)


def recurrent(mode, input, state, params, hasBiases=True, numLayers=1, dropout=0.0, training=True,
              bidirectional=False, batchFirst=False):
    unbatched = input.dim() == 2
    if unbatched:
        input = input.unsqueeze(0 if batchFirst else 1)
    directions = 2 if bidirectional else 1
    hidden = params[1].shape[1]
    batch = input.shape[0 if batchFirst else 1]
    if state is None:
        zeros = torch.zeros(numLayers * directions, batch, hidden, dtype=input.dtype)
        state = zeros if mode == 'gru' else (zeros, zeros)
    elif unbatched:
        state = state.unsqueeze(1) if mode == 'gru' else tuple(part.unsqueeze(1) for part in state)
    run = torch._VF.gru if mode == 'gru' else torch._VF.lstm
    results = run(input, state, params, hasBiases, numLayers, float(dropout), training, bidirectional, batchFirst)
    if unbatched:
        results = (results[0].squeeze(0 if batchFirst else 1),) + tuple(part.squeeze(1) for part in results[1:])
    return dict(zip(['output', 'hN', 'cN'], results))


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    unbatched = input.dim() == 1
    if hx is None:
        hx = torch.zeros(*input.shape[:-1], w_hh.shape[1], dtype=input.dtype)
    if unbatched:
        return torch.gru_cell(input.unsqueeze(0), hx.unsqueeze(0), w_ih, w_hh, b_ih, b_hh).squeeze(0)
    return torch.gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh)


def lstm_cell(input, state, w_ih, w_hh, b_ih=None, b_hh=None):
    unbatched = input.dim() == 1
    if state is None:
        zeros = torch.zeros(*input.shape[:-1], w_hh.shape[1], dtype=input.dtype)
        state = (zeros, zeros)
    if unbatched:
        h, c = torch.lstm_cell(input.unsqueeze(0), [part.unsqueeze(0) for part in state], w_ih, w_hh, b_ih, b_hh)
        return {'h': h.squeeze(0), 'c': c.squeeze(0)}
    h, c = torch.lstm_cell(input, list(state), w_ih, w_hh, b_ih, b_hh)
    return {'h': h, 'c': c}


def attention(query, key, value, attnMask=None, dropoutP=0.0, isCausal=False, scale=None):
    """torch.nn.functional.scaled_dot_product_attention's documented math (PyTorch 2.x)."""
    factor = 1 / math.sqrt(query.size(-1)) if scale is None else scale
    scores = torch.matmul(query, key.transpose(-2, -1)) * factor
    if isCausal:
        allowed = torch.ones(query.size(-2), key.size(-2), dtype=torch.bool).tril()
        scores = scores.masked_fill(allowed.logical_not(), float('-inf'))
    if attnMask is not None:
        if attnMask.dtype == torch.bool:
            scores = scores.masked_fill(attnMask.logical_not(), float('-inf'))
        else:
            scores = scores + attnMask
    weights = torch.softmax(scores, dim=-1)
    if dropoutP > 0:
        weights = torch.dropout(weights, dropoutP, True)
    return torch.matmul(weights, value)


REFERENCE = {
    'gru': lambda input, hx, params, options={}: recurrent('gru', input, hx, params, **options),
    'lstm': lambda input, state, params, options={}: recurrent('lstm', input, state, params, **options),
    'gruCell': gru_cell,
    'lstmCell': lstm_cell,
    'scaledDotProductAttention': lambda q, k, v, options={}: attention(q, k, v, **options),
    'mseLoss': lambda x, y, o={}: F.mse_loss(x, y, reduction=reduction_of(o)),
    'l1Loss': lambda x, y, o={}: F.l1_loss(x, y, reduction=reduction_of(o)),
    'smoothL1Loss': lambda x, y, o={}: F.smooth_l1_loss(x, y, reduction=reduction_of(o), beta=o.get('beta', 1.0)),
    'huberLoss': lambda x, y, o={}: F.huber_loss(x, y, reduction=reduction_of(o), delta=o.get('delta', 1.0)),
    'crossEntropy': lambda x, y, o={}: F.cross_entropy(
        x, y, weight=o.get('weight'), ignore_index=o.get('ignoreIndex', -100), reduction=reduction_of(o),
        label_smoothing=o.get('labelSmoothing', 0.0)),
    'nllLoss': lambda x, y, o={}: F.nll_loss(
        x, y, weight=o.get('weight'), ignore_index=o.get('ignoreIndex', -100), reduction=reduction_of(o)),
    'binaryCrossEntropy': lambda x, y, o={}: F.binary_cross_entropy(
        x, y, weight=o.get('weight'), reduction=reduction_of(o)),
    'binaryCrossEntropyWithLogits': lambda x, y, o={}: F.binary_cross_entropy_with_logits(
        x, y, weight=o.get('weight'), pos_weight=o.get('posWeight'), reduction=reduction_of(o)),
    'klDiv': lambda x, y, o={}: F.kl_div(x, y, reduction=reduction_of(o), log_target=o.get('logTarget', False)),
    'cosineEmbeddingLoss': lambda a, b, y, o={}: F.cosine_embedding_loss(
        a, b, y, margin=o.get('margin', 0.0), reduction=reduction_of(o)),
    'marginRankingLoss': lambda a, b, y, o={}: F.margin_ranking_loss(
        a, b, y, margin=o.get('margin', 0.0), reduction=reduction_of(o)),
    'tripletMarginLoss': lambda a, p, n, o={}: F.triplet_margin_loss(
        a, p, n, margin=o.get('margin', 1.0), p=o.get('p', 2), eps=o.get('eps', 1e-6), swap=o.get('swap', False),
        reduction=reduction_of(o)),
    'ctcLoss': lambda lp, t, il, tl, o={}: F.ctc_loss(
        lp, t, il, tl, blank=o.get('blank', 0), reduction=reduction_of(o), zero_infinity=o.get('zeroInfinity', False)),
    'poissonNllLoss': lambda x, y, o={}: F.poisson_nll_loss(
        x, y, log_input=o.get('logInput', True), full=o.get('full', False), eps=o.get('eps', 1e-8),
        reduction=reduction_of(o)),
}


# ---------------------------------------------------------------------------------------
# Cases

cases = []


def case(group, name, op, tensors, args, no_grad=(), seed=None):
    """Runs op on the tensors, records outputs and the gradients of sum((output * R).sum())."""
    leaves = {}
    for key, tensor in tensors.items():
        leaf = tensor.detach().clone()
        if leaf.is_floating_point() and key not in no_grad:
            leaf.requires_grad_(True)
        leaves[key] = leaf
    if seed is not None:
        torch.manual_seed(seed)
    result = REFERENCE[op](*materialize(args, leaves))
    outputs = result if isinstance(result, dict) else {'result': result}
    probes = {key: randn(*value.shape, dtype=value.dtype) for key, value in outputs.items()
              if value.is_floating_point()}
    grad_names = [key for key, leaf in leaves.items() if leaf.requires_grad]
    scalar = sum((outputs[key] * probe).sum() for key, probe in probes.items())
    grads = torch.autograd.grad(scalar, [leaves[key] for key in grad_names])
    dtype = next(iter(outputs.values())).dtype
    atol, rtol = TOLERANCES[dtype]
    entry = {
        'group': group,
        'name': name,
        'op': op,
        'tensors': {key: encode_tensor(tensor) for key, tensor in tensors.items()},
        'args': encode_argument(args),
        'grad': grad_names,
        'outputs': {key: encode_tensor(value) for key, value in outputs.items()},
        'probes': {key: encode_tensor(value) for key, value in probes.items()},
        'grads': {key: encode_tensor(value) for key, value in zip(grad_names, grads)},
        'atol': atol,
        'rtol': rtol,
    }
    if seed is not None:
        entry['seed'] = seed
    cases.append(entry)


def flat_weights(gates, input_size, hidden, layers=1, bidirectional=False, biases=True, dtype=torch.float64):
    """PyTorch's flat weight list, named as nn.GRU / nn.LSTM name them."""
    weights = {}
    directions = 2 if bidirectional else 1
    for layer in range(layers):
        for direction in range(directions):
            suffix = f'_l{layer}' + ('_reverse' if direction == 1 else '')
            width = input_size if layer == 0 else directions * hidden
            weights['w_ih' + suffix] = randn(gates * hidden, width, dtype=dtype) * 0.5
            weights['w_hh' + suffix] = randn(gates * hidden, hidden, dtype=dtype) * 0.5
            if biases:
                weights['b_ih' + suffix] = randn(gates * hidden, dtype=dtype) * 0.5
                weights['b_hh' + suffix] = randn(gates * hidden, dtype=dtype) * 0.5
    return weights


def recurrent_case(mode, name, shape, hidden=3, layers=1, bidirectional=False, biases=True, state=False,
                   options=None, dtype=torch.float64, seed=None):
    gates = 3 if mode == 'gru' else 4
    weights = flat_weights(gates, shape[-1], hidden, layers, bidirectional, biases, dtype)
    options = dict(options or {})
    if layers != 1:
        options['numLayers'] = layers
    if bidirectional:
        options['bidirectional'] = True
    if not biases:
        options['hasBiases'] = False
    batch_first = options.get('batchFirst', False)
    tensors = {'input': randn(*shape, dtype=dtype)}
    state_shape = [layers * (2 if bidirectional else 1)]
    if len(shape) == 3:
        state_shape.append(shape[0] if batch_first else shape[1])
    state_shape.append(hidden)
    initial = None
    if state:
        tensors['h0'] = randn(*state_shape, dtype=dtype)
        initial = Ref('h0')
        if mode == 'lstm':
            tensors['c0'] = randn(*state_shape, dtype=dtype)
            initial = [Ref('h0'), Ref('c0')]
    tensors.update(weights)
    args = [Ref('input'), initial, [Ref(key) for key in weights]]
    if options:
        args.append(options)
    case('recurrent', f'{mode} {name}', mode, tensors, args, seed=seed)


def recurrent_cases():
    for mode in ('gru', 'lstm'):
        recurrent_case(mode, 'defaults, zero state', [4, 2, 3])
        recurrent_case(mode, '2 layers bidirectional batchFirst with initial state', [2, 4, 3], layers=2,
                       bidirectional=True, state=True, options={'batchFirst': True})
        recurrent_case(mode, 'unbatched without biases with initial state', [5, 3], biases=False, state=True)
        recurrent_case(mode, 'unbatched batchFirst bidirectional, zero state', [4, 2], bidirectional=True,
                       options={'batchFirst': True})
        recurrent_case(mode, 'float32', [3, 2, 4], state=True, dtype=torch.float32)
        recurrent_case(mode, '2 layers dropout 0.5 not training', [3, 2, 3], layers=2,
                       options={'dropout': 0.5, 'training': False})
        recurrent_case(mode, '2 layers dropout 0.5 training, seeded', [3, 2, 3], layers=2, hidden=4,
                       options={'dropout': 0.5, 'training': True}, seed=7)


def cell_case(mode, name, batch, input_size=3, hidden=4, state=True, biases=True):
    gates = 3 if mode == 'gruCell' else 4
    shape = [batch] if batch is not None else []
    tensors = {'input': randn(*shape, input_size)}
    initial = None
    if state:
        tensors['hx'] = randn(*shape, hidden)
        initial = Ref('hx')
        if mode == 'lstmCell':
            tensors['cx'] = randn(*shape, hidden)
            initial = [Ref('hx'), Ref('cx')]
    tensors['wIh'] = randn(gates * hidden, input_size) * 0.5
    tensors['wHh'] = randn(gates * hidden, hidden) * 0.5
    args = [Ref('input'), initial, Ref('wIh'), Ref('wHh')]
    if biases:
        tensors['bIh'] = randn(gates * hidden) * 0.5
        tensors['bHh'] = randn(gates * hidden) * 0.5
        args += [Ref('bIh'), Ref('bHh')]
    case('recurrent', f'{mode} {name}', mode, tensors, args)


def cell_cases():
    for mode in ('gruCell', 'lstmCell'):
        cell_case(mode, 'batched with state and biases', 3)
        cell_case(mode, 'zero state without biases', 2, state=False, biases=False)
        cell_case(mode, 'unbatched with state', None)
        cell_case(mode, 'unbatched zero state', None, state=False)


def attention_cases():
    def run(name, shapes, options=None, seed=None, mask=None):
        tensors = {'query': randn(*shapes[0]), 'key': randn(*shapes[1]), 'value': randn(*shapes[2])}
        options = dict(options or {})
        no_grad = ()
        if mask is not None:
            tensors['attnMask'] = mask
            options['attnMask'] = Ref('attnMask')
            no_grad = ('attnMask',)
        args = [Ref('query'), Ref('key'), Ref('value')] + ([options] if options else [])
        case('attention', f'scaledDotProductAttention {name}', 'scaledDotProductAttention', tensors, args,
             no_grad=no_grad, seed=seed)

    run('3-d, L != S, E_v != E', [[2, 3, 4], [2, 5, 4], [2, 5, 6]])
    run('4-d causal, L = S', [[2, 2, 4, 3], [2, 2, 4, 3], [2, 2, 4, 3]], {'isCausal': True})
    run('causal, L < S (top-left aligned)', [[1, 3, 4], [1, 5, 4], [1, 5, 2]], {'isCausal': True})
    bool_mask = rand(3, 5) > 0.4
    bool_mask[:, 0] = True  # no fully blocked row
    run('bool mask broadcast over batch and heads', [[2, 2, 3, 4], [2, 2, 5, 4], [2, 2, 5, 3]], mask=bool_mask)
    float_mask = randn(2, 1, 3, 5)
    float_mask[0, 0, 1, 2] = float('-inf')
    float_mask[1, 0, 2, 4] = float('-inf')
    run('additive float mask with -inf', [[2, 2, 3, 4], [2, 2, 5, 4], [2, 2, 5, 3]], mask=float_mask)
    run('explicit scale', [[2, 3, 4], [2, 3, 4], [2, 3, 4]], {'scale': 0.3})
    run('dropout 0.3, seeded', [[2, 4, 3], [2, 4, 3], [2, 4, 3]], {'dropoutP': 0.3}, seed=11)


def loss_case(name, op, tensors, options=None, positional=2, no_grad=()):
    args = [Ref(key) for key in list(tensors)[:positional]]
    if options is not None:
        args.append({key: Ref(value[1:]) if isinstance(value, str) and value.startswith('@') else value
                     for key, value in options.items()})
    case('loss', f'{op} {name}', op, tensors, args, no_grad=no_grad)


def regression_cases():
    for reduction in ('none', 'mean', 'sum'):
        loss_case(reduction, 'mseLoss', {'input': randn(3, 4), 'target': randn(3, 4)}, {'reduction': reduction})
    loss_case('default reduction', 'mseLoss', {'input': randn(5), 'target': randn(5)})
    loss_case('broadcast target, sum', 'mseLoss', {'input': randn(3, 4), 'target': randn(1, 4)},
              {'reduction': 'sum'})
    loss_case('none', 'l1Loss', {'input': randn(2, 3), 'target': randn(2, 3)}, {'reduction': 'none'})
    loss_case('mean', 'l1Loss', {'input': randn(2, 3), 'target': randn(2, 3)})
    loss_case('beta 0.5', 'smoothL1Loss', {'input': randn(3, 4), 'target': randn(3, 4)}, {'beta': 0.5})
    loss_case('beta 0 (L1), none', 'smoothL1Loss', {'input': randn(2, 3), 'target': randn(2, 3)},
              {'beta': 0, 'reduction': 'none'})
    loss_case('default beta, sum', 'smoothL1Loss', {'input': randn(2, 3) * 2, 'target': randn(2, 3)},
              {'reduction': 'sum'})
    loss_case('delta 0.7, none', 'huberLoss', {'input': randn(3, 4), 'target': randn(3, 4)},
              {'delta': 0.7, 'reduction': 'none'})
    loss_case('delta 2, sum', 'huberLoss', {'input': randn(3, 4) * 2, 'target': randn(3, 4)},
              {'delta': 2, 'reduction': 'sum'})
    loss_case('default delta, mean', 'huberLoss', {'input': randn(6) * 2, 'target': randn(6)})
    loss_case('log input', 'poissonNllLoss', {'input': randn(3, 4), 'target': rand(3, 4) * 4})
    loss_case('rates, full, sum', 'poissonNllLoss', {'input': rand(3, 4) + 0.1, 'target': rand(3, 4) * 4},
              {'logInput': False, 'full': True, 'reduction': 'sum'})
    loss_case('rates, eps 0.1, none', 'poissonNllLoss', {'input': rand(2, 3), 'target': rand(2, 3) * 3},
              {'logInput': False, 'eps': 0.1, 'reduction': 'none'})


def classification_cases():
    targets = torch.tensor([1, 0, 3, 2, 1])
    loss_case('class indices', 'crossEntropy', {'input': randn(5, 4), 'target': targets})
    loss_case('class weights, ignoreIndex, mean', 'crossEntropy',
              {'input': randn(5, 4), 'target': torch.tensor([1, 0, 3, 0, 2]), 'weight': rand(4) + 0.5},
              {'weight': '@weight', 'ignoreIndex': 0}, no_grad=('weight',))
    loss_case('label smoothing and weights, sum', 'crossEntropy',
              {'input': randn(5, 4), 'target': targets, 'weight': rand(4) + 0.5},
              {'weight': '@weight', 'labelSmoothing': 0.1, 'reduction': 'sum'}, no_grad=('weight',))
    loss_case('label smoothing, ignoreIndex, mean', 'crossEntropy',
              {'input': randn(5, 4), 'target': torch.tensor([1, -100, 3, 2, -100])}, {'labelSmoothing': 0.2})
    loss_case('K-dim input, ignoreIndex, none', 'crossEntropy',
              {'input': randn(2, 3, 2, 2), 'target': torch.tensor([[[0, 1], [2, 1]], [[1, 1], [0, 2]]])},
              {'ignoreIndex': 1, 'reduction': 'none'})
    loss_case('probability targets, label smoothing', 'crossEntropy',
              {'input': randn(3, 4), 'target': torch.softmax(randn(3, 4), 1)}, {'labelSmoothing': 0.2})
    loss_case('K-dim probability targets, weights, sum', 'crossEntropy',
              {'input': randn(2, 3, 4), 'target': torch.softmax(randn(2, 3, 4), 1), 'weight': rand(3) + 0.5},
              {'weight': '@weight', 'reduction': 'sum'}, no_grad=('weight',))
    loss_case('unbatched', 'crossEntropy', {'input': randn(4), 'target': torch.tensor(2)})
    log_probs = lambda *shape: torch.log_softmax(randn(*shape), 1)  # noqa: E731
    loss_case('mean', 'nllLoss', {'input': log_probs(5, 4), 'target': targets})
    loss_case('class weights, ignoreIndex, none', 'nllLoss',
              {'input': log_probs(5, 4), 'target': torch.tensor([3, 2, 3, 0, 1]), 'weight': rand(4) + 0.5},
              {'weight': '@weight', 'ignoreIndex': 3, 'reduction': 'none'}, no_grad=('weight',))
    loss_case('class weights, ignoreIndex, mean', 'nllLoss',
              {'input': log_probs(5, 4), 'target': torch.tensor([3, 2, 3, 0, 1]), 'weight': rand(4) + 0.5},
              {'weight': '@weight', 'ignoreIndex': 3}, no_grad=('weight',))
    loss_case('K-dim input, class weights, sum', 'nllLoss',
              {'input': log_probs(2, 3, 4), 'target': randint(0, 3, 2, 4), 'weight': rand(3) + 0.5},
              {'weight': '@weight', 'reduction': 'sum'}, no_grad=('weight',))
    probabilities = lambda *shape: torch.sigmoid(randn(*shape))  # noqa: E731
    # libtorch 1.13 has no gradient of binary_cross_entropy with respect to its target.
    loss_case('mean', 'binaryCrossEntropy', {'input': probabilities(3, 4), 'target': rand(3, 4)},
              no_grad=('target',))
    loss_case('weight broadcast, none', 'binaryCrossEntropy',
              {'input': probabilities(3, 4), 'target': rand(3, 4), 'weight': rand(4)},
              {'weight': '@weight', 'reduction': 'none'}, no_grad=('target', 'weight'))
    loss_case('sum', 'binaryCrossEntropy', {'input': probabilities(5), 'target': (rand(5) > 0.5).double()},
              {'reduction': 'sum'}, no_grad=('target',))
    loss_case('mean', 'binaryCrossEntropyWithLogits', {'input': randn(3, 4) * 3, 'target': rand(3, 4)})
    loss_case('posWeight and weight, sum', 'binaryCrossEntropyWithLogits',
              {'input': randn(3, 4) * 3, 'target': rand(3, 4), 'weight': rand(3, 1), 'posWeight': rand(4) * 3},
              {'weight': '@weight', 'posWeight': '@posWeight', 'reduction': 'sum'}, no_grad=('weight', 'posWeight'))
    loss_case('posWeight, none', 'binaryCrossEntropyWithLogits',
              {'input': randn(2, 3) * 3, 'target': (rand(2, 3) > 0.5).double(), 'posWeight': rand(3) * 3},
              {'posWeight': '@posWeight', 'reduction': 'none'}, no_grad=('posWeight',))
    for reduction in ('batchmean', 'mean', 'sum', 'none'):
        loss_case(reduction, 'klDiv', {'input': torch.log_softmax(randn(3, 4), 1), 'target': torch.softmax(randn(3, 4), 1)},
                  {'reduction': reduction})
    loss_case('logTarget, batchmean', 'klDiv',
              {'input': torch.log_softmax(randn(3, 4), 1), 'target': torch.log_softmax(randn(3, 4), 1)},
              {'reduction': 'batchmean', 'logTarget': True})
    loss_case('logTarget, none', 'klDiv',
              {'input': torch.log_softmax(randn(2, 3), 1), 'target': torch.log_softmax(randn(2, 3), 1)},
              {'reduction': 'none', 'logTarget': True})


def ranking_cases():
    signs = torch.tensor([1.0, -1.0, 1.0, -1.0], dtype=torch.float64)
    loss_case('margin 0.2', 'cosineEmbeddingLoss',
              {'input1': randn(4, 3), 'input2': randn(4, 3), 'target': signs}, {'margin': 0.2},
              positional=3, no_grad=('target',))
    loss_case('none', 'cosineEmbeddingLoss',
              {'input1': randn(4, 3), 'input2': randn(4, 3), 'target': torch.tensor([1, -1, -1, 1])},
              {'reduction': 'none', 'margin': -0.3}, positional=3)
    loss_case('unbatched, sum', 'cosineEmbeddingLoss',
              {'input1': randn(5), 'input2': randn(5), 'target': torch.tensor(-1.0, dtype=torch.float64)},
              {'reduction': 'sum'}, positional=3, no_grad=('target',))
    loss_case('margin 0.3, none', 'marginRankingLoss',
              {'input1': randn(5), 'input2': randn(5), 'target': torch.tensor([1.0, -1, 1, 1, -1], dtype=torch.float64)},
              {'margin': 0.3, 'reduction': 'none'}, positional=3, no_grad=('target',))
    loss_case('mean', 'marginRankingLoss',
              {'input1': randn(5), 'input2': randn(5), 'target': torch.tensor([1.0, -1, -1, 1, -1], dtype=torch.float64)},
              positional=3, no_grad=('target',))
    loss_case('sum', 'marginRankingLoss',
              {'input1': randn(4), 'input2': randn(4), 'target': torch.tensor([-1.0, -1, 1, 1], dtype=torch.float64)},
              {'reduction': 'sum', 'margin': 0.5}, positional=3, no_grad=('target',))
    loss_case('defaults', 'tripletMarginLoss', {'anchor': randn(4, 3), 'positive': randn(4, 3), 'negative': randn(4, 3)},
              positional=3)
    loss_case('swap, p 1, margin 0.5, none', 'tripletMarginLoss',
              {'anchor': randn(4, 3), 'positive': randn(4, 3), 'negative': randn(4, 3)},
              {'swap': True, 'p': 1, 'margin': 0.5, 'reduction': 'none'}, positional=3)
    loss_case('p 3, eps 0.01, sum', 'tripletMarginLoss',
              {'anchor': randn(3, 2), 'positive': randn(3, 2), 'negative': randn(3, 2)},
              {'p': 3, 'eps': 0.01, 'reduction': 'sum', 'margin': 2}, positional=3)
    loss_case('unbatched', 'tripletMarginLoss', {'anchor': randn(4), 'positive': randn(4), 'negative': randn(4)},
              {'margin': 3}, positional=3)


def ctc_case(name, shape, targets, input_lengths, target_lengths, options=None):
    tensors = {'logProbs': torch.log_softmax(randn(*shape), -1), 'targets': targets}
    args = [Ref('logProbs'), Ref('targets')]
    for key, lengths in (('inputLengths', input_lengths), ('targetLengths', target_lengths)):
        if isinstance(lengths, torch.Tensor):
            tensors[key] = lengths
            args.append(Ref(key))
        else:
            args.append(lengths)
    if options is not None:
        args.append(options)
    case('loss', f'ctcLoss {name}', 'ctcLoss', tensors, args)


def sequence_cases():
    ctc_case('padded targets, length arrays', [6, 2, 4], torch.tensor([[1, 2, 2], [3, 1, 0]]), [6, 5], [3, 2])
    ctc_case('concatenated targets, length tensors, none', [5, 3, 4], torch.tensor([1, 2, 3, 3, 2, 1]),
             torch.tensor([5, 4, 5]), torch.tensor([2, 3, 1]), {'reduction': 'none'})
    ctc_case('blank last, int32 targets, sum', [6, 2, 5], torch.tensor([[0, 1, 3], [2, 2, 0]], dtype=torch.int32),
             [6, 6], [3, 2], {'blank': 4, 'reduction': 'sum'})
    ctc_case('zeroInfinity, none', [4, 2, 3], torch.tensor([[1, 1, 1, 2], [2, 1, 0, 0]]), [4, 4], [4, 2],
             {'zeroInfinity': True, 'reduction': 'none'})
    ctc_case('unbatched', [5, 4], torch.tensor([1, 3]), [5], [2])


def main():
    recurrent_cases()
    cell_cases()
    attention_cases()
    regression_cases()
    classification_cases()
    ranking_cases()
    sequence_cases()
    fixture = {
        'meta': {'torch': torch.__version__, 'seed': SEED,
                 'regenerate': 'pnpm --filter @flodl/autograd run goldens'},
        'cases': cases,
    }
    with open(OUTPUT, 'w') as file:
        file.write('{"meta": ' + json.dumps(fixture['meta']) + ',\n"cases": [\n')
        file.write(',\n'.join(json.dumps(entry, separators=(',', ':')) for entry in cases))
        file.write('\n]}\n')
    print(f'wrote {len(cases)} cases to {os.path.relpath(OUTPUT)} ({os.path.getsize(OUTPUT) // 1024} KiB)')


if __name__ == '__main__':
    main()
